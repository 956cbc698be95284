"""Source bytes -> chunks in ChunkHound's vocabulary: tree-sitter for code, Markdown and text readers otherwise.

What a code file yields (``syntax.py`` says what each node is):

- one chunk per definition, at any depth (a class and its methods both: readers merge overlapping hits), with
  the comments, decorators and attributes directly above it (no blank line between) included, so a doc comment
  travels with the code it documents (variables and statements too; imports do not take comments);
- consecutive imports as one ``import`` chunk named ``import_os_from_pathlib``...; consecutive variables or
  fields at file or class level as one chunk named after the first; file-level statements (``if __name__``,
  top-level calls) as ``block`` chunks (``block_line_<n>``); free-standing comment runs as ``comment`` chunks
  (``comment_line_<n>``); a Python module docstring as ``module_docstring_line_1``;
- every chunk over ChunkHound's size budget halved into ``_partN`` pieces (``chunks.split``).

Not reproduced from ChunkHound 6.1.0, on purpose: its whole-file ``file_structure`` chunks (a copy of every
line), chunks for local variables inside function bodies, its ``embedded_sql`` detection, and the greedy merges
that let a chunk's symbol name one thing while its lines hold several.

Function bodies are searched for nested definitions with an explicit stack: generated code can nest deeper
than Python's recursion limit.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from onetool_code.project.chunks import MERGE_LIMIT, Chunk, make_chunk, split, weight
from onetool_code.project.markdown import chunk_markdown
from onetool_code.project.source import decode
from onetool_code.project.syntax import SYNTAXES, Item, Role, Scope, Syntax
from onetool_code.project.text import chunk_text

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# An import chunk's symbol joins its statements' names; a long import block gets a readable prefix only.
_MAX_SYMBOL = 200
_SPACE = re.compile(r"\s+")


def chunk_file(data: bytes, language: str) -> list[Chunk]:
    """The chunks of one file's bytes, ordered by position (outer chunks before the ones inside them).

    A file that is not UTF-8 is read as Latin-1, as ChunkHound 6.1.0 reads it, and chunked as that text in
    UTF-8, so its chunk text and symbols are ChunkHound's (measured: ``def crème_brûlée()``, not U+FFFD); line
    numbers do not change (``\n`` is the same byte in both), byte offsets count the UTF-8 text.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = decode(data).encode("utf-8")
    if language == "markdown":
        return chunk_markdown(data)
    syntax = SYNTAXES.get(language)
    if syntax is None:
        return chunk_text(data, language)
    return _CodeChunker(data, syntax).run()


def has_grammar(language: str) -> bool:
    return language in SYNTAXES or language == "markdown"


@functools.cache
def _parser(grammar: str) -> Parser:
    from tree_sitter_language_pack import get_parser

    return get_parser(grammar)  # type: ignore[arg-type]


def _last_row(node: Node) -> int:
    """The 0-based row of a node's last character (some comment nodes end just after their line break)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


class _Group:
    """Adjacent imports, variables or statements that become one chunk."""

    def __init__(self, role: Role | None, item: Item | None, start: Node, node: Node) -> None:
        self.role = role
        self.chunk_type = item.chunk_type if item is not None else "block"
        self.names = [item.name] if item is not None else []
        self.start = start
        self.end = node
        self.size = weight(node.text.decode("utf-8", errors="replace") if node.text else "")

    def accepts(self, role: Role | None, item: Item | None, node: Node) -> bool:
        same_kind = role is self.role and (item is None or item.chunk_type == self.chunk_type)
        size = weight(node.text.decode("utf-8", errors="replace") if node.text else "")
        return same_kind and self.size + size <= MERGE_LIMIT

    def add(self, item: Item | None, node: Node) -> None:
        if item is not None:
            self.names.append(item.name)
        self.end = node
        self.size += weight(node.text.decode("utf-8", errors="replace") if node.text else "")

    def symbol(self) -> str:
        line = self.start.start_point[0] + 1
        if self.role is Role.IMPORT:
            return "_".join(n for n in self.names if n) or f"import_line_{line}"
        if self.role is Role.VARIABLE:
            return self.names[0] or f"definition_line_{line}"
        return f"block_line_{line}"


class _CodeChunker:
    def __init__(self, data: bytes, syntax: Syntax) -> None:
        self.data = data
        self.syntax = syntax
        self.chunks: list[Chunk] = []

    def run(self) -> list[Chunk]:
        tree = _parser(self.syntax.grammar).parse(self.data)
        self.scan(tree.root_node, Scope.MODULE)
        return sorted(self.chunks, key=lambda c: (c.start_byte, -c.end_byte, c.chunk_type, c.symbol))

    # -- emitting ----------------------------------------------------------------------------------------------

    def emit(self, start: Node, end: Node, chunk_type: str, symbol: str) -> None:
        symbol = _SPACE.sub(" ", symbol).strip()[:_MAX_SYMBOL]
        chunk = make_chunk(self.data, start.start_byte, end.end_byte, start.start_point[0] + 1, chunk_type, symbol)
        if chunk is not None:
            self.chunks.extend(split(chunk))

    def emit_comments(self, nodes: list[Node]) -> None:
        """Free-standing comments: each run of adjacent comment lines is one chunk."""
        run: list[Node] = []
        for node in nodes:
            item = self.syntax.classify(node, Scope.MODULE)
            if item is None or item.role is not Role.COMMENT:
                continue  # a decorator or attribute with nothing below it is too small to be worth a chunk
            if run and node.start_point[0] > _last_row(run[-1]) + 1:
                self.emit_comment_run(run)
                run = []
            run.append(node)
        if run:
            self.emit_comment_run(run)

    def emit_comment_run(self, run: list[Node]) -> None:
        line = run[0].start_point[0] + 1
        self.emit(run[0], run[-1], "comment", self.syntax.comment_symbol(run[0], line))

    def emit_group(self, group: _Group | None) -> None:
        if group is not None:
            self.emit(group.start, group.end, group.chunk_type, group.symbol())

    def definition(self, start: Node, node: Node, item: Item) -> None:
        name = item.name or f"definition_line_{node.start_point[0] + 1}"
        self.emit(start, node, item.chunk_type, name)
        if item.body is None:
            return
        if item.body_scope is Scope.BODY:
            self.nested(item.body)
        else:
            self.scan(item.body, item.body_scope)

    # -- reading -----------------------------------------------------------------------------------------------

    def attach(self, pending: list[Node], node: Node) -> Node:
        """Where ``node``'s chunk starts: at the run of comments/attributes directly above it, if any.

        The other pending comments are emitted on their own; ``pending`` is emptied.
        """
        start = node
        keep = len(pending)
        while keep and _last_row(pending[keep - 1]) + 1 >= start.start_point[0]:
            keep -= 1
            start = pending[keep]
        self.emit_comments(pending[:keep])
        pending.clear()
        return start

    def scan(self, parent: Node, scope: Scope) -> None:
        """Chunks for the children of a file or a class-like body."""
        pending: list[Node] = []
        group: _Group | None = None
        first_statement = True
        for child in parent.named_children:
            item = self.syntax.classify(child, scope)
            role = item.role if item is not None else None
            if role in (Role.COMMENT, Role.ATTACH):
                self.emit_group(group)
                group = None
                pending.append(child)
                continue
            if role is Role.IGNORE:
                continue
            if role is Role.TRANSPARENT:
                self.emit_group(group)
                group = None
                self.emit_comments(pending)
                pending.clear()
                self.scan(child, scope)
                continue
            if role is Role.DOCSTRING:
                if scope is Scope.MODULE and first_statement:
                    self.emit_comments(pending)
                    pending.clear()
                    line = child.start_point[0] + 1
                    self.emit(child, child, "comment", f"module_docstring_line_{line}")
                    first_statement = False
                    continue
                if scope is Scope.CONTAINER:
                    continue  # a class docstring is part of the class chunk
                role, item = None, None
            first_statement = False
            if role is Role.DEFINITION and item is not None:
                self.emit_group(group)
                group = None
                self.definition(self.attach(pending, child), child, item)
                continue
            if role is None and scope is Scope.CONTAINER:
                self.emit_comments(pending)
                pending.clear()
                self.nested(child)
                continue
            if role is Role.IMPORT:  # a license header or package doc above imports is not about them
                self.emit_comments(pending)
                pending.clear()
                start = child
            else:
                start = self.attach(pending, child)
            if group is not None and start is child and group.accepts(role, item, child):
                group.add(item, child)
            else:
                self.emit_group(group)
                group = _Group(role, item, start, child)
            if role is None:
                self.nested(child)
        self.emit_group(group)
        self.emit_comments(pending)

    def nested(self, body: Node) -> None:
        """Definitions anywhere inside a function body or statement (nested functions, local classes)."""
        stack = list(reversed(body.named_children))
        while stack:
            node = stack.pop()
            item = self.syntax.classify(node, Scope.BODY)
            if item is not None and item.role is Role.DEFINITION:
                self.definition(node, node, item)
            else:
                stack.extend(reversed(node.named_children))
