"""Chunking per language: ChunkHound's chunk types and symbols, exact lines and bytes, ``_partN`` splitting."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from onetool_code import schema
from onetool_code.project.chunker import chunk_file
from onetool_code.project.chunks import MAX_NON_WHITESPACE, Chunk, split, weight
from onetool_code.project.languages import language_for
from onetool_code.project.walk import walk

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "project"

PYTHON = '''"""Module doc."""
import os
import sys as system
from pathlib import Path, PurePath
from . import sibling

CONSTANT = 1
lower_var = [1, 2]

# comment one
# comment two
@decorator
def top(a, b=1):
    """Function doc."""
    x = a + b
    return x


class Thing(Base):
    """Class doc."""
    attr: int = 3

    def method(self):
        return self.attr

    @property
    def prop(self):
        return 1


async def atop():
    def inner():
        pass
    return inner

# a free comment

if __name__ == "__main__":
    top(1)
'''

TYPESCRIPT = """import { readFile } from "fs";
import * as path from "path";

// A comment line
// second line
interface Options {
  verbose: boolean;
}

export interface Exported {
  name: string;
}

type Alias = string | number;
export type ExportedAlias = Alias[];

enum Color { Red, Green }

const handler = (x: number): number => x * 2;
export const settings = { retries: 3 };

/** Plain docs. */
function plain(a: number): number {
  return a + 1;
}

export default class Widget {
  private count = 0;
  constructor(public name: string) {}
  render(): string {
    return this.name;
  }
}

namespace NS {
  export const x = 1;
}
"""

TSX = """import React from "react";

interface Props { title: string }

export function Header({ title }: Props) {
  return <h1>{title}</h1>;
}

const Footer = () => <footer>bye</footer>;

export default Footer;
"""

JAVASCRIPT = """const fs = require("fs");
import { x } from "./x.js";

/** Doc for add */
function add(a, b) {
  function helper() { return 0; }
  return a + b + helper();
}

class Counter {
  count = 0;
  inc() { this.count += 1; }
}

module.exports = { add };
"""

GO = """// Package main does things.
package main

import (
	"fmt"
	"strings"
)

const Version = "1.0"

// Greeter greets.
type Greeter struct {
	Name string
}

type Speaker interface {
	Speak() string
}

// Speak says hello.
func (g *Greeter) Speak() string {
	return "hi " + g.Name
}

func (s *Store[T]) Get() {}

func main() {
	fmt.Println(strings.ToUpper("a"))
}
"""

RUST = """//! Crate docs.
use std::fmt;
use std::collections::HashMap;

/// A point.
#[derive(Debug)]
pub struct Point {
    x: i32,
}

pub enum Shape { Circle(f64) }

pub trait Area {
    fn area(&self) -> f64;
}

impl Area for Shape {
    fn area(&self) -> f64 { 1.0 }
}

impl<T> a::Stack<T> {
    pub fn new() -> Self { todo!() }
}

pub type Map = HashMap<String, Point>;

const MAX: usize = 10;

macro_rules! square { ($x:expr) => { $x * $x }; }

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> i32 { 1 }
}
"""

JAVA = """package com.example.shapes;

import java.util.List;
import java.util.ArrayList;

/**
 * A shape registry.
 */
public class Shapes {
    // the shapes
    private final List<Shape> items = new ArrayList<>();

    public Shapes() {
        super();
    }

    /** Add one. */
    public void add(Shape s) {
        items.add(s);
    }

    interface Shape {
        double area();
    }

    enum Kind {
        CIRCLE, SQUARE;
        String label() { return name(); }
    }

    record Point(int x, int y) {}
}
"""

MARKDOWN = """Preamble text before any heading.

# Title

Intro paragraph.

## Getting started!

```bash
pip install thing
```

| a | b |
|---|---|
| 1 | 2 |

Setext heading
--------------

Text.
"""

EXPECTED: dict[str, tuple[str, str, list[tuple[str, str, int, int]]]] = {
    "python": (
        "tool.py",
        PYTHON,
        [
            ("comment", "module_docstring_line_1", 1, 1),
            ("import", "import_os_import_sys_from_pathlib_from_.", 2, 5),
            ("variable", "CONSTANT", 7, 8),
            ("function", "top", 10, 16),
            ("class", "Thing", 19, 28),
            ("variable", "attr", 21, 21),
            ("function", "method", 23, 24),
            ("function", "prop", 26, 28),
            ("function", "atop", 31, 34),
            ("function", "inner", 32, 33),
            ("comment", "comment_line_36", 36, 36),
            ("block", "block_line_38", 38, 39),
        ],
    ),
    "typescript": (
        "mod.ts",
        TYPESCRIPT,
        [
            ("import", "import_fs_import_path", 1, 2),
            ("interface", "Options", 4, 8),
            ("interface", "Exported", 10, 12),
            ("type_alias", "Alias", 14, 14),
            ("type_alias", "ExportedAlias", 15, 15),
            ("enum", "Color", 17, 17),
            ("function", "handler", 19, 19),
            ("object", "settings", 20, 20),
            ("function", "plain", 22, 25),
            ("class", "Widget", 27, 33),
            ("field", "count", 28, 28),
            ("method", "constructor", 29, 29),
            ("method", "render", 30, 32),
            ("namespace", "NS", 35, 37),
            ("variable", "x", 36, 36),
        ],
    ),
    "tsx": (
        "comp.tsx",
        TSX,
        [
            ("import", "import_react", 1, 1),
            ("interface", "Props", 3, 3),
            ("function", "Header", 5, 7),
            ("function", "Footer", 9, 9),
            ("block", "block_line_11", 11, 11),
        ],
    ),
    "javascript": (
        "lib.js",
        JAVASCRIPT,
        [
            ("variable", "fs", 1, 1),
            ("import", "import_./x.js", 2, 2),
            ("function", "add", 4, 8),
            ("function", "helper", 6, 6),
            ("class", "Counter", 10, 13),
            ("field", "count", 11, 11),
            ("method", "inc", 12, 12),
            ("block", "block_line_15", 15, 15),
        ],
    ),
    "go": (
        "main.go",
        GO,
        [
            ("comment", "comment_line_1", 1, 1),
            ("import", "package_main_import_fmt_import_strings", 2, 7),
            ("variable", "Version", 9, 9),
            ("type", "Greeter", 11, 14),
            ("type", "Speaker", 16, 18),
            ("method", "Greeter.Speak", 20, 23),
            ("method", "Store.Get", 25, 25),
            ("function", "main", 27, 29),
        ],
    ),
    "rust": (
        "lib.rs",
        RUST,
        [
            ("comment", "doc_comment_line_1", 1, 1),
            ("import", "use_std::fmt_use_std::collections::HashMap", 2, 3),
            ("class", "Point", 5, 9),
            ("enum", "Shape", 11, 11),
            ("trait", "Area", 13, 15),
            ("class", "Shape", 17, 19),
            ("function", "area", 18, 18),
            ("class", "Stack", 21, 23),
            ("function", "new", 22, 22),
            ("type_alias", "Map", 25, 25),
            ("variable", "MAX", 27, 27),
            ("macro", "square", 29, 29),
            ("namespace", "tests", 31, 36),
            ("import", "use_super::*", 33, 33),
            ("function", "helper", 35, 35),
        ],
    ),
    "java": (
        "Shapes.java",
        JAVA,
        [
            ("import", "package_com_example_shapes_import_List_import_ArrayList", 1, 4),
            ("class", "Shapes", 6, 32),
            ("field", "items", 10, 11),
            ("constructor", "Shapes", 13, 15),
            ("method", "add", 17, 20),
            ("interface", "Shape", 22, 24),
            ("method", "area", 23, 23),
            ("enum", "Kind", 26, 29),
            ("method", "label", 28, 28),
            ("class", "Point", 31, 31),
        ],
    ),
    "markdown": (
        "README.md",
        MARKDOWN,
        [
            ("paragraph", "paragraph_1", 1, 1),
            ("header_1", "Title", 3, 5),
            ("header_2", "Getting_started", 7, 15),
            ("code_block", "code_block_bash", 9, 11),
            ("table", "table_13", 13, 15),
            ("header_2", "Setext_heading", 17, 20),
        ],
    ),
}


def shape(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [(c.chunk_type, c.symbol, c.start_line, c.end_line) for c in chunks]


def assert_exact(data: bytes, chunks: list[Chunk]) -> None:
    """Each chunk's code is its byte range of the file, and its lines are where those bytes are."""
    for chunk in chunks:
        assert data[chunk.start_byte : chunk.end_byte].decode() == chunk.code, chunk
        assert chunk.start_line == data[: chunk.start_byte].count(b"\n") + 1, chunk
        assert chunk.end_line == data[: chunk.end_byte].count(b"\n") + 1, chunk
        assert chunk.code.strip(), chunk


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_chunks_and_definitions_per_language(language):
    name, source, expected = EXPECTED[language]
    assert language_for(Path(name)) == language
    data = source.encode()
    chunks = chunk_file(data, language)
    assert shape(chunks) == expected
    assert_exact(data, chunks)
    assert {c.chunk_type for c in chunks} <= set(schema.CHUNK_TYPES)


def test_definitions_carry_the_comments_and_decorators_directly_above_them():
    chunks = {c.symbol: c for c in chunk_file(PYTHON.encode(), "python")}
    assert chunks["top"].code.startswith("# comment one\n# comment two\n@decorator\ndef top(a, b=1):")
    rust = {c.symbol: c for c in chunk_file(RUST.encode(), "rust")}
    assert rust["Point"].code.startswith("/// A point.\n#[derive(Debug)]\npub struct Point {")
    assert rust["tests"].code.startswith("#[cfg(test)]\nmod tests {")


def test_oversized_definitions_are_halved_into_numbered_parts():
    body = "".join(f"    value_{i} = compute_something(value_{i - 1}, argument_{i})\n" for i in range(1, 120))
    source = f"def giant():\n{body}    return value_119\n"
    data = source.encode()
    chunks = chunk_file(data, "python")
    assert all(c.chunk_type == "function" for c in chunks)
    symbols = [c.symbol for c in chunks]
    assert all(s.startswith("giant_part") for s in symbols)
    assert symbols[0].startswith("giant_part1_part1") and symbols[-1].startswith("giant_part2_part2")
    assert len(set(symbols)) == len(symbols)
    assert all(weight(c.code) <= MAX_NON_WHITESPACE for c in chunks)
    # The parts tile the function: consecutive lines, no gaps, no overlaps.
    assert chunks[0].start_line == 1 and chunks[-1].end_line == source.count("\n")
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line + 1
    assert_exact(data, chunks)


def test_one_huge_line_is_cut_near_its_middle_space():
    text = " ".join(f"word{i}" for i in range(600))
    chunk = Chunk("paragraph", "paragraph_1", text, 1, 1, 0, len(text))
    parts = split(chunk)
    assert [p.symbol for p in parts][:2] == ["paragraph_1_part1", "paragraph_1_part2"] or len(parts) > 2
    assert "".join(p.code for p in parts).replace(" ", "") == text.replace(" ", "")
    assert all(weight(p.code) <= MAX_NON_WHITESPACE and p.start_line == 1 for p in parts)
    assert_exact(text.encode(), parts)


def test_languages_without_a_grammar_get_paragraph_or_line_window_chunks():
    text = b"First paragraph.\nStill first.\n\nSecond paragraph.\n"
    assert shape(chunk_file(text, "text")) == [("paragraph", "paragraph_1", 1, 4)]
    code = "\n\n".join(f"int f{i}(void) {{ return {i} * {i} + compute_value({i}); }}" for i in range(60)).encode()
    chunks = chunk_file(code, "c")
    assert len(chunks) > 1
    assert all(c.chunk_type == "block" and c.symbol == f"block_line_{c.start_line}" for c in chunks)
    assert all(weight(c.code) <= MAX_NON_WHITESPACE for c in chunks)
    assert_exact(code, chunks)


def test_empty_and_whitespace_files_have_no_chunks():
    for language in ("python", "markdown", "text", "go"):
        assert chunk_file(b"", language) == []
        assert chunk_file(b"\n  \n", language) == []


def test_broken_code_is_still_indexed():
    data = b"def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    chunks = chunk_file(data, "python")
    assert "ok" in {c.symbol for c in chunks}
    covered = {line for c in chunks for line in range(c.start_line, c.end_line + 1)}
    assert {4, 5} <= covered
    assert_exact(data, chunks)


def test_deep_nesting_does_not_hit_the_recursion_limit():
    data = ("def f():\n    return " + "(" * 3000 + "1" + ")" * 3000 + "\n").encode()
    assert next(c.symbol for c in chunk_file(data, "python")).startswith("f")


def test_non_utf8_bytes_are_replaced_not_fatal():
    data = b"# caf\xe9\ndef f():\n    return '\xff'\n"
    chunks = chunk_file(data, "python")
    assert any(c.symbol == "f" for c in chunks)


def test_every_chunk_of_the_sample_project_is_exact_and_in_vocabulary(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    languages: set[str] = set()
    for source in walk(root).files:
        data = source.path.read_bytes()
        chunks = chunk_file(data, source.language)
        assert chunks or not data.strip(), source.rel
        assert_exact(data, chunks)
        assert {c.chunk_type for c in chunks} <= set(schema.CHUNK_TYPES), source.rel
        languages.add(source.language)
    assert {"python", "typescript", "tsx", "javascript", "go", "rust", "java", "markdown"} <= languages
