"""What a file's path says of its role, for the hybrid ranking: whether it is a test or documentation, the name
it goes by, how much of that name a query says, how many of the query's words name it or its folder, and whether
it is a legacy copy.

A hub file (``mod.rs``, ``__init__.py``, ``index.ts``) goes by its folder's name: ``extract/mod.rs`` is where
axum's extractors are declared and re-exported, so a question about extractors names it as much as
``form.rs`` is named by one about forms. A file whose whole name the query says (``completions.go`` for "shell
completion request handling", ``Triple.java`` for "triple container") is more likely the place than one that
shares a word of it (``bash_completions.go``, ``ImmutableTriple.java``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from pathlib import PurePosixPath

from onetool_code.names import identifier_parts, stem
from onetool_code.search.abbreviations import short_forms

# A test (or a fixture, a mock, a spec) by its folder or its name, lowercased ...
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|specs?|testing|fixtures?|mocks?)(/|$)|(^|/)test_[^/]*$|_test\.\w+$|"
    r"\.(test|spec)\.\w+$|(^|/)conftest\.py$|(^|/)tests?\.rs$"  # Rust's module of tests: ``mod tests;``
)
# ... and by the case of the JVM's, .NET's and Swift's conventions (the path as written): a Gradle source set of tests
# (Kotlin Multiplatform's ``src/commonTest/``, ``jvmTest``, Android's ``androidUnitTest``, ``testFixtures``), a .NET
# test project (``Shop.Tests/``, ``Shop.UnitTests/``), a class of tests (``RouterTest.kt``, ``ClientTests.swift``)
# where a test folder does not say it. (Not a class named ``...Spec``: Kotlin's and Swift's code is full of them,
# ``AnimationSpec``, ``TweenSpec``, as much as their tests.)
_TEST_CASED = re.compile(
    r"(^|/)(testFixtures|[a-z][A-Za-z0-9]*Tests?|[\w.]+\.(Unit|Integration|Functional)?(Tests?|Specs?))(/|$)|"
    r"[a-z0-9]Tests?\.\w+$"
)
# Documentation, examples and a project's prose files by their folder, name or extension ...
_DOC_PATH = re.compile(
    r"(^|/)[_.]?(examples?|samples?|demos?)(/|$)|(^|/)(changelog|changes|history|news|readme|"
    r"contributing|license)[^/]*$|\.(md|mdx|rst|txt|adoc)$",
    re.IGNORECASE,
)
_DOC_LANGUAGES = frozenset({"markdown", "text", "pdf"})
# ... and what a documentation folder holds but programs: its pages, templates and styles. A program there is code
# (cobra's ``doc/`` package, which writes man pages; a Sphinx ``conf.py``), as an example's program is documentation.
_DOCS_FOLDER = re.compile(r"(^|/)[_.]?(docs?|documentation)(/|$)", re.IGNORECASE)
_NOT_PROGRAMS = frozenset(
    {"markdown", "text", "pdf", "html", "css", "scss", "jinja", "json", "yaml", "toml", "makefile", "hcl", "unknown",
     "git_diff"}
)  # fmt: skip

# File names that stand for their folder: a package's or module's entry point, declaring and re-exporting it.
HUB_NAMES = frozenset({"mod", "index", "__init__", "init"})
PREFIX_SLACK = 3  # letters a stem may have past the other's end ("extractors" says ``extract``, not "httpexception")
PREFIX_SAYS = 1.0  # ... and such a word counts as the same stem would (0.5 or 0: the semble split -0.001)
PIECE = 3  # letters at least in each word of a name run together (the blind questions +0.010, the semble split
# -0.0002: cobra's ``docgen/`` folder is named by "documentation generation" as much as ``doc/`` is)
# A name's words: a version (``V2``, ``v3``) is one, so that ``bash_completionsV2.go`` is said less by "bash
# completion generation" than ``bash_completions.go``; other digits are part of no word (``http2``: http).
_PART = re.compile(r"[Vv]\d+|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


@functools.lru_cache(maxsize=8192)
def own_name(path: str) -> str:
    """The name a file goes by: its name before the first dot, or its folder's for a hub file."""
    posix = PurePosixPath(path)
    name = posix.name.split(".")[0] if not posix.name.startswith(".") else posix.name
    if name.lower() in HUB_NAMES and posix.parent.name not in ("", "."):
        return posix.parent.name
    return name


@functools.lru_cache(maxsize=8192)
def name_words(path: str) -> tuple[str, ...]:
    """The stems of the words of a file's own name (``bash_completionsV2.go``: bash, complet, v2)."""
    parts = [p.lower() for piece in re.split(r"[_\-\s]+", own_name(path)) for p in _PART.findall(piece)]
    return tuple(dict.fromkeys(stem(p) for p in parts if len(p) > 1))


def name_focus(path: str, query_stems: Collection[str]) -> float:
    """The share of the words of the file's own name that the query says (by stem, or one stem the other's
    start, four letters or more and at most ``PREFIX_SLACK`` more: "validation" says ``Validate``)."""
    own = name_words(path)
    if not own or not query_stems:
        return 0.0
    return sum(max((_said(word, q) for q in query_stems), default=0.0) for word in own) / len(own)


def _said(word: str, query: str) -> float:
    """1 for the same stem, ``PREFIX_SAYS`` for one the other's start, else 0."""
    if word == query:
        return 1.0
    short, long = sorted((word, query), key=len)
    close = len(short) >= 4 and len(long) - len(short) <= PREFIX_SLACK and long.startswith(short)
    return PREFIX_SAYS if close else 0.0


@functools.lru_cache(maxsize=8192)
def _path_words(path: str) -> tuple[str, ...]:
    """The words of a file's name and of its folder's name, as written (``binding/default_validator.go``:
    default, validator, binding)."""
    posix = PurePosixPath(path)
    return tuple(re.findall(r"[A-Za-z][A-Za-z0-9]*", f"{posix.name.lstrip('.').split('.')[0]} {posix.parent.name}"))


@functools.lru_cache(maxsize=8192)
def _path_parts(path: str) -> frozenset[str]:
    """The words of a file's name and of its folder's, each with its parts (``binding/default_validator.go``:
    binding, default, validator, default_validator)."""
    return frozenset(part for word in _path_words(path) for part in identifier_parts(word))


def path_words(path: str, keywords: frozenset[str], initials: frozenset[tuple[str, str]] = frozenset()) -> int:
    """How many of the query's words name the file or its folder, a word counting when one of the two is the
    other's start, three letters or more (``validators`` names ``default_validator.go``), when one of its short
    forms is a whole part ("websocket" names ``client_ws.py``), or its initials (``initials``: pairs of a word and
    the initials it goes by, "HuggingFace" names ``hf.py``). A name of two words run together in lowercase counts
    both when two words of the query say them ("manual page": ``manpage.py``; "functions ... templates":
    ``templatefuncs.py``; "documentation generation": ``docgen/``)."""
    parts = _path_parts(path).union(*(_pieces_said(word, keywords) for word in _run_together(path)))
    return sum(1 for keyword in keywords if any(_names(keyword, part) or (keyword, part) in initials for part in parts))


def _names(keyword: str, part: str) -> bool:
    """Whether a word of the query names a part of a path: the same, one the other's start, or a short form."""
    if keyword == part:
        return True
    if min(len(keyword), len(part)) >= 3 and (keyword.startswith(part) or part.startswith(keyword)):
        return True
    return part in short_forms(keyword)


@functools.lru_cache(maxsize=8192)
def _run_together(path: str) -> tuple[str, ...]:
    """The words of a file's name and folder written as one run of lowercase letters, long enough to be two
    (``manpage``, ``templatefuncs``): no case or separator says where the second starts."""
    return tuple(word for word in _path_words(path) if len(word) >= 2 * PIECE and word.isalpha() and word.islower())


@functools.lru_cache(maxsize=8192)
def _pieces_said(word: str, keywords: frozenset[str]) -> frozenset[str]:
    """The two words ``word`` runs together, when two different words of the query name them; else none."""
    for cut in range(PIECE, len(word) - PIECE + 1):
        left, right = word[:cut], word[cut:]
        said = [keyword for keyword in keywords if _names(keyword, left)]
        if said and any(_names(keyword, right) for keyword in keywords if keyword not in said or len(said) > 1):
            return frozenset({left, right})
    return frozenset()


def project_words(root_name: str) -> frozenset[str]:
    """The word a question calls the project by, from the name of its folder (``cobra``, ``django-4.2``:
    django): "how cobra integrates pflags" says it of every file, so it names none, though ``cobra.go`` shares it."""
    joined = re.sub(r"[^a-z0-9]", "", root_name.lower())
    bare_name = re.sub(r"[^a-z0-9]", "", re.sub(r"[-_.]?v?\d[\d.]*$", "", root_name.lower()))
    return frozenset(word for word in (joined, bare_name) if len(word) > 2)


# A statement that makes names of elsewhere part of this module's interface: Rust's ``pub use``, JavaScript's and
# TypeScript's ``export ... from`` and ``module.exports``, Python's ``__all__`` and a package's imports (only in a
# hub file: elsewhere an import is a use).
_RE_EXPORT = re.compile(
    r"\bpub(?:\s*\([^)]*\))?\s+use\s[^;]*;"
    r"|\bexport\s+(?:type\s+)?(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?)\s*from\b"
    r"|\bmodule\.exports\s*=\s*\{[^}]*\}"
    r"|^__all__\s*[:=][^\]]*\]",
    re.MULTILINE,
)
_PY_IMPORT = re.compile(r"^from\s+\S+\s+import\s+(?:\([^)]*\)|[^\n]*)", re.MULTILINE)


def re_exports(code: str, path: str, names: Collection[str]) -> bool:
    """Whether the chunk's code re-exports one of ``names`` (lowercase): where a name is made public, which
    in a crate or package is often not where it is defined (``pub use axum_core::extract::FromRequest`` in
    ``extract/mod.rs``)."""
    lowered = code.lower()
    if not any(name in lowered for name in names):  # most chunks: no regex
        return False
    hub_python = path.endswith(".py") and own_name(path) != PurePosixPath(path).name.split(".")[0]
    if not hub_python and not any(word in lowered for word in ("pub ", "export", "__all__")):
        return False
    statements = [m.group() for m in _RE_EXPORT.finditer(code)]
    if hub_python:
        statements += [m.group() for m in _PY_IMPORT.finditer(code)]
    if not statements:
        return False
    said = {word.lower() for statement in statements for word in re.findall(r"[A-Za-z_$][\w$]*", statement)}
    return not said.isdisjoint(names)


# Folders and files that keep an older copy of code for compatibility: current code is what is asked about
# unless the query says otherwise. A file named deprecated or obsolete is code about that (serde_derive's
# ``deprecated.rs`` allows deprecated items, Mercurial's ``obsolete.py`` keeps the markers of rewritten changesets),
# not a copy of something.
LEGACY_WORDS = frozenset({"legacy", "deprecated", "compat", "obsolete", "old"})
LEGACY_FILES = frozenset({"legacy", "compat"})
VERSION = re.compile(r"^v(\d+)$")  # a version, lowercased (a folder's ``v3``, a query's "v2")


def legacy(paths: Collection[str], query_words: Collection[str]) -> set[str]:
    """Those of ``paths`` that are legacy copies, unless the query names them so: a folder named legacy,
    deprecated, compat (``_compat/``), obsolete or old, a file named legacy or compat (``compat.ts``), or a version
    folder (``v3/``) beside a newer one among ``paths`` (``v4/``)."""
    newest: dict[str, int] = {}
    versioned: dict[str, tuple[str, int, str]] = {}
    flagged = set()
    for path in paths:
        parts = PurePosixPath(path).parts
        for depth, part in enumerate(parts):
            word = part.split(".")[0].strip("_-").lower()
            words = LEGACY_WORDS if depth < len(parts) - 1 else LEGACY_FILES
            if word in words and word not in query_words:
                flagged.add(path)
            found = VERSION.match(part.lower()) if depth < len(parts) - 1 else None
            if found:
                prefix = "/".join(parts[:depth])
                number = int(found.group(1))
                newest[prefix] = max(newest.get(prefix, number), number)
                versioned.setdefault(path, (prefix, number, part.lower()))
    for path, (prefix, number, part) in versioned.items():
        if number < newest[prefix] and part not in query_words:
            flagged.add(path)
    return flagged


@functools.lru_cache(maxsize=8192)
def is_test(path: str) -> bool:
    """A test file (or a fixture, a mock, a spec) by its path."""
    return bool(_TEST_PATH.search(path.lower()) or _TEST_CASED.search(path))


@functools.lru_cache(maxsize=8192)
def is_doc(path: str, language: str | None) -> bool:
    """Documentation (prose, examples) by its language or its path."""
    return bool(
        language in _DOC_LANGUAGES
        or _DOC_PATH.search(path)
        or (_DOCS_FOLDER.search(path) and (language is None or language in _NOT_PROGRAMS))
    )
