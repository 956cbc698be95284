"""The indexer's file selection: .gitignore rules, ChunkHound's default excludes, odd files that must not crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from onetool_code.project.ignore import IgnoreRules
from onetool_code.project.languages import extension_of, language_for
from onetool_code.project.walk import check_content, read_file, walk


def write(root: Path, rel: str, text: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def rels(root: Path) -> list[str]:
    return [f.rel for f in walk(root).files]


# -- ignore rules --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "ignored"),
    [
        (["*.log"], "app.log", False, True),
        (["*.log"], "deep/down/app.log", False, True),
        (["*.log", "!keep.log"], "keep.log", False, False),
        (["*.log", "!keep.log"], "sub/keep.log", False, False),
        (["build/"], "build", True, True),
        (["build/"], "build", False, False),  # a file named build is not a directory
        (["build/"], "src/build", True, True),  # no slash inside: any depth
        (["/build"], "src/build", True, False),  # anchored
        (["/build"], "build", True, True),
        (["docs/*.md"], "docs/a.md", False, True),
        (["docs/*.md"], "docs/sub/a.md", False, False),  # * does not cross /
        (["docs/*.md"], "x/docs/a.md", False, False),  # a middle slash anchors
        (["**/gen"], "a/b/gen", True, True),
        (["**/gen"], "gen", True, True),
        (["a/**/z.py"], "a/z.py", False, True),
        (["a/**/z.py"], "a/b/c/z.py", False, True),
        (["out/**"], "out/x/y.py", False, True),
        # pathspec reads "out/**" as the directory too (git only its contents): the same files are ignored.
        (["out/**"], "out", True, True),
        (["file?.py"], "file1.py", False, True),
        (["file?.py"], "file12.py", False, False),
        (["[abc].py"], "b.py", False, True),
        (["[!abc].py"], "b.py", False, False),
        (["[!abc].py"], "d.py", False, True),
        (["\\#notes.md"], "#notes.md", False, True),
        (["# a comment", ""], "# a comment", False, False),
        (["\\!important.py"], "!important.py", False, True),
        (["trailing.py   "], "trailing.py", False, True),
    ],
)
def test_ignore_rule(lines, path, is_dir, ignored):
    assert IgnoreRules().with_lines("", lines).ignored(path, is_dir) is ignored


def test_nested_gitignore_rules_apply_below_their_directory_and_win():
    rules = IgnoreRules().with_lines("", ["*.gen.py"]).with_lines("pkg", ["!keep.gen.py", "/local.py"])
    assert rules.ignored("pkg/x.gen.py", False)
    assert not rules.ignored("pkg/keep.gen.py", False)
    assert rules.ignored("keep.gen.py", False)  # the negation lives in pkg/ only
    assert rules.ignored("pkg/local.py", False)
    assert not rules.ignored("local.py", False)
    assert not rules.ignored("pkg/sub/local.py", False)  # anchored to pkg/


# -- languages -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "language", "extension"),
    [
        ("a.py", "python", "py"),
        ("a.PYI", "python", "pyi"),
        ("a.ts", "typescript", "ts"),
        ("a.tsx", "tsx", "tsx"),
        ("a.mjs", "javascript", "mjs"),
        ("a.jsx", "jsx", "jsx"),
        ("a.go", "go", "go"),
        ("a.rs", "rust", "rs"),
        ("A.java", "java", "java"),
        ("README.md", "markdown", "md"),
        ("Makefile", "makefile", None),
        ("Dockerfile", "text", None),
        ("a.txt", "text", "txt"),
        ("a.yml", "yaml", "yml"),
        ("a.log", None, "log"),
        ("a", None, None),
    ],
)
def test_language_names_are_chunkhounds(name, language, extension):
    assert language_for(Path(name)) == language
    assert extension_of(Path(name)) == extension


# -- walking -------------------------------------------------------------------------------------------------


def test_walk_respects_gitignore_default_excludes_and_virtualenvs(tmp_path):
    write(tmp_path, ".gitignore", "*.gen.py\n/stage/\nsecret/\n!secret/ok.py\n")
    write(tmp_path, "src/app.py")
    write(tmp_path, "src/model.gen.py")
    write(tmp_path, "stage/x.py")
    write(tmp_path, "src/stage/y.py")  # /stage/ is anchored to the root
    write(tmp_path, "secret/ok.py")  # a file inside an excluded directory cannot be re-included (as in git)
    write(tmp_path, "pkg/.gitignore", "local.py\n")
    write(tmp_path, "pkg/local.py")
    write(tmp_path, "pkg/main.go", "package pkg\n")
    for ignored in (
        "node_modules/lib/index.js",
        ".git/hooks/x.py",
        ".chunkhound/db/x.py",
        "build/gen.py",
        "__pycache__/a.py",
        "web/dist/app.js",
        "web/app.min.js",
        "package-lock.json",
        "a.py.bak",
    ):
        write(tmp_path, ignored)  # fmt: skip
    write(tmp_path, "env/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "env/lib/site.py")
    write(tmp_path, "notes.log", "not a language")
    write(tmp_path, "src/out/z.py")  # out/ is one of ChunkHound's default excludes, at any depth
    assert rels(tmp_path) == ["pkg/main.go", "src/app.py", "src/stage/y.py"]


def test_walk_skips_odd_files_and_counts_them(tmp_path):
    write(tmp_path, "ok.py")
    os.mkfifo(tmp_path / "pipe.py")  # opening a FIFO would block: it must never be opened
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "again").symlink_to(tmp_path)  # a directory loop
    write(tmp_path, "doc.pdf", b"%PDF-1.4")
    write(tmp_path, "big.json", "[" + "1," * 20_000 + "1]")  # config files over 20 KB: skipped, as ChunkHound does
    result = walk(tmp_path)
    assert [f.rel for f in result.files] == ["ok.py"]
    assert dict(result.skipped) == {
        "not a regular file": 1,
        "unreadable": 1,
        "symlink loop": 3,
        "pdf not supported": 1,
        "too large": 1,
    }


def test_walk_follows_symlinked_directories_inside_the_project_once(tmp_path):
    write(tmp_path, "real/a.py")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write(outside, "b.py")
    (tmp_path / "external").symlink_to(outside)
    result = walk(tmp_path)
    assert [f.rel for f in result.files] == ["alias/a.py"]
    assert dict(result.skipped) == {"symlink to a directory already indexed": 1, "symlink outside the project": 1}


def test_walk_skips_files_over_the_size_limit(tmp_path):
    write(tmp_path, "small.py", "x = 1\n")
    write(tmp_path, "large.py", "x = 1\n" * 1000)
    result = walk(tmp_path, max_file_size=1000)
    assert [f.rel for f in result.files] == ["small.py"]
    assert result.skipped == {"too large": 1}


def test_walk_never_indexes_the_index_itself(tmp_path):
    write(tmp_path, "a.py")
    sidecar = write(tmp_path, "idx.db.root.json", "{}")
    assert [f.rel for f in walk(tmp_path, exclude=frozenset({sidecar})).files] == ["a.py"]


@pytest.mark.parametrize(
    ("data", "verdict"),
    [
        (b"def f():\n    return 1\n", None),
        (b"x = 1\n\x00\x01\x02", "binary"),
        (b"// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n", "generated"),
        (b"# @generated by tool\nx = 1\n", "generated"),
        (b"/* auto-generated file */\nvar a;\n", "generated"),
        (b"var a=1;" * 2000, "generated"),  # minified: one 16 KB line
        (b"x = 'do not edit'\n", None),
    ],
)
def test_content_checks(data, verdict):
    assert check_content(data) == verdict


def test_read_file_reports_why_it_cannot_index(tmp_path):
    path = write(tmp_path, "gone.py")
    (source,) = walk(tmp_path).files
    path.unlink()
    assert read_file(source) == "unreadable"


def test_names_that_are_not_utf8_are_skipped_as_chunkhound_skips_them(tmp_path, capsys):
    """The index stores paths as text; a file or folder name of other bytes is counted, not indexed."""
    from onetool_code import cli

    write(tmp_path, "ok.py", "def ok():\n    return 1\n")
    root = os.fsencode(tmp_path)
    Path(os.fsdecode(root + b"/bad\xff\xfe.py")).write_text("def bad():\n    return 2\n")
    Path(os.fsdecode(root + b"/dir\xff")).mkdir()
    Path(os.fsdecode(root + b"/dir\xff/inner.py")).write_text("def inner():\n    return 3\n")
    result = walk(tmp_path)
    assert [f.rel for f in result.files] == ["ok.py"]
    assert dict(result.skipped) == {"name not UTF-8": 2}
    assert cli.main(["index", str(tmp_path), "--no-embeddings"]) == 0
    assert "2 skipped (2 name not UTF-8)" in capsys.readouterr().out
    assert cli.main(["search", "ok", "--path", str(tmp_path), "--mode", "lexical", "--format", "json"]) == 0
    assert [r["file_path"] for r in json.loads(capsys.readouterr().out)["results"]] == ["ok.py"]


def test_an_ignore_file_that_is_a_fifo_does_not_block_the_walk(tmp_path):
    write(tmp_path, "ok.py")
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / ".gitignore")
    assert [f.rel for f in walk(tmp_path).files] == ["ok.py"]
