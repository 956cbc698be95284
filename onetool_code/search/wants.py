"""What a query and its filters ask for, read once for the hybrid ranking (``ranking``): tests, documentation or
data, the names it spells out and their qualifiers, its words, whether it is a sentence or a name written as code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from onetool_code.names import STOPWORDS, definition_of, identifiers, names_in, spellings, stem
from onetool_code.schema import Filters
from onetool_code.search import file_roles, phrases
from onetool_code.search.abbreviations import initials

# What is not code: ChunkHound's languages of data and configuration, and files it knows no language of.
DATA_LANGUAGES = frozenset({"json", "yaml", "toml", "makefile", "unknown", "git_diff"})
_DATA_WORDS = frozenset(
    {"config", "configuration", "yaml", "yml", "toml", "makefile", "dockerfile", "manifest", "ini", "json"}
)
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock", "mocks"})
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "example", "examples", "changelog", "guide"})
_PLURALS = frozenset({"tests", "specs", "fixtures", "mocks", "docs", "examples"})


def _asks_for(words: Sequence[str], kind: frozenset[str]) -> bool:
    """The query asks for that kind of file (``kind``: its words): "tests for bulk_create", "which test checks
    ...", "the docs", "examples of middleware", "... in tests". Not when the word only says what a thing is for: the
    test client, the WSGI spec, documentation generation (werkzeug's ``test.py``, its ``lint.py``, cobra's ``doc/``
    package are code). A plural, or a word that ends the query, comes before a stopword or after "which" or "what",
    is the thing sought; one followed by another word qualifies it. ``words``: the query's, lowercased, in order."""
    for at, word in enumerate(words):
        if word not in kind:
            continue
        after = words[at + 1] if at + 1 < len(words) else None
        if word in _PLURALS or after is None or after in STOPWORDS or (at > 0 and words[at - 1] in ("which", "what")):
            return True
    return False


class Wants:
    """What the query and the filters ask for: tests, docs, the names they spell out, and the qualifiers of
    dotted names (``Layer`` in ``Layer.prototype.match``: a file or class to look in, not the thing itself)."""

    def __init__(
        self,
        tests: bool,
        docs: bool,
        names: frozenset[str],
        qualifiers: frozenset[str],
        data: bool = False,
        keywords: frozenset[str] = frozenset(),
        spelled: dict[str, str] | None = None,
        prose: bool = False,
        query_words: Sequence[str] = (),
        runs: phrases.Runs = phrases.NO_RUNS,
        initials: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self.tests, self.docs, self.names, self.qualifiers = tests, docs, names, qualifiers
        self.data, self.keywords, self.spelled, self.prose = data, keywords, spelled or {}, prose
        self.runs, self.initials = runs, initials
        self.joined = _joined(query_words) if query_words else frozenset()
        self.stems = frozenset(stem(w) for w in keywords)
        self.words = frozenset(query_words)
        # The query is one name written as code (``Router``, ``basic_format_args``), not a word ("quantize").
        self.names_only = bool(names) and not prose
        self.code_name = self.names_only and all(re.search("[A-Z_]", self.spelled.get(n, n)) for n in names)
        # A name among other words and with no qualifier may be incidental ("toString builder for ...");
        # ``QuerySet.bulk_create`` in a sentence is not, nor a name only the sentence's words spell together
        # ("JSON object": ``JsonObject``, found by ``lookup``), which no word of it was written as by chance.
        self.incidental = prose and bool(names) and not qualifiers
        self.definition = definition_of(names) if names else None

    @classmethod
    def of(cls, query: str, filters: Filters, project: frozenset[str] = frozenset()) -> Wants:
        ordered = [w.lower() for w in re.findall(r"[A-Za-z]+", query)]
        words = set(ordered)
        needles = " ".join((*filters.include, *filters.languages))
        names, qualifiers = names_in(query)
        keywords = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", query)}
        named = names | qualifiers
        return cls(
            tests=_asks_for(ordered, _TEST_WORDS) or "test" in needles or "spec" in needles,
            docs=_asks_for(ordered, _DOC_WORDS) or "doc" in needles or "markdown" in needles or ".md" in needles,
            names=names,
            qualifiers=qualifiers,
            data=bool(words & _DATA_WORDS) or any(language in DATA_LANGUAGES for language in filters.languages),
            # Words of three letters or more, and versions ("v2": ``file_roles.name_words``).
            keywords=frozenset(
                w
                for w in keywords
                if (len(w) > 2 or file_roles.VERSION.match(w)) and w not in STOPWORDS and w not in project
            ),
            spelled=spellings(query),
            query_words=[w.lower() for w in re.findall(r"[A-Za-z0-9]+", query)],
            # A qualified identifier is a name and its qualifiers (``Paginator.page``, ``Router::route``, a path's
            # ``migrate.py``), never words of a sentence.
            prose=any(
                w.isidentifier() and w not in named and w not in STOPWORDS for w in map(str.lower, identifiers(query))
            ),
            runs=phrases.Runs.of(query),
            initials=initials(query),
        )


def _joined(words: Sequence[str]) -> frozenset[str]:
    """Two or three neighbouring words of the query run together: the file "toString builder" names is
    ``ToStringBuilder.java``."""
    return frozenset("".join(words[i : i + n]) for n in (2, 3) for i in range(len(words) - n + 1))
