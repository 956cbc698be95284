"""Pure functions over ranked hits: the hybrid ranking, reciprocal-rank fusion for batches, pages, de-duplication.

Raw scores of different rankings or queries are not comparable (cosine against BM25; one query may sit closer
to everything), so lists are fused by rank. The hybrid ranking then applies structural priors, because what an
agent wants first is the code that defines what it asked about, not a test, a doc page or a one-line usage.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from onetool_code.hits import Hit
from onetool_code.schema import Filters

RRF_K = 60

# -- The hybrid ranking: weights chosen on bench/relevance.py (see bench/README.md for the measurements) --------

HYBRID_K = 10  # reciprocal-rank constant of the fusion: small, so a list's first hits count for more
SEMANTIC_WEIGHT = 1.0
LEXICAL_WEIGHT = 1.0
NOT_DEFINING = 0.8  # a chunk that defines nothing (a variable, an import, a comment, a block)
TESTS = 0.5  # a test file; or, when the query or the filters ask for tests, any other file
DOCS = 0.5  # documentation, examples, changelogs; or, when they are asked for, anything else
SHORT = 0.7  # a chunk of one or two lines
NAMED = 3.0  # the chunk's symbol is a name the query spells out
QUALIFIED = 3.0  # ... inside the class, module or folder the query names it by (``QuerySet.bulk_create``)
DEFINITIONS_WEIGHT = 1.0  # the list of the named definitions (``lookup``), fused with the other two
FILE_NAMED = 1.5  # the file's name is a name the query spells out

DEFINING_TYPES = frozenset(
    {
        "function", "method", "class", "interface", "struct", "enum", "namespace", "constructor", "property",
        "type_alias", "trait", "object", "companion_object", "data_class", "extension_function", "macro", "type",
        "program", "function_block", "action", "closure", "field",
    }
)  # fmt: skip
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|specs?|testing|fixtures?|mocks?)(/|$)|(^|/)test_[^/]*$|_test\.\w+$|"
    r"\.(test|spec)\.\w+$|(^|/)conftest\.py$"
)
_DOC_PATH = re.compile(
    r"(^|/)(docs?|documentation|examples?|samples?|demos?)(/|$)|(^|/)(changelog|changes|history|news|readme|"
    r"contributing|license)[^/]*$|\.(md|mdx|rst|txt|adoc)$",
    re.IGNORECASE,
)
_DOC_LANGUAGES = frozenset({"markdown", "text", "pdf"})
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock", "mocks"})
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "example", "examples", "changelog", "guide"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PART_SUFFIX = re.compile(r"(?:_part\d+)+$")
# A file path as an engineer writes one: lowercase parts with a slash, or a name with a source file's extension.
_PATH_LIKE = re.compile(
    r"\b[a-z0-9_.-]*[a-z][a-z0-9_.-]*(?:/[a-z0-9_.-]+)+/?|"
    r"\b[\w-]+\.(?:py|pyi|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift)\b"
)
_CAMEL = re.compile(r"[a-z][A-Z]")
_COMMENT = ("#", "//", "/*", "*", "@", '"' * 3, "'" * 3)  # comment, docstring and decorator lines


def hybrid(
    semantic: Sequence[Hit],
    lexical: Sequence[Hit],
    query: str,
    filters: Filters,
    definitions: Sequence[Hit] = (),
    qualified: frozenset[tuple[str, int, int]] = frozenset(),
) -> list[Hit]:
    """One query's semantic, lexical and named-definition lists fused by weighted reciprocal rank, times the
    structural priors; ``qualified``: the keys of the definitions that meet the query's qualifiers (``lookup``).

    A hit's score becomes the fused value scaled so that a hit first in every list given, with no prior against
    it, scores 1.0 (an empty list, as when hybrid falls back to words alone, does not count). Ties fall back to path, start line and chunk id, so the order is deterministic.
    """
    fused: dict[tuple[str, int, int], float] = {}
    best: dict[tuple[str, int, int], Hit] = {}
    # The definitions first: a hit found in several lists is kept as found there, marked with what it defines.
    lists = ((DEFINITIONS_WEIGHT, definitions), (SEMANTIC_WEIGHT, semantic), (LEXICAL_WEIGHT, lexical))
    for weight, hits in lists:
        for rank, hit in enumerate(dedupe(hits), start=1):
            fused[hit.key] = fused.get(hit.key, 0.0) + weight / (HYBRID_K + rank)
            best.setdefault(hit.key, hit)
    weights = sum(weight for weight, hits in lists if hits)
    scale = (HYBRID_K + 1) / (weights or 1.0)
    wants = _Wants.of(query, filters)
    scored = {
        key: value * scale * prior(best[key], wants) * (QUALIFIED if key in qualified and not wants.tests else 1.0)
        for key, value in fused.items()
    }
    order = sorted(scored, key=lambda key: (-scored[key], key[0], key[1], best[key].chunk_id))
    return [replace(best[key], score=scored[key]) for key in order]


class _Wants:
    """What the query and the filters ask for: tests, docs, the names they spell out, and the qualifiers of
    dotted names (``Layer`` in ``Layer.prototype.match``: a file or class to look in, not the thing itself)."""

    def __init__(self, tests: bool, docs: bool, names: frozenset[str], qualifiers: frozenset[str]) -> None:
        self.tests, self.docs, self.names, self.qualifiers = tests, docs, names, qualifiers
        self.definition = _definition_of(names) if names else None

    @classmethod
    def of(cls, query: str, filters: Filters) -> _Wants:
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", query)}
        needles = " ".join((*filters.include, *filters.languages))
        names, qualifiers = names_in(query)
        return cls(
            tests=bool(words & _TEST_WORDS) or "test" in needles or "spec" in needles,
            docs=bool(words & _DOC_WORDS) or "doc" in needles or "markdown" in needles or ".md" in needles,
            names=names,
            qualifiers=qualifiers,
        )


def names_in(query: str, strict: bool = False) -> tuple[frozenset[str], frozenset[str]]:
    """The names a query spells out and the qualifiers before them, lowercased.

    A name is an identifier only an engineer would write (``load_config``, ``parseOptions``, the last part of
    a dotted ``Segment.split_lines``, a capitalised word past the first unless ``strict``), or the whole query
    when it is one bare word. A plain word ("client") is not one, so "client timeout" boosts no symbol, nor is
    an acronym ("CSRF"). A file path's parts (``db/models/query.py``) are qualifiers.
    """
    names, qualifiers = set(), set()
    for path in _PATH_LIKE.findall(query):  # "commands/migrate.py Command.handle": a file to look in
        qualifiers.update(p.split(".")[0].lower() for p in path.split("/") if p.split(".")[0])
    query = _PATH_LIKE.sub(" ", query)
    found = [m.group() for m in _IDENTIFIER.finditer(query)]
    whole = len(found) == 1 and found[0] == query.strip()
    for position, identifier in enumerate(found):
        *before, last = identifier.split(".")
        written_as_code = "_" in last or _CAMEL.search(last) is not None
        capitalised = not strict and last[:1].isupper() and position > 0
        if whole or before or written_as_code or capitalised:
            names.add(last.lower())
            qualifiers.update(p.lower() for p in before if p.lower() != "prototype")
    return frozenset(names), frozenset(qualifiers)


def _definition_of(names: frozenset[str]) -> re.Pattern[str]:
    """A line that defines one of ``names``: ``def name``, ``function name``, ``class Name``, ``name(...) {``
    (a method), ``x.name = function`` or ``name: function`` (assigned), in any of our languages."""
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    return re.compile(
        rf"{_declared(alternatives)}|"
        rf"^\s*(?:{_MODIFIERS}\s+)*(?:{alternatives})\s*(?:<[^>]*>)?\([^)]*\)?\s*[:{{]|"
        rf"{_assigned(alternatives)}",
        re.IGNORECASE,
    )


def definition_lines(names: Collection[str]) -> str:
    """A pattern (Python's and RE2's syntax, case-insensitive, multi-line) for the lines of a chunk's code that
    define one of ``names``, as ``_definition_of`` but stricter about methods (their signature on one line ending
    in ``{``): in a whole chunk, a call at the start of a line must not count."""
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    return (
        rf"(?im){_declared(alternatives)}|"
        rf"^[ \t]*(?:{_MODIFIERS}[ \t]+)*(?:{alternatives})[ \t]*(?:<[^>\n]*>)?\([^)\n]*\)[ \t]*"
        rf"(?::[^{{\n]+)?\{{[ \t]*$|{_assigned(alternatives)}"
    )


_MODIFIERS = "(?:export|default|async|static|public|private|protected|override|get|set|pub)"


def _declared(alternatives: str) -> str:
    return (
        r"\b(?:def|function\*?|class|interface|type|struct|enum|trait|fn|func|const|let|var|module|record)\s+"
        rf"(?:\([^)]*\)\s*)?(?:{alternatives})\b"
    )


def _assigned(alternatives: str) -> str:
    return rf"^\s*[\w.]*\b(?:{alternatives})\s*(?:=|:)\s*(?:async\s+)?(?:function\b|\()"


def _defines(hit: Hit, wants: _Wants) -> bool:
    """The chunk defines a name the query spells out: found so (``lookup``), by its symbol, or, since ChunkHound
    names many definitions synthetically (``definition_line_72``), by one of its first code lines."""
    if hit.defines or _PART_SUFFIX.sub("", hit.symbol).lower() in wants.names:
        return True
    assert wants.definition is not None
    head = [line for line in hit.code.split("\n")[:6] if line.strip() and not line.lstrip().startswith(_COMMENT)]
    return any(wants.definition.search(line) for line in head[:3])


def is_test(path: str) -> bool:
    """A test file (or a fixture, a mock, a spec) by its path."""
    return bool(_TEST_PATH.search(path.lower()))


def prior(hit: Hit, wants: _Wants) -> float:
    """The structural prior of one hit: a product of the factors above, 1.0 for defining source code."""
    factor = 1.0
    # ChunkHound's ``file_structure`` chunks are a file's top level (imports, ``__all__``), typed ``namespace``.
    if hit.chunk_type not in DEFINING_TYPES or hit.symbol.startswith("file_structure"):
        factor *= NOT_DEFINING
    path = hit.file_path
    # What is asked for swaps places with the rest: "tests for save_record" wants the tests before the source.
    if wants.tests != is_test(path):
        factor *= TESTS
    if wants.docs != bool(hit.language in _DOC_LANGUAGES or _DOC_PATH.search(path)):
        factor *= DOCS
    if hit.end_line - hit.start_line < 2:
        factor *= SHORT
    # "tests for bulk_create" wants the tests that use it: its definition outside them is not boosted.
    if wants.names and _defines(hit, wants) and (not wants.tests or is_test(path)):
        factor *= NAMED
    stem = PurePosixPath(path).name.split(".")[0].replace("-", "").replace("_", "").lower()
    if stem and stem in {n.replace("_", "") for n in wants.names | wants.qualifiers}:
        factor *= FILE_NAMED
    return factor


def fuse(ranked_lists: Sequence[Sequence[Hit]], limit: int) -> list[Hit]:
    """Reciprocal-rank fusion (k=60) of one ranked list per query, capped at ``limit`` in total.

    A hit found by several queries (same path and line range) keeps its highest similarity and lists every
    query that found it (1-based). Ties in fused rank fall back to similarity, then path and start line.
    """
    fused: dict[tuple[str, int, int], float] = {}
    best: dict[tuple[str, int, int], Hit] = {}
    found_by: dict[tuple[str, int, int], set[int]] = {}
    for number, hits in enumerate(ranked_lists, start=1):
        for rank, hit in enumerate(dedupe(hits), start=1):
            fused[hit.key] = fused.get(hit.key, 0.0) + 1.0 / (RRF_K + rank)
            found_by.setdefault(hit.key, set()).add(number)
            if hit.key not in best or hit.score > best[hit.key].score:
                best[hit.key] = hit
    order = sorted(fused, key=lambda key: (-fused[key], -best[key].score, key[0], key[1]))
    return [
        replace(best[key], queries=tuple(sorted(found_by[key])), rank=rank) for rank, key in enumerate(order[:limit])
    ]


def page(hits: Sequence[Hit], start: int, end: int) -> list[Hit]:
    """Positions ``start``..``end - 1`` of a ranked list (from its top), less the duplicates of a hit ranked
    above them (on this page or an earlier one); each kept hit carries its position as ``rank``.

    Cutting first and de-duplicating after keeps pages disjoint and gapless: following ``next_offset = end``
    never shows a hit twice and never skips one.
    """
    seen: set[tuple[str, int, int]] = set()
    kept = []
    for position, hit in enumerate(hits[:end]):
        if hit.key in seen:
            continue
        seen.add(hit.key)
        if position >= start:
            kept.append(replace(hit, rank=position))
    return kept


def dedupe(hits: Sequence[Hit]) -> list[Hit]:
    """First occurrence of each path and line range wins (lists arrive best first)."""
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for hit in hits:
        if hit.key not in seen:
            seen.add(hit.key)
            unique.append(hit)
    return unique
