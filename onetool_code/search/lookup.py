"""The definitions of the names a query spells, found by name as grep finds ``def NAME``: the floor under the
hybrid ranking in a big repository, where a definition's words are drowned by thousands of uses and tests.

ChunkHound names a definition's chunk after it, and the pieces of one it cut after it too
(``bulk_create_part1_part2``), so the lookup is by symbol, and by the lines of code that define a name
(``rows.ChunkRows.defining``), because ChunkHound puts a short method into its neighbour's chunk. A qualified name
(``QuerySet.bulk_create``, ``timezone.now``, ``commands/migrate.py Command.handle``) then picks among the
definitions of ``name``: a qualifier is met by a definition around it (its class, found from the file's own
syntax, because ChunkHound's class chunks cover only parts of a long class) or by its file's path (a module or
folder). The definitions that meet the most qualifiers come first and are the ones ``ranking`` boosts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from onetool_code.hits import Hit
from onetool_code.index import Reader
from onetool_code.names import bare, defining_line, names_in, run_together, spellings, written
from onetool_code.project.definitions import enclosing
from onetool_code.project.source import SourceFiles
from onetool_code.schema import Filters
from onetool_code.search.file_roles import is_test
from onetool_code.search.ranking import DECLARING_TYPES, DEFINING_TYPES

# Every definition of a common name (``get``, ``__init__``) is looked at before the qualifiers pick: a few
# thousand in Django. The list handed to the ranking is cut to the depth of the others.
NAMED_DEPTH = 5_000
# A name two words of a question spell together is declared at a file's top level, or as a member of a class (at
# most this many columns in, and not a variable): deeper, it is a function's own (a local variable, a nested
# function, an example in a docstring), which the words meet by chance.
MEMBER_INDENT = 4
_VARIABLE = re.compile(r"(?:let|const|var|val|mut)\b|\w+\s*:?=[^=]")


@dataclass(frozen=True)
class NameMatches:
    """The definitions found, best first, and the keys of those that meet the query's qualifiers best."""

    hits: list[Hit]
    qualified: frozenset[tuple[str, int, int]] = frozenset()


def find(reader: Reader, sources: SourceFiles, query: str, filters: Filters, depth: int) -> NameMatches:
    """The chunks that define the names the query writes as code (``names.names_in``), or, when it writes none,
    a name two of its words spell together, where code is declared ("JSON object": ``class JsonObject``;
    ``names.run_together``, ``_declared``), each marked with the name it defines (``Hit.defines``): the ones
    meeting the query's qualifiers first, then those defining it in the query's own case (``Serialize`` the trait
    before ``serialize`` the method), then declarations of a type before other definitions, then source before
    tests, then in path order; at most ``depth``."""
    names, qualifiers = names_in(query, strict=True)
    wanted = names or run_together(query)
    if not wanted:
        return NameMatches([])
    spelled = spellings(query)
    # A variable named so is mostly a local one (ChunkHound chunks them inside function bodies): not the floor.
    found = [
        replace(hit, defines=_defined(hit, wanted))
        for hit in reader.defining(sorted(wanted), filters, NAMED_DEPTH)
        if hit.chunk_type in DEFINING_TYPES
    ]
    if not names:
        found = [hit for hit in found if _declared(hit)]

    def kind(hit: Hit) -> tuple[bool, bool, bool]:
        written = _written_as(hit)
        return spelled.get(written.lower(), written) != written, hit.chunk_type not in DECLARING_TYPES, _is_test(hit)

    if not qualifiers:
        return NameMatches(_tiered(found, kind)[:depth])
    # Only a file that defines something named as a qualifier (a class, usually) is parsed for its classes.
    holders = {hit.file_path for hit in reader.defining(sorted(qualifiers), Filters(), NAMED_DEPTH)}
    met = {hit.key: _met(hit, qualifiers, sources if hit.file_path in holders else None) for hit in found}
    ranked = _tiered(found, lambda hit: (-met[hit.key][0], -met[hit.key][1], *kind(hit)))
    best = max(met.values(), default=(0, 0))
    if best[0] < len(qualifiers):
        return NameMatches(ranked[:depth])
    return NameMatches(ranked[:depth], frozenset(key for key, value in met.items() if value == best))


def _declared(hit: Hit) -> bool:
    """Whether the chunk declares the name two words of the query spell together (``run_together``) where code
    outside the tests is declared: not ``let stringSchema = ...`` in a function, nor a test's ``const httpServer``,
    nor a nested function, nor ``async def websocket_endpoint`` in a docstring's example."""
    if _is_test(hit):
        return False
    if bare(hit.symbol).lower() == hit.defines:
        return True
    found = defining_line(hit.defines).search(hit.code)
    if found is None:
        return False
    before = hit.code[: found.start()]
    if (before.count('"""') + before.count("'''")) % 2:  # inside a docstring
        return False
    line = hit.code[before.rfind("\n") + 1 :].split("\n", 1)[0].expandtabs(4)
    code = line.lstrip()
    indent = len(line) - len(code)
    return indent == 0 or (indent <= MEMBER_INDENT and _VARIABLE.match(code) is None)


def _tiered(found: list[Hit], key: Callable[[Hit], tuple[Any, ...]]) -> list[Hit]:
    """``found`` in the order of ``key``, each scored by its tier (1.0 for the first, less for each later one):
    definitions that ``key`` cannot tell apart share a score, so that the fusion ranks them alike and the words
    and the meaning decide among them, not their paths' order."""
    keys = [key(hit) for hit in found]  # once each: a key reads the chunk's code
    order = sorted(range(len(found)), key=keys.__getitem__)
    tiers = {k: i for i, k in enumerate(dict.fromkeys(keys[i] for i in order))}
    return [replace(found[i], score=1.0 / (1 + tiers[keys[i]])) for i in order]


def _defined(hit: Hit, names: frozenset[str]) -> str:
    """Which of ``names`` the chunk defines: its symbol's, else the first one a line of its code defines."""
    own = bare(hit.symbol).lower()
    if own in names:
        return own
    if len(names) == 1:
        return next(iter(names))
    return next((n for n in sorted(names) if defining_line(n).search(hit.code)), own)


def _written_as(hit: Hit) -> str:
    """The name the chunk defines (``Hit.defines``) as its code writes it: its symbol's, else its defining line's."""
    own = bare(hit.symbol)
    if own.lower() == hit.defines:
        return own
    found = defining_line(hit.defines).search(hit.code)
    spelled = written(frozenset({hit.defines})).search(found.group()) if found else None
    return spelled.group() if spelled else hit.defines


def _met(hit: Hit, qualifiers: frozenset[str], sources: SourceFiles | None) -> tuple[int, int]:
    """How many qualifiers the hit's definition meets in all, and how many of them by a definition around it."""
    path = PurePosixPath(hit.file_path.lower())
    in_path = {path.name.split(".")[0], *path.parent.parts}
    # An Elixir module is named whole (``MyApp.Router``): each part is a qualifier met, by the definitions inside it
    # and by the module itself (``Date.Range`` defines ``Range`` in ``Date``, as much as ``Date.range/2`` does).
    around = set() if sources is None else {q.lower() for p in _parents(hit, sources) for q in p.split(".")}
    *own, name = bare(hit.symbol).lower().split(".")
    if name == hit.defines:
        around.update(own)
    return len(qualifiers & (in_path | around)), len(qualifiers & around)


def _parents(hit: Hit, sources: SourceFiles) -> tuple[str, ...]:
    """The names of the definitions around the hit's definition, from the file on disk."""
    definition = enclosing(sources.outline(hit.file_path, hit.language), hit.defines, hit.start_line, hit.end_line)
    return () if definition is None else definition.parents


def _is_test(hit: Hit) -> bool:
    return is_test(hit.file_path)
