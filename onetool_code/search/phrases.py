"""The query's own words in a row, as a chunk writes them: a pasted error message finds the code that raises it
("... but settings are not configured. You must either define the environment variable ..."), a call written
out finds its signature (``render_to_string template_name context request``).

BM25 and the meaning see a chunk's words as a bag; five words in the query's order rarely meet by chance, and
where they do, the text was copied from the code or the code was written from it. Every word counts, stopwords
too ("is not a valid view function or pattern name"), and anything that is not a letter or a digit separates
words, so that a setting written in capitals (``DATA_UPLOAD_MAX_NUMBER_FIELDS``) and a message the code wraps
over two string literals read as the query writes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RUN = 5  # words in a row
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Runs:
    """Each ``RUN`` words in a row of a query, lowercased, and the words they are made of."""

    runs: frozenset[tuple[str, ...]] = frozenset()
    words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, query: str) -> Runs:
        """No runs for a query shorter than ``RUN`` words."""
        words = _WORD.findall(query.lower())
        runs = frozenset(tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1))
        return cls(runs, frozenset(word for run in runs for word in run))

    def share_held(self, code: str) -> float:
        """The share of the runs that the chunk's code holds, 0.0 to 1.0. Most chunks of a search's candidates
        lack a word of every run, which a substring test shows for a fraction of splitting the code into words."""
        if not self.runs:
            return 0.0
        text = code.lower()
        present = {word for word in self.words if word in text}
        if not any(present.issuperset(run) for run in self.runs):
            return 0.0
        words = _WORD.findall(text)
        held = {tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1)} & self.runs
        return len(held) / len(self.runs)


NO_RUNS = Runs()
