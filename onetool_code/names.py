"""What code calls things, in one place: a hit's name to show, a definition's bare name, the names a query
writes, the lines that define a name, and the words of code.

A hit's name is something a person would type or search for, never one of ChunkHound's made-up labels.
ChunkHound 6.1.0 names what has no name of its own after its kind and line (``comment_line_12``,
``block_line_104_block_line_105``, ``module_docstring_line_1``, ``file_structure``), and every Markdown chunk
after its pieces (``heading_37``; ``item_Fix_cases_of_paragraph_Fix_cases_of_double_escaping_item_...``,
hundreds of characters; ``unordered_list``; ``code_block_python``; ``link_ref_...``); TOML tables become
``definition_<project name>``. Large chunks carry ``_part1_part2`` suffixes (``PART_SUFFIX``). So: suffixes go;
in a document (Markdown, TOML) the name is the nearest heading or table above the hit, since that is what a
reader calls the place; in code a synthetic label becomes nothing; and no name is longer than ``MAX_NAME``
characters.

The words of code are split three ways, on purpose, each for its reader:

- ``tokens``/``query_tokens``: the lexical index's terms, an identifier whole and its parts, each by its stem
  (BM25 must meet "validators" with ``ValidateStruct``);
- ``identifier_parts``: the same split unstemmed, the whole word kept whatever its length (a file's name against
  the query's words, compared by their starts);
- ``match_tokens``: the match-aware response spec's, words lowercased and never split (a line matches when it
  holds one as a substring: ``match_lines``, the preview).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Collection, Sequence
from typing import Any

MAX_NAME = 60

# ChunkHound names the pieces of a definition it cut after the definition: ``bulk_create_part1_part2``. One
# pattern for Python's str (``\d`` any digit, as always here), its bytes and DuckDB's RE2 (``\d`` is ``[0-9]``);
# a plain group, since a ``?`` in the SQL text would read as a parameter.
PART_SUFFIX = r"(_part\d+)+"
_PART_SUFFIX = re.compile(PART_SUFFIX + "$")
# ChunkHound's label of the chunk that holds a file's top level, by language: most say ``file_structure``;
# Elixir ``elixir_source``, Bash ``bash_script``, Lua ``lua_chunk``, and data ``json_document`` and the like.
_TOP_LEVEL_LABELS = (
    "file_structure|elixir_source|bash_script|lua_chunk|json_document|toml_document|hcl_document|text_document"
)
_TOP_LEVEL = re.compile(f"^(?:{_TOP_LEVEL_LABELS})$")
# Synthetic in any language: a kind and a line number, joined pieces of them, and ChunkHound's fixed labels
# (``unnamed``, ``unnamed_<concept>`` for what its parser could not name, and its language mappings' own: Elixir's
# ``unnamed_attr``, Bash's ``unnamed_source``, a Makefile's ``unnamed_target`` and ``unnamed_include``, Lua's
# ``unnamed_require``).
_SYNTHETIC = re.compile(
    rf"^(?:{_TOP_LEVEL_LABELS}|(?:[a-z_]*_line_\d+_?)+|"
    r"unnamed(?:_(?:definition|block|comment|import|structure|attr|source|target|include|require))?)$"
)
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


def top_level(symbol: str) -> bool:
    """The chunk is a file's top level (imports, a module's header), which defines nothing of its own."""
    return _TOP_LEVEL.match(_PART_SUFFIX.sub("", symbol)) is not None


def bare(symbol: str) -> str:
    """The name a symbol gives its definition, case kept: ChunkHound's ``_partN`` suffixes and the type of a Rust
    ``impl`` (``Content::serialize``) removed, and a sigil that is part of no word (``$ZodCheck``)."""
    return _PART_SUFFIX.sub("", symbol or "").rpartition("::")[2].lstrip("$@")


def is_piece(symbol: str) -> bool:
    """Whether ChunkHound cut the chunk out of a bigger definition (its symbol ends in ``_partN``)."""
    return _PART_SUFFIX.search(symbol) is not None


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


# -- the names a query writes ------------------------------------------------------------------------------------------

# A dotted name or a path of Rust's and C++'s (``Router::route``, ``fmt::format``): its qualifiers, then the name.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")
_QUALIFIER_MARK = re.compile(r"\.|::")
# A file path as an engineer writes one: lowercase parts with a slash, or a name with a source file's extension.
_PATH_LIKE = re.compile(
    r"\b[a-z0-9_.-]*[a-z][a-z0-9_.-]*(?:/[a-z0-9_.-]+)+/?|"
    r"\b[\w-]+\.(?:py|pyi|js|jsx|mjs|cjs|ts|tsx|go|rs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift)\b"
)
_CAMEL = re.compile(r"[a-z][A-Z]")


def names_in(query: str, strict: bool = False) -> tuple[frozenset[str], frozenset[str]]:
    """The names a query spells out and the qualifiers before them, lowercased.

    A name is an identifier only an engineer would write (``load_config``, ``parseOptions``, the last part of
    a qualified ``Segment.split_lines`` or ``Router::route``, a capitalised word past the first unless
    ``strict``), or the whole query when it is one bare word. A plain word ("client") is not one, so "client
    timeout" boosts no symbol, nor is an acronym ("CSRF"). A file path's parts (``db/models/query.py``) are
    qualifiers.
    """
    names, qualifiers = set(), set()
    for path in _PATH_LIKE.findall(query):  # "commands/migrate.py Command.handle": a file to look in
        qualifiers.update(p.split(".")[0].lower() for p in path.split("/") if p.split(".")[0])
    query = _PATH_LIKE.sub(" ", query)
    found = [m.group() for m in _IDENTIFIER.finditer(query)]
    whole = len(found) == 1 and found[0] == query.strip()
    for position, identifier in enumerate(found):
        *before, last = _QUALIFIER_MARK.split(identifier)
        written_as_code = "_" in last or _CAMEL.search(last) is not None
        capitalised = not strict and last[:1].isupper() and position > 0
        if whole or before or written_as_code or capitalised:
            names.add(last.lower())
            qualifiers.update(p.lower() for p in before if p.lower() != "prototype")
    return frozenset(names), frozenset(qualifiers)


_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+")  # "object", "Object", "JSON"; not ``parseOptions``, ``v4``
_PUNCTUATION = ".,:;!?()[]{}\"'`"


def run_together(query: str) -> frozenset[str]:
    """Each two neighbouring words of the query, neither a stopword, run together and lowercased, as one word and
    joined by an underscore: the names code gives what a sentence says in two words ("load config": ``loadConfig``,
    ``load_config``; "JSON object": ``JsonObject``)."""
    # Plain words only: a name, a dotted name or a path the query writes (``Model.save``, ``get_or_set``) is
    # looked up as written, and breaks the sentence.
    words = [
        piece.lower() if _PLAIN_WORD.fullmatch(piece) else None
        for token in query.split()
        for piece in token.strip(_PUNCTUATION).split("-")
    ]
    pairs = [(a, b) for a, b in itertools.pairwise(words) if a and b and a not in STOPWORDS and b not in STOPWORDS]
    return frozenset(joined for a, b in pairs for joined in (a + b, f"{a}_{b}"))


def spellings(query: str) -> dict[str, str]:
    """Each identifier of the query (each part of a qualified one), lowercased, as the query writes it."""
    return {part.lower(): part for m in _IDENTIFIER.finditer(query) for part in _QUALIFIER_MARK.split(m.group())}


def identifiers(text: str) -> list[str]:
    """The identifiers of ``text``, qualified ones whole (``Segment.split_lines``, ``Router::route``), in order."""
    return _IDENTIFIER.findall(text)


# -- the lines that define a name --------------------------------------------------------------------------------------


# The patterns of names are compiled once per name (``functools.lru_cache``): one costs about a millisecond and
# Python's own cache of 512 patterns turns over within a few searches of other modes.


@functools.lru_cache(maxsize=1024)
def definition_of(names: frozenset[str]) -> re.Pattern[str]:
    """A line that defines one of ``names``: ``def name``, ``function name``, ``class Name``, ``name(...) {``
    (a method), ``String name(...) {`` (a typed one), ``x.name = function`` or ``name: function`` (assigned), in
    any of our languages."""
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    return re.compile(
        rf"{_declared(alternatives)}|"
        rf"^\s*(?:{_MODIFIERS}\s+)*(?:{alternatives})\s*(?:<[^>]*>)?\([^)]*\)?\s*[:{{]|"
        rf"{_typed(alternatives)}|{_assigned(alternatives)}",
        re.IGNORECASE,
    )


def definition_lines(names: Collection[str]) -> str:
    """A pattern (Python's and RE2's syntax, case-insensitive, multi-line) for the lines of a chunk's code that
    define one of ``names``, as ``definition_of`` but stricter about methods (their signature on one line ending
    in ``{``): in a whole chunk, a call at the start of a line must not count."""
    alternatives = "|".join(re.escape(n) for n in sorted(names))
    return (
        rf"(?im){_declared(alternatives)}|"
        rf"^[ \t]*(?:{_MODIFIERS}[ \t]+)*(?:{alternatives})[ \t]*(?:<[^>\n]*>)?\([^)\n]*\)[ \t]*"
        rf"(?::[^{{\n]+)?\{{[ \t]*$|{_typed(alternatives)}|{_assigned(alternatives)}"
    )


@functools.lru_cache(maxsize=1024)
def defining_line(name: str) -> re.Pattern[str]:
    """``definition_lines`` of one name, compiled."""
    return re.compile(definition_lines([name]))


@functools.lru_cache(maxsize=1024)
def written(names: frozenset[str]) -> re.Pattern[str]:
    """One of ``names`` (lowercase) written as a whole word, in any case."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?i)(?<!\w)(?:{alternatives})(?!\w)")


_MODIFIERS = "(?:export|default|async|static|public|private|protected|override|get|set|pub)"


# The words that declare a name in the languages ChunkHound parses, what follows them on the line being the name:
# Python's, Ruby's and Groovy's ``def``; Elixir's ``defp``, ``defmacro``, ``defmodule`` and ``defprotocol``;
# JavaScript's, PHP's, Lua's and Bash's ``function``; Rust's ``fn`` and ``macro_rules!``; Go's and Swift's
# ``func``; Swift's ``typealias``; and the types and variables most languages share. (Swift's ``extension`` and
# Elixir's ``defimpl`` name what they extend: no.)
_DECLARING = (
    r"def|defp|defmacrop?|defmodule|defprotocol|defguardp?|defdelegate|function\*?|fn|func|macro_rules!|"
    r"class|interface|type|typealias|struct|enum|trait|record|module|const|let|var"
)
# ... and the words that are English too (Kotlin's ``fun``, ``object`` and ``val``, Swift's ``protocol`` and
# ``actor``, Rust's ``mod``), which declare only where a line's code starts, after its modifiers, and as written
# (lowercase): "the object gsonBuilder" in a comment, or Java's ``Object typeAdapter,`` declares nothing.
_DECLARING_FIRST = r"fun|object|val|protocol|actor|mod"
_LEADING = (
    r"(?:public|private|protected|internal|fileprivate|open|final|abstract|sealed|data|inner|companion|override|"
    r"suspend|inline|static|nonisolated|distributed|export|default|async|const|operator|infix|tailrec|external|"
    r"expect|actual|pub(?:\([\w :]{0,40}\))?|@\w+(?:\([^)\n]{0,40}\))?|#\[[^\]\n]{0,40}\])"
)
# A type's export or attribute macro, between its word and its name in C and C++ (``class FMT_API file``, ``class
# PYBIND11_EXPORT_EXCEPTION error_already_set``, ``struct Q_CORE_EXPORT QObject``): capitals with an underscore,
# which tree-sitter takes for the name, so that ChunkHound names the chunk after neither.
_MACRO = r"(?-i:[A-Z][A-Z0-9]*_[A-Z0-9_]*)(?:\([^)\n]{0,40}\))?"
# A qualifier before the name, which only some words take: Kotlin's extension functions (``fun HttpClient.withRetry``,
# ``fun List<String>.send``), Elixir's modules (``defmodule MyApp.Router``) and Lua's ``function M.name``.
_QUALIFIED = r"fun|defmodule|defprotocol|function"


def _declared(alternatives: str) -> str:
    # Between the word and the name, on its line: a Go receiver (``func (r *Router) Handle``), type parameters
    # (``fun <T : Comparable<T>> send``), a qualifier where the word takes one (``_QUALIFIED``, at the start of the
    # line's code: "the function os.path.join" in a docstring declares nothing), and a sigil that is part of no word
    # (``$ZodCheck`` in zod, PHP's ``$x``). Each part is bounded: a chunk of ``func (((`` or ``fun <<<`` (100 KB:
    # 1.5 s unbounded) costs a linear search, not a quadratic one; RE2, linear anyway, compiles the bounds into a
    # program that grows with them, hence 40.
    between = r"[ \t]+(?:\([^)\n]{0,40}\)[ \t]*)?(?:<[^\n]{0,40}?>[ \t]*)?"
    qualifier = r"(?:[A-Za-z_]\w*(?:<[^\n]{0,40}?>)?\.)+"
    # ... and after the name, anything but what makes it a type in use: C's and C++'s ``const Foo &``, ``struct
    # foo *p``, ``(const Foo)`` (pybind11's ``catch (const error_already_set &)``, in every caster).
    name = rf"\$?(?:{alternatives})\b(?:[ \t]*$|[ \t]*[^*&)\s])"
    leading = rf"^[ \t]*(?:{_LEADING}[ \t]+)*"
    return (
        rf"\b(?:{_DECLARING}){between}{name}|"
        rf"\b(?:class|struct|union|enum)[ \t]+{_MACRO}[ \t]+{name}|"
        rf"{leading}(?-i:{_DECLARING_FIRST}){between}{name}|"
        rf"{leading}(?:local[ \t]+)?(?-i:{_QUALIFIED}){between}{qualifier}{name}"
    )


def _typed(alternatives: str) -> str:
    # A method of Java's, C#'s or C++'s: its return type before the name (capitalised, a namespace's, or a
    # primitive one: not ``new Thread() {`` nor ``return x;``), its signature on one line, then what may follow it
    # (``throws ...``, ``const``) and ``{``, or ``;`` where it has no body (an interface's or abstract method, a
    # header's prototype: ``boolean getBoolean(String key);``).
    kind = (
        r"(?:[A-Z][\w.$]{0,60}|(?:[a-z_]\w{0,30}::){1,3}\w{1,40}|"
        r"void|int|long|boolean|bool|double|float|char|byte|short|string|auto|unsigned)"
    )
    after = r"(?:[ \t]+(?:throws[ \t]+[\w., \t]{0,80}|const|noexcept|override|final))*"
    return (
        rf"^[ \t]*(?:{_LEADING}[ \t]+)*(?:<[^\n]{{0,40}}?>[ \t]+)?(?-i:{kind})(?:<[^\n]{{0,40}}?>)?(?:\[\])*[ \t&*]+"
        rf"(?:{alternatives})[ \t]*\([^)\n]*\){after}[ \t]*[{{;][ \t]*$"
    )


def _assigned(alternatives: str) -> str:
    # Spaces and tabs, not ``\s``: in a whole chunk (``definition_lines``' multi-line mode) ``^\s*`` runs across
    # every blank line after each one, and 20 KB of them took 17 s.
    return rf"^[ \t]*[\w.$]*?\$?\b(?:{alternatives})[ \t]*(?:=|:)[ \t]*(?:async[ \t]+)?(?:function\b|\()"


# The name a chunk defines, from its first lines, when ChunkHound's symbol is a made-up label
# (``definition_line_144`` for ``export function shallowCopy``): ``def x``, ``function x``, ``class X``, ...,
# ``a.b.x = function``.
_DEFINED = re.compile(
    r"\b(?:def|function\*?|class|interface|type|struct|enum|trait|fn|func|module|record)\s+([A-Za-z_$][\w$]*)|"
    r"^\s*(?:export\s+)?(?:const|let|var)?\s*(?:[\w$]+\.)*([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function\b",
    re.MULTILINE,
)


def defined_name(symbol: str, chunk_type: str, code: str) -> str:
    """The name the chunk defines, counted once more in its document so that a definition outranks its uses:
    ChunkHound's symbol when it is a real name, else the one its first lines define, else nothing."""
    name = display_name(symbol, chunk_type, "")
    if name:
        return name
    found = _DEFINED.search("\n".join(code.split("\n", 3)[:3]))
    return next((group for group in found.groups() if group), "") if found else ""


# -- the words of code -------------------------------------------------------------------------------------------------

# Words that say nothing of where code is: never matched against file names (``ranking``), and worth little in
# telling which definition of a long result a query is about (``shaping``).
STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have", "how", "if",
        "in", "into", "is", "it", "its", "not", "of", "on", "or", "the", "to", "was", "what", "when", "where",
        "which", "who", "why", "with", "this", "that",
    }
)  # fmt: skip
COMMENT_STARTS = ("#", "//", "/*", "*", "@", '"' * 3, "'" * 3)  # how comment, docstring and decorator lines start


_WORD = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


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


def stems_in(text: str) -> frozenset[str]:
    """The distinct tokens of ``text`` (``tokens``' set), each distinct word split and stemmed once a process: code
    says the same words in result after result."""
    return frozenset(token for word in set(_WORD.findall(text)) for token in _word_stems(word))


@functools.lru_cache(maxsize=16384)
def _word_stems(word: str) -> tuple[str, ...]:
    return tuple(word_tokens(word))


def query_tokens(*queries: str) -> list[str]:
    """The queries' distinct tokens, in order."""
    return list(dict.fromkeys(token for query in queries for token in tokens(query)))


def words(text: str) -> list[str]:
    """The identifiers and numbers of ``text``, in order (what ``tokens`` splits)."""
    return _WORD.findall(text)


def identifier_parts(word: str) -> list[str]:
    """``ToStringBuilder`` -> tostringbuilder, to, string, builder (as the lexical index splits identifiers)."""
    parts = [p.lower() for piece in word.split("_") for p in _PART.findall(piece)]
    return [word.lower(), *parts]


def match_tokens(query: str) -> list[str]:
    """``"UserAvatar component"`` -> ``["useravatar", "component"]``: the match-aware response spec's tokens,
    lowercased, deduplicated in order, single characters dropped."""
    seen: dict[str, None] = {}
    for token in _WORD.findall(query):  # the spec's token: ``[A-Za-z0-9_]+``
        lowered = token.lower()
        if len(lowered) > 1:
            seen.setdefault(lowered, None)
    return list(seen)
