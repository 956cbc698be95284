"""What code calls things, in one place: a hit's name to show, a definition's bare name, the name a chunk
defines, and the words of code (the lexical index's tokens).

A hit's name is something a person would type or search for, never one of ChunkHound's made-up labels.
ChunkHound 6.1.0 names what has no name of its own after its kind and line (``comment_line_12``,
``block_line_104_block_line_105``, ``module_docstring_line_1``, ``file_structure``), and every Markdown chunk
after its pieces (``heading_37``; ``item_Fix_cases_of_paragraph_Fix_cases_of_double_escaping_item_...``,
hundreds of characters; ``unordered_list``; ``code_block_python``; ``link_ref_...``); TOML tables become
``definition_<project name>``. Large chunks carry ``_part1_part2`` suffixes. So: suffixes go; in a document
(Markdown, TOML) the name is the nearest heading or table above the hit, since that is what a reader calls the
place; in code a synthetic label becomes nothing; and no name is longer than ``MAX_NAME`` characters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

MAX_NAME = 60

_PART_SUFFIX = re.compile(r"(?:_part\d+)+$")
# Synthetic in any language: a kind and a line number, joined pieces of them, and ChunkHound's fixed labels.
_SYNTHETIC = re.compile(r"^(?:file_structure|unnamed|(?:[a-z_]*_line_\d+_?)+)$")
# Kinds whose symbol is made from their text (imports: ``import_os_from_pathlib``), never a name.
_UNNAMED_TYPES = frozenset({"import", "comment", "docstring", "paragraph", "code_block"})
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_TOML_TABLE = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")


def display_name(symbol: str, chunk_type: str, language: str, lines: Sequence[str] = (), start_line: int = 1) -> str:
    """The name to show for a hit.

    Args:
        symbol: ChunkHound's ``chunks.symbol``.
        chunk_type, language: the chunk's type and its file's language, as the index has them.
        lines: the file's lines (or the hit's own when the file cannot be read); documents are named from them.
        start_line: the hit's first line, 1-based, as a line number of ``lines`` (1 for a hit's own lines).
    """
    if language == "markdown":
        return shorten(_markdown_heading(lines, start_line))
    if language == "toml":
        return shorten(_toml_table(lines, start_line))
    name = _PART_SUFFIX.sub("", symbol or "")
    if chunk_type in _UNNAMED_TYPES or _SYNTHETIC.match(name):
        return ""
    return shorten(name)


def bare(symbol: str) -> str:
    """The name a symbol gives its definition, case kept: ChunkHound's ``_partN`` suffixes and the type of a Rust
    ``impl`` (``Content::serialize``) removed, and a sigil that is part of no word (``$ZodCheck``)."""
    return _PART_SUFFIX.sub("", symbol or "").rpartition("::")[2].lstrip("$@")


def shorten(name: str) -> str:
    """At most ``MAX_NAME`` characters, cut at a word where one is near, ``...`` marking the cut."""
    name = " ".join(name.split())
    if len(name) <= MAX_NAME:
        return name
    cut = name[: MAX_NAME - 3]
    space = cut.rfind(" ")
    if name[len(cut)] != " " and space > MAX_NAME // 2:  # the cut fell inside a word
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "..."


def _markdown_heading(lines: Sequence[str], start_line: int) -> str:
    """The text of the nearest ATX or setext heading at or above ``start_line``, links and emphasis removed."""
    for index in range(min(start_line, len(lines)) - 1, -1, -1):
        line = lines[index]
        atx = _ATX_HEADING.match(line)
        if atx:
            return _plain(atx.group(1))
        if index + 1 < len(lines) and line.strip() and _SETEXT_UNDERLINE.match(lines[index + 1]):
            return _plain(line)
    return ""


def _toml_table(lines: Sequence[str], start_line: int) -> str:
    """The name of the nearest ``[table]`` or ``[[array]]`` header at or above ``start_line``."""
    for index in range(min(start_line, len(lines)) - 1, -1, -1):
        table = _TOML_TABLE.match(lines[index])
        if table:
            return table.group(1)
    return ""


def _plain(text: str) -> str:
    return _EMPHASIS.sub("", _LINK.sub(r"\1", text)).strip()


# -- the words of code: the lexical index's tokens ------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# The name a chunk defines, from its first lines, when ChunkHound's symbol is a made-up label
# (``definition_line_144`` for ``export function shallowCopy``): ``def x``, ``function x``, ``class X``, ...,
# ``a.b.x = function``.
_DEFINED = re.compile(
    r"\b(?:def|function\*?|class|interface|type|struct|enum|trait|fn|func|module|record)\s+([A-Za-z_$][\w$]*)|"
    r"^\s*(?:export\s+)?(?:const|let|var)?\s*(?:[\w$]+\.)*([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function\b",
    re.MULTILINE,
)


@functools.lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """A token by its English stem (Snowball): a query's "validators" meets the code's ``ValidateStruct``
    (``valid``), "rendering" ``render``, "dependencies" ``dependency``."""
    return _stemmer().stemWord(token)


@functools.cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: imported by the first search that tokenises, not by the pack's import

    return Stemmer.Stemmer("english")


def word_tokens(word: str) -> list[str]:
    """``parseHTTPResponse`` -> ``parsehttprespons``, ``pars``, ``http``, ``respons``: the whole identifier and its
    parts (two characters or more), each by its stem."""
    whole = word.lower()
    out = [whole] if len(whole) > 1 else []
    parts = [p.lower() for piece in word.split("_") for p in _PART.findall(piece)]
    if len(parts) > 1:
        out.extend(p for p in parts if len(p) > 1 and p != whole)
    return [stem(t) for t in out]


def tokens(text: str) -> list[str]:
    """Every token of ``text``, in order, repeats kept (they are term frequencies)."""
    return [token for word in _WORD.findall(text) for token in word_tokens(word)]


def query_tokens(query: str) -> list[str]:
    """The query's distinct tokens, in order."""
    return list(dict.fromkeys(tokens(query)))


def words(text: str) -> list[str]:
    """The identifiers and numbers of ``text``, in order (what ``tokens`` splits)."""
    return _WORD.findall(text)


def defined_name(symbol: str, chunk_type: str, code: str) -> str:
    """The name the chunk defines, counted once more in its document so that a definition outranks its uses:
    ChunkHound's symbol when it is a real name, else the one its first lines define, else nothing."""
    name = display_name(symbol, chunk_type, "")
    if name:
        return name
    found = _DEFINED.search("\n".join(code.split("\n", 3)[:3]))
    return next((group for group in found.groups() if group), "") if found else ""
