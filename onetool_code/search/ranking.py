"""Pure functions over ranked hits: the hybrid ranking, reciprocal-rank fusion for batches, pages, de-duplication.

Raw scores of different rankings or queries are not comparable (cosine against BM25; one query may sit closer
to everything), so lists are fused by rank. The hybrid ranking then applies structural priors, because what an
agent wants first is the code that defines what it asked about, not a test, a doc page or a one-line usage.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from types import MappingProxyType

from onetool_code.hits import Hit
from onetool_code.names import COMMENT_STARTS, bare, defining_line, top_level, word_tokens, written
from onetool_code.schema import Filters
from onetool_code.search import file_roles
from onetool_code.search.wants import DATA_LANGUAGES, Wants

RRF_K = 60

# -- The hybrid ranking: each signal earned on bench/semble.py (seven languages) and checked on bench/relevance.py
# (small packages with real vectors, and Django); bench/ablation.py turns each off in turn (see bench/README.md).

HYBRID_K = 60  # reciprocal-rank constant of the fusion (the classic value): a list's first hundred ranks stay close,
# so the priors and the file's evidence decide among them rather than BM25's small differences
SEMANTIC_WEIGHT = 1.0  # times the vectors' agreement with the words (``_agreement``):
VECTORS_KEPT = 0.5  # ... this share of the weight always, the rest by the share of the vector list's first
AGREEMENT_FILES = 10  # ... files that the words' first 30 hits (three times as many) or the named definitions also
# found. Vectors that rank the files the words point to rank among the answers; files no word or name points to
# say the model is off the question (a model of code's static vectors on the 14: 0.852 -> 0.859; e5 on three of
# them 0.879 -> 0.878; keeping none of the weight costs the small packages' e5 answers: R@1 82% -> 78%)
LEXICAL_WEIGHT = 1.0
DEFINITIONS_WEIGHT = 0.6  # the list of the named definitions (``lookup``), fused with the other two: below them,
# since its ties share a rank and a name's mention in prose fills it as well (1.0: semble dev split -0.001, fmtlib)
QUALIFIED_DEFINITIONS_WEIGHT = 1.0  # ... as much as the others when the query qualifies the name (``Template.render``)
LEXICAL_LEAD = 0.2  # when words alone answer a sentence, this part of a hit's value in their list is its BM25
# score as a share of the first's, not its rank: reciprocal ranks put the operator whose doc comment says the whole
# question (BM25 11.5) level with the next file's function (8.3). Questions asked on fresh code take more than the
# semble split (0.1 / 0.2 / 0.3: the split 0.8731 / 0.8719 / 0.8690, the seven blind sets 0.7989 / 0.8044 / 0.8071,
# eight short-form blind sets 0.8222 / 0.8298 / 0.8260); with a semantic list beside it, three of the small
# packages' answers went down a rank, so then, as for a name's hits, the ranks alone count.
NOT_DEFINING = 0.8  # a chunk that defines nothing (a variable, an import, a comment, a block)
SHORT = 0.7  # a chunk of one or two lines
TESTS = 0.5  # a test file; or, when the query or the filters ask for tests, any other file
DOCS = 0.35  # documentation, examples, changelogs; or, when they are asked for, anything else (0.5 put chi's
# README second for ``Router``, above the file that defines it)
NOT_CODE = 0.5  # configuration and data (YAML, JSON, TOML, a Makefile), unless asked for
NAMED = 3.0  # the chunk defines a name the query spells out ...
QUALIFIED = 3.0  # ... inside the class, module or folder the query names it by (``QuerySet.bulk_create``)
OTHER_CASE = 0.5  # ... in another case than the query writes it (``fn serialize`` for ``Serialize``)
IN_PROSE = 0.5  # ... a name that is one word of a sentence ("toString builder for ..."): it may be incidental (the
# named definitions' list weighs as much less)
SPELLED_OUT = NAMED * IN_PROSE  # ... or a name whose parts a question says, all or all but one, in any order
# (``constant_time_compare`` for "how to compare two strings in constant time")
SPELLED_PARTS = 3  # ... three of them at least: a sentence spells two by chance (``NumberRange``; split -0.005)
DECLARATION = 1.5  # ... as a type, trait, interface or macro: declared there, used everywhere else
EXPORTED = 3.0  # the chunk re-exports a name the query spells out (``pub use``, ``export { X } from``), defining none
LEGACY = 0.35  # a legacy copy (``deprecated/``, ``_compat/``, ``v3/`` beside ``v4/``), unless the query names it: as
# documentation (0.7 left zod's ``v3/ZodError.ts`` first for ``ZodError``; 0.35: the semble split +0.002, no query lower)
FILE_NAMED = 1.5  # the file's name is a name the query spells out
PHRASE = 2.0  # the chunk holds the query's words in a row: times 1 + this times the share of its runs (``phrases``;
# 1 to 5 rank Django's pasted messages alike, 10 costs the semble split)
# What is known of a file as a whole, added to its best hit as a share of the best score of all:
PATH_WORDS = 1.0  # ... times the share of the query's words that name the file or its folder
COHERENT_FILE = 0.2  # ... times the sum of the file's hits' scores over the highest such sum
FILE_WORDS = 0.1  # ... times the file's BM25 score as one document over the best of the files hit
FILE_FOCUS = 0.25  # ... times the share of the words of the file's own name the query says (``file_roles``)
SAME_FILE = 0.7  # a file's fourth hit and each one after it, again: ten results are ten places, not one file
SAME_FILE_FREE = 3  # hits of a file before that: a definition, its doc comment, a neighbour

DEFINING_TYPES = frozenset(
    {
        "function", "method", "class", "interface", "struct", "enum", "namespace", "constructor", "property",
        "type_alias", "trait", "object", "companion_object", "data_class", "extension_function", "macro", "type",
        "program", "function_block", "action", "closure", "field",
    }
)  # fmt: skip
# The kinds that declare a type (or a macro): the place a name is declared, where its uses are everywhere else.
DECLARING_TYPES = frozenset(
    {"class", "interface", "struct", "enum", "trait", "type_alias", "type", "object", "data_class", "macro"}
)


def hybrid(
    semantic: Sequence[Hit],
    lexical: Sequence[Hit],
    query: str,
    filters: Filters,
    definitions: Sequence[Hit] = (),
    qualified: frozenset[tuple[str, int, int]] = frozenset(),
    depth: int | None = None,
    project: frozenset[str] = frozenset(),
    files: Mapping[str, float] = MappingProxyType({}),
) -> list[Hit]:
    """One query's semantic, lexical and named-definition lists fused by weighted reciprocal rank (the semantic
    list's weight by its agreement with the others: ``_agreement``), times the structural priors, plus what is
    known of each file; ``qualified``: the keys of the definitions that meet the query's qualifiers (``lookup``);
    the first ``depth`` hits of the fused list (all by default); ``project``: the words the query may call the
    project by (``file_roles.project_words``), which name no file; ``files``: each file's BM25 score for the query
    as one document (``index.Reader.file_words``).

    The lexical list is first ordered by its scores times the kind of file each hit is in (``_kind``): BM25
    favours documentation's plain words, and a Markdown page can otherwise take the first ten places; when words
    alone answer a sentence, part of each hit's value is its score over the first's (``LEXICAL_LEAD``). A hit's
    score is the fused value scaled so that a hit first in every list given, with no prior against it, scores
    1.0 (an empty list, as when hybrid falls back to words alone, does not count), times its prior, plus its
    file's evidence; a file's many hits then yield to other files (``_spread``). Ties fall back to path, start line
    and chunk id, so the order is deterministic. A query that only names things fuses no semantic list, unless the
    other lists are empty (``names_only``).
    """
    fused: dict[tuple[str, int, int], float] = {}
    best: dict[tuple[str, int, int], Hit] = {}
    wants = Wants.of(query, filters, project)
    if wants.qualifiers and not qualified:
        # No definition meets the qualifiers: the name may be another project's (``std::ostream`` in fmt, whose
        # ``ostream`` is ``fmt::ostream``), in a sentence one word of it.
        wants.incidental = wants.prose and bool(wants.names)
    if wants.names_only and (lexical or definitions):
        semantic = ()
    lexical = sorted(lexical, key=lambda h: -h.score * _kind(h, wants))
    # The definitions first: a hit found in several lists is kept as found there, marked with what it defines.
    named = (QUALIFIED_DEFINITIONS_WEIGHT if wants.qualifiers else DEFINITIONS_WEIGHT) * (
        IN_PROSE if wants.incidental else 1.0
    )
    vectors = SEMANTIC_WEIGHT * (VECTORS_KEPT + (1 - VECTORS_KEPT) * _agreement(semantic, lexical, definitions))
    lists = ((named, definitions), (vectors, semantic), (LEXICAL_WEIGHT, lexical))
    best_words = lexical[0].score * _kind(lexical[0], wants) if lexical and wants.prose and not semantic else 0.0
    for weight, hits in lists:
        for rank, hit in _ranks(dedupe(hits), shared=hits is definitions):
            value = 1 / (HYBRID_K + rank)
            if hits is lexical and best_words > 0:
                share = hit.score * _kind(hit, wants) / best_words
                value += LEXICAL_LEAD * (share / (HYBRID_K + 1) - value)
            fused[hit.key] = fused.get(hit.key, 0.0) + weight * value
            best.setdefault(hit.key, hit)
    weights = sum(weight for weight, hits in lists if hits)
    scale = (HYBRID_K + 1) / (weights or 1.0)
    scored = {
        key: value * scale * prior(best[key], wants) * (QUALIFIED if key in qualified and not wants.tests else 1.0)
        for key, value in fused.items()
    }
    met = frozenset(key[0] for key in qualified) if wants.names_only and qualified else None
    _file_evidence(scored, wants, {key[0]: _kind(hit, wants) for key, hit in best.items()}, met, files)
    old = file_roles.legacy({key[0] for key in scored}, wants.words)
    for key in scored:
        if key[0] in old:
            scored[key] *= LEGACY
    order = sorted(scored, key=lambda key: (-scored[key], key[0], key[1], best[key].chunk_id))
    decayed = _spread([(key[0], scored[key]) for key in order])[:depth]
    return [replace(best[order[position]], score=score) for score, position in decayed]


def names_only(query: str) -> bool:
    """The query only names things (``IntoResponse``, ``Template.render``, ``quantize``): it is answered where they
    are defined. The vectors of a name say what its words mean, and rank its mentions among its definition's
    neighbours; they answer only when neither the words nor the definitions found anything (``hybrid``), so a
    search asks for them only then (``engine``)."""
    return Wants.of(query, Filters()).names_only


def _agreement(semantic: Sequence[Hit], lexical: Sequence[Hit], definitions: Sequence[Hit]) -> float:
    """The share of the vector list's first ``AGREEMENT_FILES`` files that the words' first hits (three times as
    many) or the named definitions also found; 1 when there is nothing to agree with (the vectors alone)."""
    said = list(dict.fromkeys(hit.file_path for hit in semantic))[:AGREEMENT_FILES]
    if not said or not (lexical or definitions):
        return 1.0
    found = {hit.file_path for hit in lexical[: 3 * AGREEMENT_FILES]} | {hit.file_path for hit in definitions}
    return sum(path in found for path in said) / len(said)


def _ranks(hits: Sequence[Hit], *, shared: bool) -> list[tuple[int, Hit]]:
    """Each hit with its 1-based rank; with ``shared``, hits of equal score share the rank of the first of them
    (the named definitions: ``lookup`` scores each by the tier it cannot split further)."""
    if not shared:
        return list(enumerate(hits, start=1))
    ranked, rank, previous = [], 0, None
    for position, hit in enumerate(hits, start=1):
        if hit.score != previous:
            rank, previous = position, hit.score
        ranked.append((rank, hit))
    return ranked


def _file_evidence(
    scored: dict[tuple[str, int, int], float],
    wants: Wants,
    kinds: dict[str, float],
    met: frozenset[str] | None,
    files: Mapping[str, float],
) -> None:
    """What is known of a file as a whole lifts its best hit, by a share of the best score of all (added, not
    multiplied: a file named for the question can rise from far down), times the kind of file it is against what
    is asked for (``kinds``): ``JsonReaderTest.java`` is named by "JSON reader" as much as ``JsonReader.java``, and
    is still a test.

    - the share of the query's words that name the file or its folder, times ``PATH_WORDS``
      (``binding/default_validator.go`` for "how validators are plugged in for struct binding");
    - many of its chunks matching: the sum of its hits' scores over the highest such sum, times
      ``COHERENT_FILE`` (``format.h`` for "how fmt::format formats strings"). ChunkHound nests chunks (a
      block, and a block inside it) and overlaps them (an Elixir module's parts of about 50 lines cut across its
      functions): a hit counts for the share of its lines that no better hit of its file holds, so one inside a
      better one is that place again, not counted (against counting an overlapping hit whole: the semble split
      +0.001, the blind questions +0.007).
    - the words of the whole file: its BM25 score as one document (``files``) over the best of the files hit,
      times ``FILE_WORDS``. Where the sum above counts the hits the lists kept (ten a file at most), this is the
      file's every line with the files' idf, its length weighed: Mercurial's ``simplemerge.py``, the module of
      "three-way text merge producing conflict markers", against ``merge.py``, whose name and one function
      (``collectconflicts``) say "merge" and "conflict".

    Only the second for a query of one name written as code (``Router``: its definition's file, not
    ``route_headers.go``, whose name starts so), and outside ``met``, the files where a definition meets a query of
    names' qualifiers (``Router::route``: not ``path_router.rs``, which the qualifier only names).
    """
    if not scored:
        return
    top = max(scored.values())
    sums: dict[str, float] = {}
    best: dict[str, tuple[str, int, int]] = {}
    counted: dict[str, list[tuple[int, int]]] = {}
    for key, value in sorted(scored.items(), key=lambda item: -item[1]):
        spans = counted.setdefault(key[0], [])
        own = _lines_not_in(key[1], key[2], spans)
        if own <= 0:
            continue
        spans.append((key[1], key[2]))
        sums[key[0]] = sums.get(key[0], 0.0) + value * own / (key[2] - key[1] + 1)
        best.setdefault(key[0], key)
    most = max(sums.values())
    if top <= 0 or most <= 0:
        return
    most_words = max(files.get(path, 0.0) * kinds[path] for path in best) or 1.0
    for path, key in best.items():
        if wants.code_name or (met is not None and path not in met):
            scored[key] += top * COHERENT_FILE * sums[path] / most * kinds[path]
            continue
        named = (
            file_roles.path_words(path, wants.keywords, wants.initials) / len(wants.keywords) if wants.keywords else 0.0
        )
        focus = file_roles.name_focus(path, wants.stems)
        evidence = (
            PATH_WORDS * named
            + COHERENT_FILE * sums[path] / most
            + FILE_WORDS * files.get(path, 0.0) / most_words
            + FILE_FOCUS * focus
        )
        scored[key] += top * evidence * kinds[path]


def _lines_not_in(start: int, end: int, spans: Sequence[tuple[int, int]]) -> int:
    """How many of the lines ``start``..``end`` none of ``spans`` (inclusive line ranges) holds."""
    held, cursor = 0, start
    for first, last in sorted(spans):
        low, high = max(first, cursor), min(last, end)
        if low <= high:
            held += high - low + 1
            cursor = high + 1
    return end - start + 1 - held


def _spread(ranked: Sequence[tuple[str, float]]) -> list[tuple[float, int]]:
    """Each hit of a file (its path and score, best first) past its first ``SAME_FILE_FREE`` scored ``SAME_FILE``
    times more per hit of that file above it, and the list sorted again, as (score, position in ``ranked``): a
    file's many hits (ChunkHound stores a class, its methods and their comments apart) must not crowd out the
    other files an answer should name."""
    seen: dict[str, int] = {}
    decayed = []
    for position, (path, score) in enumerate(ranked):
        count = seen.get(path, 0)
        seen[path] = count + 1
        decayed.append((score * SAME_FILE ** max(0, count + 1 - SAME_FILE_FREE), position))
    decayed.sort(key=lambda item: (-item[0], item[1]))
    return decayed


def _defined_as(hit: Hit, wants: Wants) -> str | None:
    """The name the query spells out that the chunk defines, as the chunk writes it (case kept): by its symbol,
    or, since ChunkHound names many definitions synthetically (``definition_line_72``), by one of its first
    code lines; the name ``lookup`` found it defining otherwise."""
    own = bare(hit.symbol)
    if own.lower() in wants.names:
        return own
    assert wants.definition is not None
    head = [line for line in hit.code.split("\n")[:6] if line.strip() and not line.lstrip().startswith(COMMENT_STARTS)]
    for line in head[:3]:
        found = wants.definition.search(line)
        spelled = _written(found.group(), wants.names) if found else None
        if spelled:
            return spelled
    if hit.defines not in wants.names:  # none, or a name only the query's words run together spell
        return None
    # Found defining it further down its chunk (``lookup``): as it is written there, else as the query writes it.
    found = defining_line(hit.defines).search(hit.code)
    spelled = _written(found.group(), frozenset({hit.defines})) if found else None
    return spelled or wants.spelled.get(hit.defines, hit.defines)


def _written(text: str, names: frozenset[str]) -> str | None:
    """The first of ``names`` (lowercase) in ``text``, as ``text`` writes it."""
    found = written(names).search(text)
    return found.group() if found else None


def _kind(hit: Hit, wants: Wants) -> float:
    """What kind of file the hit is in, against what is asked for: tests, documentation, data."""
    factor = 1.0
    path = hit.file_path
    if wants.tests != file_roles.is_test(path):
        factor *= TESTS
    if wants.docs != file_roles.is_doc(path, hit.language):
        factor *= DOCS
    if hit.language in DATA_LANGUAGES and not wants.data:
        factor *= NOT_CODE
    return factor


def prior(hit: Hit, wants: Wants) -> float:
    """The structural prior of one hit: a product of the factors above, 1.0 for defining source code."""
    factor = 1.0
    # ChunkHound's top-level chunks (imports, ``__all__``, a module's header) are typed ``namespace`` (``names``).
    if hit.chunk_type not in DEFINING_TYPES or top_level(hit.symbol):
        factor *= NOT_DEFINING
    path = hit.file_path
    factor *= _kind(hit, wants)
    if hit.end_line - hit.start_line < 2:
        factor *= SHORT
    # "tests for bulk_create" wants the tests that use it: its definition outside them is not boosted.
    defined = _defined_as(hit, wants) if wants.names else None
    if defined is not None and (not wants.tests or file_roles.is_test(path)):
        factor *= NAMED
        if wants.spelled.get(defined.lower(), defined) != defined:
            factor *= OTHER_CASE
        if wants.incidental:
            factor *= IN_PROSE
        if hit.chunk_type in DECLARING_TYPES:
            factor *= DECLARATION
    elif wants.names and file_roles.re_exports(hit.code, path, wants.names):
        factor *= EXPORTED
    if defined is None and wants.prose and _spelled_out(hit, wants.stems):
        factor *= SPELLED_OUT
    stem = _stem(path)
    if stem and (stem in {n.replace("_", "") for n in wants.names | wants.qualifiers} or stem in wants.joined):
        factor *= FILE_NAMED
    return factor * (1.0 + PHRASE * wants.runs.share_held(hit.code))


def _spelled_out(hit: Hit, stems: frozenset[str]) -> bool:
    """The chunk defines a name ``SPELLED_PARTS`` or more of whose parts are the question's words (``stems``), and
    at most one other (``get_random_secret_key`` for "how to generate a new random SECRET_KEY")."""
    if hit.chunk_type not in DEFINING_TYPES:
        return False
    parts = word_tokens(bare(hit.symbol).rpartition(".")[2])[1:]  # its parts by their stems, past the whole
    said = sum(part in stems for part in parts)
    return said >= SPELLED_PARTS and said >= len(parts) - 1


@functools.lru_cache(maxsize=8192)
def _stem(path: str) -> str:
    """The file's name before its first dot, without separators, lowercased (``default_validator.go``:
    ``defaultvalidator``)."""
    return PurePosixPath(path).name.lstrip(".").split(".")[0].replace("-", "").replace("_", "").lower()


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


def unscored(hits: Sequence[Hit]) -> str | None:
    """What to say of hits whose stored vectors have no cosine (all zeros, or NaN: a broken model wrote them):
    ChunkHound's SQL ranks them first, and ``semantic`` keeps its order, so the answer says why they lead."""
    count = sum(1 for hit in hits if not math.isfinite(hit.score))
    if not count:
        return None
    which = (
        "1 result has no score: its vector in the index is"
        if count == 1
        else f"{count} results have no score: their vectors in the index are"
    )
    return f"{which} zeros or NaN, which ChunkHound ranks first (re-index with a working embeddings model)"


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
