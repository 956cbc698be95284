"""Search: from a request and a project's settings to ranked hits, best first (no shaping, no text yet).

The map, in the order a search meets it:
- ``engine``: one search, start to ranked hits: the index's view, the query vectors, the rankings, the page.
- ``query_vectors``: the queries' vectors (one embeddings request) and the index's vector set to compare them with.
- ``overlay_vectors``: the vectors of the chunks laid over the index from the checkout (kept per machine).
- ``embeddings``: the embeddings request to the provider the index was built with; ``transport`` its HTTP.
- ``retrieval``: each query's ranked lists as its mode calls for; ``lookup`` the definitions a query names.
- ``ranking``: pure functions over ranked hits (hybrid fusion, priors, pages); ``reranking`` the reranker.
- ``wants``: what a query and its filters ask for, read once for the hybrid ranking.
- ``related``: the tool ``related``, code like a place, by the stored vector there.
- ``usages``: the tool ``usages``, the lines that use a name.
"""

from onetool_code.search.engine import Ranked, names_first
from onetool_code.search.engine import run as rank
from onetool_code.search.query_vectors import Shared
from onetool_code.search.related import indexed_path
from onetool_code.search.related import run as rank_like
from onetool_code.search.usages import find as find_uses

__all__ = ["Ranked", "Shared", "find_uses", "indexed_path", "names_first", "rank", "rank_like"]
