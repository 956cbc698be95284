"""``usages``: the lines that use a name in the index's files, grouped by file, its definitions left out. No
embeddings.

The index says which files are the project's (and their language); their lines are read from disk, as ``rg -w``
reads them, because ChunkHound's chunks do not hold every line: it leaves lines between chunks, and keeps no chunk
at all of some files (a quarter of Django's 4,036 files, its longest test modules among them). Line numbers are
then the file's own, as in every answer.

A qualified name narrows as ``search`` reads it (``names.names_in``): ``module.name`` (a lowercase qualifier)
counts the lines writing ``module.name`` and the bare ``name`` in files that mention ``module`` (its import), not
``other.name``; ``Class.method`` counts every use of ``method``, since which class an object has is beyond a text
index (``qs.bulk_create(...)``). A line that defines the name is a definition, never a use.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from onetool_code import index
from onetool_code.errors import BadInputError
from onetool_code.hits import KINDS, FileRow, FileUses, Hit, Usages
from onetool_code.names import defining_line
from onetool_code.project.source import SourceFiles, Unread
from onetool_code.schema import Filters
from onetool_code.search import lookup
from onetool_code.search.file_roles import is_doc, is_test
from onetool_code.settings import Settings

RESOLVED_DEPTH = 50  # definitions of the name looked at to name the meant ones first
# A letter of any script, ``_`` or ``$``, then word characters: Python, JavaScript, Go and Rust all take ``名前``
# and ``Ωmega`` as names (``[^\W\d]`` is ``\w`` without the digits).
_IDENTIFIER = re.compile(r"(?:[^\W\d]|\$)[\w$]*")


@dataclass(frozen=True)
class _Name:
    """The name as the caller wrote it: the identifier to find, and the module that qualifies it, if any."""

    identifier: str
    module: str | None

    @classmethod
    def of(cls, written: str) -> _Name:
        *qualifiers, last = written.replace("::", ".").split(".")
        if not _IDENTIFIER.fullmatch(last) or not all(re.fullmatch(r"[\w$]+", q) for q in qualifiers):
            raise BadInputError(
                f"name {written!r} is not an identifier: give one, bare or qualified (bulk_create, "
                "QuerySet.bulk_create, timezone.now)"
            )
        near = qualifiers[-1] if qualifiers else None
        return cls(last, near if near and not near[0].isupper() else None)


def find(settings: Settings, written: str, filters: Filters) -> Usages:
    """Every use of ``written`` in the index's files, within ``filters``."""
    name = _Name.of(written)
    sources = SourceFiles(settings.project_root)

    def read(view: index.View) -> tuple[Sequence[FileRow], list[Hit]]:
        """The index's files (in path order) and the definitions ``search`` resolves the name to. Only these files
        are read: the project's code as the index knows it, not its build output or vendored copies."""
        view.check_languages(filters)
        with view.reader() as reader:
            return reader.files(), _resolved(reader, sources, written)

    files, resolved = index.open(settings).search(read)
    pattern = re.compile(rf"(?<![\w$]){re.escape(name.identifier)}(?![\w$])")
    defining = defining_line(name.identifier.lower())
    by_file: list[FileUses] = []
    definitions: list[tuple[str, int]] = []
    needle = name.identifier.encode()
    for f in files:
        if not filters.keeps_file(f.language, f.lower_path) or not sources.holds(f.path, needle):
            continue
        text = sources.read(f.path)
        if isinstance(text, Unread):
            continue  # deleted since indexing, or not a regular file: nothing of it to show
        used, defined = _lines(text.lines, name, pattern, defining, _in_module(f.path, name.module))
        definitions.extend((f.path, n) for n in defined)
        if used:
            by_file.append(FileUses(f.path, _kind(f.path, f.language), tuple(used)))
    by_file.sort(key=lambda u: (KINDS.index(u.kind), u.path))

    def meant(place: tuple[str, int]) -> bool:
        return any(hit.file_path == place[0] and hit.start_line <= place[1] <= hit.end_line for hit in resolved)

    definitions.sort(key=lambda place: (not meant(place), place))
    return Usages(written, tuple(by_file), tuple(definitions))


def _resolved(reader: index.Reader, sources: SourceFiles, written: str) -> list[Hit]:
    """The definitions ``search`` puts first for the name (``lookup``): those meeting its qualifiers, else the
    first tier (declarations, source before tests); the answer names them first among those it left out."""
    found = lookup.find(reader, sources, written, Filters(), RESOLVED_DEPTH)
    if found.qualified:
        return [hit for hit in found.hits if hit.key in found.qualified]
    return [hit for hit in found.hits if hit.score == 1.0]


def _lines(
    lines: Sequence[str], name: _Name, pattern: re.Pattern[str], defining: re.Pattern[str], own_module: bool
) -> tuple[list[tuple[int, str]], list[int]]:
    """The (number, text) of the lines that use the name, and the numbers of those that define it. A comment that
    names it counts, as ``rg -w`` finds it: a rename must change it too. For a module's name, a line counts when
    it writes ``module.name``, or a bare ``name`` in a file that mentions the module (or is it): ``other.name`` is
    another module's."""
    used: list[tuple[int, str]] = []
    defined: list[int] = []
    mentions = None if name.module is None else own_module or _mentions(lines, name.module)
    for number, line in enumerate(lines, start=1):
        if name.identifier not in line:
            continue
        found = list(pattern.finditer(line))
        if not found:
            continue
        if defining.search(line):
            defined.append(number)
        elif name.module is None or any(_qualified(line[: m.start()], name.module, bool(mentions)) for m in found):
            used.append((number, line))
    return used, defined


def _qualified(before: str, module: str, mentioned: bool) -> bool:
    """Whether an occurrence, preceded by ``before`` on its line, is the module's name."""
    written = before.rstrip()
    if written.endswith("."):
        return re.search(rf"(?<![\w$]){re.escape(module)}\s*\.$", written) is not None
    return mentioned


def _mentions(lines: Sequence[str], module: str) -> bool:
    """Whether the file writes the module's name anywhere (``from django.utils import timezone``)."""
    word = re.compile(rf"(?<![\w$]){re.escape(module)}(?![\w$])")
    return any(module in line and word.search(line) for line in lines)


def _in_module(path: str, module: str | None) -> bool:
    """Whether the file is the qualifier's module or in its folder (``utils/timezone.py`` for ``timezone``)."""
    if module is None:
        return False
    parts = PurePosixPath(path.lower()).parts
    return module.lower() in {*parts[:-1], parts[-1].split(".")[0]} if parts else False


def _kind(path: str, language: str | None) -> str:
    if is_test(path):
        return "tests"
    return "docs" if is_doc(path, language) else "code"
