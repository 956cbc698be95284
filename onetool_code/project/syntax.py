"""Per language: what each tree-sitter node is to the chunker, in ChunkHound's vocabulary.

A ``classify`` function looks at one node in one scope and answers with an ``Item``: a definition (its chunk
type, its name, where its members or nested definitions live), an import, a variable, a comment, something that
sticks to the next definition (decorators, attributes), or None (a plain statement).

The chunk types follow what ChunkHound 6.1.0 stores for the same construct (measured on real indexes): Python
methods and Rust ``fn``s are ``function``; Go, Java and JavaScript/TypeScript methods are ``method``; Rust
structs are ``class``; Go type declarations are ``type``; Java fields and TS/JS class fields are ``field``.
Where ChunkHound's output is an accident rather than a mapping we chose the mapping it applies elsewhere:
an exported TS interface is an ``interface`` named after it (ChunkHound: ``function definition_line_10``),
and a Rust ``impl`` block is a ``class`` named after its self type (ChunkHound: ``function`` named after its
first method).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node


class Scope(enum.Enum):
    """Where a node sits: at file level, among a class's members, or inside a function body."""

    MODULE = "module"
    CONTAINER = "container"
    BODY = "body"


class Role(enum.Enum):
    DEFINITION = "definition"
    IMPORT = "import"
    VARIABLE = "variable"
    COMMENT = "comment"
    DOCSTRING = "docstring"
    ATTACH = "attach"  # decorators, attributes: part of the definition that follows
    TRANSPARENT = "transparent"  # a wrapper whose children are read in the same scope
    IGNORE = "ignore"


@dataclass(frozen=True)
class Item:
    role: Role
    chunk_type: str = ""
    name: str = ""
    body: Node | None = None
    body_scope: Scope = Scope.BODY


@dataclass(frozen=True)
class Syntax:
    """How one language is read: its grammar name and node classifier."""

    grammar: str
    classify: Callable[[Node, Scope], Item | None]
    comment_symbol: Callable[[Node, int], str] = lambda node, line: f"comment_line_{line}"


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


def _name(node: Node, field: str = "name") -> str:
    return _text(node.child_by_field_name(field))


def _definition(chunk_type: str, name: str, body: Node | None, scope: Scope = Scope.BODY) -> Item:
    return Item(Role.DEFINITION, chunk_type, name, body, scope)


def _import(name: str) -> Item:
    return Item(Role.IMPORT, "import", name)


def _variable(name: str, chunk_type: str = "variable") -> Item:
    return Item(Role.VARIABLE, chunk_type, name)


COMMENT = Item(Role.COMMENT, "comment")
ATTACH = Item(Role.ATTACH)
TRANSPARENT = Item(Role.TRANSPARENT)
IGNORE = Item(Role.IGNORE)


# -- Python --------------------------------------------------------------------------------------------------


def _python(node: Node, scope: Scope) -> Item | None:
    kind = node.type
    if kind == "comment":
        return COMMENT
    if kind == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return _python(inner, scope) if inner is not None else None
    if kind == "function_definition":
        return _definition("function", _name(node), node.child_by_field_name("body"))
    if kind == "class_definition":
        return _definition("class", _name(node), node.child_by_field_name("body"), Scope.CONTAINER)
    if scope is Scope.BODY:
        return None
    if kind == "expression_statement" and node.named_child_count == 1:
        return _python(node.named_children[0], scope)
    if kind in ("import_statement", "future_import_statement"):
        names = node.children_by_field_name("name")
        return _import(f"import_{_python_module(names[0]) if names else ''}")
    if kind == "import_from_statement":
        return _import(f"from_{_text(node.child_by_field_name('module_name'))}")
    if kind == "string":
        return Item(Role.DOCSTRING, "comment")
    if kind == "assignment":
        target = node.child_by_field_name("left")
        value = node.child_by_field_name("right")
        if target is None:
            return None
        name = _text(target).split(",")[0].strip()
        return _variable(name, "object" if value is not None and value.type == "dictionary" else "variable")
    return None


def _python_module(node: Node) -> str:
    if node.type == "aliased_import":
        return _name(node)
    return _text(node)


# -- JavaScript, TypeScript, TSX -----------------------------------------------------------------------------

_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def _javascript(node: Node, scope: Scope) -> Item | None:
    kind = node.type
    if kind == "comment":
        return COMMENT
    if kind in ("export_statement", "ambient_declaration"):
        inner = node.child_by_field_name("declaration")
        if inner is None:
            inner = next((c for c in node.named_children if c.type not in ("comment", "decorator")), None)
        if inner is None:
            return None
        item = _javascript(inner, scope)
        if item is None and inner.type in _JS_FUNCTION_VALUES:  # export default function () {}
            return _definition("function", "default", inner.child_by_field_name("body"))
        return item
    if kind in ("function_declaration", "generator_function_declaration", "function_signature"):
        return _definition("function", _name(node), node.child_by_field_name("body"))
    if kind in ("class_declaration", "abstract_class_declaration", "class"):
        return _definition("class", _name(node), node.child_by_field_name("body"), Scope.CONTAINER)
    if kind == "interface_declaration":
        return _definition("interface", _name(node), None)
    if kind == "type_alias_declaration":
        return _definition("type_alias", _name(node), None)
    if kind == "enum_declaration":
        return _definition("enum", _name(node), None)
    if kind in ("internal_module", "module"):
        return _definition("namespace", _name(node).strip("'\""), node.child_by_field_name("body"), Scope.MODULE)
    if kind == "expression_statement" and node.named_child_count == 1:
        inner = node.named_children[0]
        if inner.type in ("internal_module", "module"):
            return _javascript(inner, scope)
    if kind == "decorator":
        return ATTACH
    if scope is Scope.CONTAINER:
        if kind == "method_definition":
            return _definition("method", _name(node), node.child_by_field_name("body"))
        if kind in ("public_field_definition", "field_definition"):
            value = node.child_by_field_name("value")
            name = _name(node) or _name(node, "property")
            if value is not None and value.type in _JS_FUNCTION_VALUES:
                return _definition("method", name, value.child_by_field_name("body"))
            return _variable(name, "field")
        return None
    if kind in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if not declarators:
            return None
        first = declarators[0]
        name = _name(first)
        value = first.child_by_field_name("value")
        if len(declarators) == 1 and value is not None:
            if value.type in _JS_FUNCTION_VALUES:
                return _definition("function", name, value.child_by_field_name("body"))
            if value.type == "class":
                return _definition("class", name, value.child_by_field_name("body"), Scope.CONTAINER)
        if scope is Scope.BODY:
            return None
        return _variable(name, "object" if value is not None and value.type == "object" else "variable")
    if scope is Scope.BODY:
        return None
    if kind == "import_statement":
        source = node.child_by_field_name("source")
        return _import(f"import_{_text(source).strip(chr(39) + chr(34) + '`')}")
    return None


# -- Go ------------------------------------------------------------------------------------------------------


def _go(node: Node, scope: Scope) -> Item | None:
    kind = node.type
    if kind == "comment":
        return COMMENT
    if kind == "function_declaration":
        return _definition("function", _name(node), node.child_by_field_name("body"))
    if kind == "method_declaration":
        receiver = _go_receiver(node.child_by_field_name("receiver"))
        name = _name(node)
        return _definition("method", f"{receiver}.{name}" if receiver else name, node.child_by_field_name("body"))
    if scope is Scope.BODY:
        return None
    if kind == "type_declaration":
        spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
        return _definition("type", _name(spec) if spec is not None else "", None)
    if kind in ("const_declaration", "var_declaration"):
        spec = next((c for c in node.named_children if c.type in ("const_spec", "var_spec")), None)
        if spec is None:
            spec_list = next((c for c in node.named_children if c.type == "var_spec_list"), None)
            spec = spec_list.named_children[0] if spec_list is not None and spec_list.named_child_count else None
        return _variable(_name(spec) if spec is not None else "")
    if kind == "package_clause":
        package = next((c for c in node.named_children if c.type == "package_identifier"), None)
        return _import(f"package_{_text(package)}")
    if kind == "import_declaration":
        paths = [_text(spec.child_by_field_name("path")).strip('"`') for spec in _descendants(node, "import_spec")]
        return _import("_".join(f"import_{p}" for p in paths))
    return None


def _go_receiver(receiver: Node | None) -> str:
    """The receiver's type name without pointer or type arguments: ``(s *Store[T])`` -> ``Store``."""
    if receiver is None:
        return ""
    for parameter in receiver.named_children:
        node = parameter.child_by_field_name("type")
        while node is not None and node.type in ("pointer_type", "generic_type", "parenthesized_type"):
            node = node.child_by_field_name("type") or (node.named_children[0] if node.named_child_count else None)
        if node is not None:
            return _text(node)
    return ""


def _descendants(node: Node, kind: str) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            found.append(current)
        else:
            stack.extend(reversed(current.named_children))
    return found


# -- Rust ----------------------------------------------------------------------------------------------------


def _rust(node: Node, scope: Scope) -> Item | None:
    kind = node.type
    if kind in ("line_comment", "block_comment"):
        return COMMENT
    if kind in ("attribute_item", "inner_attribute_item"):
        return ATTACH
    if kind == "function_item":
        return _definition("function", _name(node), node.child_by_field_name("body"))
    if kind == "impl_item":
        return _definition("class", _rust_type_name(node.child_by_field_name("type")), node.child_by_field_name("body"), Scope.CONTAINER)  # fmt: skip
    if kind == "trait_item":
        return _definition("trait", _name(node), node.child_by_field_name("body"), Scope.CONTAINER)
    if kind in ("struct_item", "union_item"):
        return _definition("class", _name(node), None)
    if kind == "enum_item":
        return _definition("enum", _name(node), None)
    if kind == "type_item":
        return _definition("type_alias", _name(node), None)
    if kind == "macro_definition":
        return _definition("macro", _name(node), None)
    if kind == "mod_item":
        body = node.child_by_field_name("body")
        if body is not None:
            return _definition("namespace", _name(node), body, Scope.MODULE)
        return _import(f"mod_{_name(node)}") if scope is not Scope.BODY else None
    if scope is Scope.BODY:
        return None
    if kind in ("const_item", "static_item"):
        return _variable(_name(node))
    if kind == "use_declaration":
        return _import(f"use_{_text(node.child_by_field_name('argument'))}")
    if kind == "extern_crate_declaration":
        return _import(f"extern_crate_{_name(node)}")
    return None


def _rust_type_name(node: Node | None) -> str:
    """``a::b::Stack<T>`` -> ``Stack``: the impl's self type as its ``struct``/``enum`` is named."""
    while node is not None and node.type in ("generic_type", "scoped_type_identifier", "reference_type"):
        inner = node.child_by_field_name("type") or node.child_by_field_name("name")
        if inner is None:
            break
        node = inner
    return _text(node)


def _rust_comment_symbol(node: Node, line: int) -> str:
    text = _text(node)
    if text.startswith(("///", "//!", "/**", "/*!")):
        return f"doc_comment_line_{line}"
    return f"comment_line_{line}"


# -- Java ----------------------------------------------------------------------------------------------------

_JAVA_CONTAINERS = {
    "class_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
    "enum_declaration": "enum",
}


def _java(node: Node, scope: Scope) -> Item | None:
    kind = node.type
    if kind in ("line_comment", "block_comment"):
        return COMMENT
    if kind in _JAVA_CONTAINERS:
        return _definition(_JAVA_CONTAINERS[kind], _name(node), node.child_by_field_name("body"), Scope.CONTAINER)
    if kind == "enum_body_declarations":
        return TRANSPARENT
    if kind == "method_declaration":
        return _definition("method", _name(node), node.child_by_field_name("body"))
    if kind in ("constructor_declaration", "compact_constructor_declaration"):
        return _definition("constructor", _name(node), node.child_by_field_name("body"))
    if scope is Scope.BODY:
        return None
    if kind in ("field_declaration", "constant_declaration"):
        declarator = node.child_by_field_name("declarator")
        return _variable(_name(declarator) if declarator is not None else "", "field")
    if kind == "package_declaration":
        name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        return _import(f"package_{_text(name).replace('.', '_')}")
    if kind == "import_declaration":
        name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        return _import(f"import_{_text(name).rsplit('.', 1)[-1]}")
    return None


SYNTAXES: dict[str, Syntax] = {
    "python": Syntax("python", _python),
    "javascript": Syntax("javascript", _javascript),
    "jsx": Syntax("javascript", _javascript),
    "typescript": Syntax("typescript", _javascript),
    "tsx": Syntax("tsx", _javascript),
    "go": Syntax("go", _go),
    "rust": Syntax("rust", _rust, _rust_comment_symbol),
    "java": Syntax("java", _java),
}
