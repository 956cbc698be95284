"""Name the definitions inside a hit's code, at query time; tree-sitter is imported lazily, never at import.

A hit's ``definitions`` field (PRODUCT.md §2) is ``"class Cache, method get, method put"``: the named
definitions in the hit's code, from a tree-sitter parse, with the node table of
``specs/concise-search-output.md`` ("Definition Extraction"). The index is read-only, so this cannot be
stored with the chunk and is computed per hit; that is why it is fast: one cached parser per grammar and
thread, one parse per hit unless it is a broken fragment, and a walk that skips function bodies.

Choices, each for a reason:

- **Nothing inside a function or method body is reported** (nested functions, local classes, closures,
  lambdas, arrow functions, Java anonymous classes): the field is a summary of what the hit defines, and
  helpers private to a body would only make it longer. Containers are entered: classes, impls, traits,
  interfaces, modules, namespaces, so methods are reported in every language.
- **Python functions in a class are labelled ``method``**, and so is an indented ``def`` at the top level
  of the parse: a module-level ``def`` starts in column 0, so an indented one was cut out of a block,
  in practice a class body, and ``    def close(self):`` alone reads ``method close``. (One cut from a
  nested function reads as a method too; the text alone cannot tell them apart.) Rust's ``fn``, Kotlin's
  ``fun``, Swift's ``func`` and ``init`` (``function init``) and Elixir's ``def`` keep ``function`` in a type too:
  their grammars, like Rust's, have one node for both.
- **Labels by keyword** where one node type is many kinds: Swift's ``struct``, ``enum``, ``extension``, ``actor``
  and ``class``, a Kotlin ``interface`` (enum, data and sealed classes stay ``class``), and an Elixir call of
  ``defmodule`` (``module``), ``defprotocol``, ``defimpl`` (``impl``), ``def``/``defp`` or ``defmacro``/``defmacrop``
  (``macro``, whose body is not entered either); any other Elixir call is no definition.
- **Rust ``impl`` is named by its self type without generics or path:** ``impl Display for Point`` is
  ``impl Point``, ``impl<T> Stack<T>`` is ``impl Stack``, ``impl a::b::Stack<T>`` is ``impl Stack``, so the
  name matches the ``struct``/``enum`` it extends. So is a Swift ``extension a.Stack<T>`` (``extension Stack``)
  and an Elixir ``defimpl P, for: Map`` (``impl Map``; without ``for:`` it implements the module around it and
  has no name). An Elixir module is named whole (``module MyApp.Router``); a Kotlin extension function by its own
  name (``fun Client.retry`` is ``function retry``); an unnamed Kotlin companion object is no entry.
- **Fragments:** when a hit's code does not parse cleanly as a file, it is parsed again inside a cheap wrapper
  (a ``class``/``impl`` around lone methods, with and without a closing brace for hits that end with their
  container's brace; Kotlin and Swift first try closing a class cut before its end). The first clean parse
  wins; wrapper names are never reported. Python gets no wrapper and no ``textwrap.dedent``:
  tree-sitter-python already parses a uniformly indented fragment, and dedenting fixed none of 1,136 broken
  random 5-30 line windows of stdlib code (measured). If no parse is clean, the raw one is used and a
  definition is reported only when its header (the nodes up to and including its name) is free of syntax
  errors: an error inside a body does not hide the name, and garbage usually yields nothing.
- **Output:** ``"{label} {name}"`` in source order, the first occurrence kept (Java overloads appear once),
  joined by ``", "``; ``""`` for code without definitions and, without parsing, for languages outside the
  table (markdown, json, yaml, text, ...).

No exception is caught here: every str parses (tree-sitter recovers from any input), so an exception means
a broken installation or a bug, and it reaches the caller's error boundary instead of becoming an empty field.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["Definition", "definitions", "enclosing", "outline"]

# Node types whose body is never entered although they are not in the table: anonymous functions.
_ANONYMOUS_FUNCTIONS = frozenset(
    {
        "lambda",  # Python
        "arrow_function",  # JavaScript / TypeScript
        "function_expression",
        "generator_function",
        "func_literal",  # Go
        "closure_expression",  # Rust
        "lambda_expression",  # Java
        "lambda_literal",  # Kotlin / Swift
        "anonymous_function",  # Kotlin / Elixir
    }
)

# Labels whose definitions have a body that is not entered (see the module docstring); an Elixir macro's body
# quotes the code it writes into its caller.
_FUNCTION_LABELS = frozenset({"function", "method", "macro"})

# JavaScript accepts these as method names, so ``if (x) { ... }`` wrapped in a class parses cleanly as a
# method called ``if``, and error recovery makes the same mistake in broken code (seen in random windows of
# real JavaScript). Nobody names a method so: such a wrapped parse is rejected and such a name dropped.
_STATEMENT_KEYWORDS = frozenset({"if", "for", "while", "switch", "catch", "with", "function"})

_BRACE_CLASS_WRAPPERS = (("class _W {\n", "\n}"), ("class _W {\n", ""))
_RUST_WRAPPERS = (("impl _W {\n", "\n}"), ("impl _W {\n", ""))
# Kotlin and Swift first close a class cut before its end (ChunkHound's first piece of a long class, or one cut
# inside a method): Kotlin's grammar names no class whose brace is missing. Measured on 400 random 3-15 line
# windows of each 40-line sample in tests/project/test_definitions.py, these found 1,181 of 1,213 definitions
# in Kotlin (1,040 without a wrapper, 1,089 with the class wrappers alone) and 1,024 of 1,042 in Swift (996
# without), none wrongly.
_OPEN_CLASS_WRAPPERS = (("", "\n}"), ("", "\n}\n}"), *_BRACE_CLASS_WRAPPERS)


@dataclass(frozen=True)
class _Syntax:
    """How one ChunkHound language is read: its grammar, node table and fragment wrappers."""

    grammar: str
    labels: Mapping[str, str]
    wrappers: tuple[tuple[str, str], ...] = ()
    # Node types labelled by a keyword among their tokens, not by their type (Swift's ``class_declaration`` is a
    # ``struct`` too, an Elixir ``call`` is a definition only when it calls ``defmodule``, ``def``, ...). A node
    # of such a type without one of those keywords keeps its ``labels`` entry, or is no definition without one.
    keywords: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def python(self) -> bool:
        """Python alone labels a function by where it sits (``method`` in a class or an indented fragment)."""
        return self.grammar == "python"


_JAVASCRIPT_LABELS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
}
_TYPESCRIPT_LABELS = {
    **_JAVASCRIPT_LABELS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
}
_GO = _Syntax(
    grammar="go",
    labels={
        "function_declaration": "function",
        "method_declaration": "method",
        # Named on each type_spec / type_alias child (see _names); a group yields one entry per type.
        "type_declaration": "type",
    },
)
_RUST = _Syntax(
    grammar="rust",
    labels={
        "function_item": "function",
        "struct_item": "struct",
        "enum_item": "enum",
        "impl_item": "impl",
        "trait_item": "trait",
    },
    wrappers=_RUST_WRAPPERS,
)
_JAVA = _Syntax(
    grammar="java",
    labels={
        "class_declaration": "class",
        "interface_declaration": "interface",
        "method_declaration": "method",
        "enum_declaration": "enum",
    },
    wrappers=_BRACE_CLASS_WRAPPERS,
)
_KOTLIN = _Syntax(
    grammar="kotlin",
    labels={
        "class_declaration": "class",  # enum, data and sealed classes too
        "object_declaration": "object",
        "companion_object": "object",  # reported only when named (``companion object Factory``)
        "function_declaration": "function",
        "type_alias": "type",
    },
    wrappers=_OPEN_CLASS_WRAPPERS,
    keywords={"class_declaration": {"interface": "interface"}},
)
_SWIFT = _Syntax(
    grammar="swift",
    labels={
        "class_declaration": "class",
        "protocol_declaration": "protocol",
        "function_declaration": "function",
        "protocol_function_declaration": "function",
        "init_declaration": "function",
        "typealias_declaration": "type",
    },
    wrappers=_OPEN_CLASS_WRAPPERS,
    keywords={"class_declaration": {k: k for k in ("class", "struct", "enum", "extension", "actor")}},
)
_ELIXIR = _Syntax(
    grammar="elixir",
    labels={},
    keywords={
        "call": {
            "defmodule": "module",
            "defprotocol": "protocol",
            "defimpl": "impl",
            "def": "function",
            "defp": "function",
            "defmacro": "macro",
            "defmacrop": "macro",
        }
    },
)

# Keys are ChunkHound's language names; JSX has no grammar of its own (tree-sitter-javascript parses JSX).
_SYNTAXES: dict[str, _Syntax] = {
    "python": _Syntax("python", {"function_definition": "function", "class_definition": "class"}),
    "javascript": _Syntax("javascript", _JAVASCRIPT_LABELS, _BRACE_CLASS_WRAPPERS),
    "jsx": _Syntax("javascript", _JAVASCRIPT_LABELS, _BRACE_CLASS_WRAPPERS),
    "typescript": _Syntax("typescript", _TYPESCRIPT_LABELS, _BRACE_CLASS_WRAPPERS),
    "tsx": _Syntax("tsx", _TYPESCRIPT_LABELS, _BRACE_CLASS_WRAPPERS),
    "go": _GO,
    "rust": _RUST,
    "java": _JAVA,
    "kotlin": _KOTLIN,
    "swift": _SWIFT,
    "elixir": _ELIXIR,
}

# Fragments worth a wrapper are single chunks (a few KB); larger broken code is a whole file that a wrapper
# will not fix, and tree-sitter's error recovery is slow on it (measured: 1.4 s per parse of 200 KB of
# garbage as TypeScript), so it is parsed once.
_MAX_RETRY_BYTES = 64 * 1024

# One parser per grammar and thread: a tree-sitter Parser must not be used by two threads at once.
_local = threading.local()


def definitions(code: str, language: str) -> str:
    """Return the named definitions in ``code`` as ``"class Cache, method get, method put"``.

    Args:
        code: A hit's code: a whole file, a chunk, or a fragment such as one method cut from its class.
        language: ChunkHound's language name (``python``, ``typescript``, ``tsx``, ``javascript``, ``jsx``,
            ``go``, ``rust``, ``java``, ``kotlin``, ``swift``, ``elixir``); any other returns ``""`` unparsed.

    Returns:
        ``"{label} {name}"`` entries in source order, duplicates dropped, joined by ``", "``; ``""`` when
        there are none. The rules for nesting, fragments and syntax errors are in the module docstring.
    """
    syntax = _SYNTAXES.get(language.lower())
    if syntax is None or not code.strip():
        return ""
    # "replace" makes any str encodable (lone surrogates); names are sliced from these same bytes, never
    # from ``code``: tree-sitter offsets count UTF-8 bytes, not characters.
    source = code.encode("utf-8", "replace")
    parser = _parser(syntax.grammar)
    tree = parser.parse(source)
    found = _extract(tree.root_node, source, syntax, 0, len(source))
    if not tree.root_node.has_error or len(source) > _MAX_RETRY_BYTES:
        return _join(found)
    for prefix, suffix in syntax.wrappers:
        head = prefix.encode()
        wrapped = head + source + suffix.encode()
        retry = parser.parse(wrapped)
        if retry.root_node.has_error:
            continue
        names = _extract(retry.root_node, wrapped, syntax, len(head), len(head) + len(source))
        if any(name in _STATEMENT_KEYWORDS for _, name in names):
            continue
        return _join(names)
    return _join(found)


@dataclass(frozen=True)
class Definition:
    """One definition of a whole file: where it is (1-based lines, Python decorators included) and the names of
    the definitions around it, outermost first (``("QuerySet",)`` for a method of ``QuerySet``)."""

    label: str
    name: str
    start_line: int
    end_line: int
    parents: tuple[str, ...]


def outline(text: str, language: str) -> list[Definition]:
    """Every definition of a file (the labels of ``definitions``, function bodies not entered), in source order.

    ChunkHound cuts a long class or function into pieces, and the piece that holds a method seldom holds its
    class's header: which class a method is in, and where a cut definition starts and ends, come from the
    file's own syntax. ``[]`` for a language outside the table.
    """
    syntax = _SYNTAXES.get(language.lower())
    if syntax is None or not text.strip():
        return []
    source = text.encode("utf-8", "replace")
    root = _parser(syntax.grammar).parse(source).root_node
    found: list[Definition] = []
    stack: list[tuple[Node, tuple[str, ...], bool]] = [(root, (), False)]  # (node, parent names, in a class)
    while stack:
        node, parents, in_class = stack.pop()
        if node.type in _ANONYMOUS_FUNCTIONS:
            continue
        label = _label(node, source, syntax)
        inner = parents
        if label is not None:
            if syntax.python and label == "function" and in_class:
                label = "method"
            span = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node
            around = (*parents, *_receiver(node, source))
            for owner, name in _names(node, syntax, label):
                if _header_is_clean(owner, name):
                    text_of = source[name.start_byte : name.end_byte].decode("utf-8", "replace")
                    found.append(Definition(label, text_of, span.start_point[0] + 1, span.end_point[0] + 1, around))
                    inner = (*parents, text_of)
            if label in _FUNCTION_LABELS:
                continue
            in_class = in_class or label in ("class", "impl", "trait", "interface")
        stack.extend((child, inner, in_class) for child in reversed(node.named_children))
    found.sort(key=lambda d: (d.start_line, -d.end_line))
    return found


def enclosing(definitions: Sequence[Definition], name: str, start_line: int, end_line: int) -> Definition | None:
    """The innermost definition called ``name`` (any case) whose lines overlap ``start_line``..``end_line``."""
    wanted = name.lower()
    matching = [
        d for d in definitions if d.name.lower() == wanted and d.start_line <= end_line and start_line <= d.end_line
    ]
    return min(matching, key=lambda d: d.end_line - d.start_line, default=None)


def _parser(grammar: str) -> Parser:
    """This thread's parser for ``grammar``, created on first use (10-20 ms; later calls reuse it)."""
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(grammar)
    if parser is None:
        from tree_sitter_language_pack import get_parser

        parser = parsers[grammar] = get_parser(grammar)
    return parser


def _extract(root: Node, source: bytes, syntax: _Syntax, low: int, high: int) -> list[tuple[str, str]]:
    """(label, name) of each reportable definition whose name lies in ``source[low:high]``, in source order.

    An explicit stack, not recursion and not a tree-sitter query: trees can be deeper than Python's
    recursion limit, and a query over ``"(" * 100_000`` took 5 s (tree-sitter 0.26) where this walk takes 5 ms.
    """
    found: list[tuple[int, str, str]] = []
    stack: list[tuple[Node, bool]] = [(root, False)]  # (node, directly or indirectly inside a class)
    while stack:
        node, in_class = stack.pop()
        if node.type in _ANONYMOUS_FUNCTIONS:
            continue
        label = _label(node, source, syntax)
        if label is not None:
            if syntax.python and label == "function" and (in_class or _indented_top_level(node)):
                label = "method"
            for owner, name in _names(node, syntax, label):
                if low <= name.start_byte and name.end_byte <= high and _header_is_clean(owner, name):
                    text = source[name.start_byte : name.end_byte].decode("utf-8", "replace")
                    found.append((name.start_byte, label, " ".join(text.split())))
            if label in _FUNCTION_LABELS:
                continue  # a body is not entered (module docstring)
            in_class = in_class or label == "class"
        stack.extend((child, in_class) for child in reversed(node.named_children))
    found.sort(key=lambda entry: entry[0])
    return [(label, name) for _, label, name in found]


def _indented_top_level(node: Node) -> bool:
    """True for an indented Python ``def`` directly in the module, decorated or not (not under ``if``)."""
    if node.start_point[1] == 0:
        return False
    parent = node.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    return parent is not None and parent.type == "module"


def _label(node: Node, source: bytes, syntax: _Syntax) -> str | None:
    """The node's label: its keyword's among its own tokens (``syntax.keywords``), else its type's, else None."""
    keywords = syntax.keywords.get(node.type)
    if keywords:
        for child in node.children:  # Swift's `struct`, Kotlin's `interface`, Elixir's `def`: a leaf of the node
            if child.child_count == 0:
                label = keywords.get(source[child.start_byte : child.end_byte].decode("utf-8", "replace"))
                if label is not None:
                    return label
    return syntax.labels.get(node.type)


def _names(node: Node, syntax: _Syntax, label: str) -> list[tuple[Node, Node]]:
    """(owner, name) pairs of a definition: one, none (anonymous or broken), or one per type in a Go group.

    The owner is the node whose header must be clean: the definition, or the Go ``type_spec`` naming one type.
    """
    if syntax.grammar == "kotlin":  # no name field: the node's own identifier (a receiver type is a child's)
        name = next((c for c in node.children if c.type in ("type_identifier", "simple_identifier")), None)
        return [] if name is None else [(node, name)]
    if syntax.grammar == "elixir":
        name = _elixir_name(node, label)
        return [] if name is None else [(node, name)]
    if node.type == "type_declaration":  # Go: type A struct{}; type ( A ...; B ... ); type C = D
        return [
            (spec, name)
            for spec in node.named_children
            if spec.type in ("type_spec", "type_alias") and (name := spec.child_by_field_name("name")) is not None
        ]
    if node.type == "impl_item":  # Rust: the self type, not the trait, with generics and path removed
        name = node.child_by_field_name("type")
        while name is not None and name.type in ("generic_type", "reference_type", "scoped_type_identifier"):
            field = "name" if name.type == "scoped_type_identifier" else "type"
            name = name.child_by_field_name(field)
        return [] if name is None else [(node, name)]
    name = node.child_by_field_name("name")
    if name is not None and name.type == "user_type":  # Swift: `extension Foo.Bar<T>` is named `Bar`, as its type
        name = next((c for c in reversed(name.children) if c.type == "type_identifier"), None)
    return [] if name is None else [(node, name)]


def _receiver(node: Node, source: bytes) -> tuple[str, ...]:
    """A Go method's type, its receiver's (``func (m *Mux[T]) Handle`` is in ``Mux``); nothing for another node."""
    receiver = node.child_by_field_name("receiver") if node.type == "method_declaration" else None
    kind = next((c.child_by_field_name("type") for c in receiver.named_children), None) if receiver else None
    while kind is not None and kind.type in ("pointer_type", "generic_type"):  # ``*Mux``, ``Stack[T]``
        kind = kind.child_by_field_name("type") or next(iter(kind.named_children), None)
    named = kind is not None and kind.type == "type_identifier"
    return (source[kind.start_byte : kind.end_byte].decode("utf-8", "replace"),) if named else ()


def _elixir_name(call: Node, label: str) -> Node | None:
    """What a definition call names: ``defmodule``'s alias, the called name of ``def name(x) when guard``,
    ``defimpl``'s ``for:`` type (as a Rust ``impl``; without ``for:`` it is the module around it: no name)."""
    arguments = next((c for c in call.named_children if c.type == "arguments"), None)
    if arguments is None or not arguments.named_children:
        return None
    head = arguments.named_children[0]
    if label == "impl":
        pairs = [p for c in arguments.named_children if c.type == "keywords" for p in c.named_children]
        head = next((p.named_children[-1] for p in pairs if (p.text or b"").startswith(b"for:")), None)
        return head if head is not None and head.type == "alias" else None
    if head.type == "binary_operator" and any(c.type == "when" for c in head.children):
        head = head.child_by_field_name("left")
    if head is not None and head.type == "call":
        head = head.child_by_field_name("target")
    return head if head is not None and head.type in ("identifier", "alias") else None


def _header_is_clean(node: Node, name: Node) -> bool:
    """True when the definition's nodes up to and including its name hold no syntax error."""
    if name.is_missing or name.start_byte == name.end_byte:
        return False
    if not node.has_error:
        return True
    for child in node.children:
        if child.start_byte >= name.end_byte:
            break
        if child.is_error or child.is_missing or child.has_error:
            return False
    return True


def _join(found: list[tuple[str, str]]) -> str:
    """``"label name"`` entries joined by ``", "``, the first of each kept, statement keywords dropped."""
    return ", ".join(dict.fromkeys(f"{label} {name}" for label, name in found if name not in _STATEMENT_KEYWORDS))
