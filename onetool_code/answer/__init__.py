"""The answer: from ranked hits to what an agent reads, in one formatter for every entry point.

- ``shaping``: hits placed in their files now, merged (``merging``), trimmed, named, matched; code included or not.
- ``matching``: where a query meets a hit's lines, and the match-aware preview.
- ``workspace``: several repositories' answers fused into one page.
- ``report``: what ``status`` says: the index's facts beside the settings a search would use.
- ``formatting``: the one formatter: results and errors as text, JSON or compact, within a byte budget; ``listings``
  the answers that list (status, usages) in the same formats and budget.
"""
