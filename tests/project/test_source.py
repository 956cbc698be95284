"""Files read as ChunkHound read them: decoding, line splitting, hashing, and ChunkHound's line numbers."""

from __future__ import annotations

import pytest
import xxhash

from onetool_code import request
from onetool_code.answer.shaping import shape
from onetool_code.hits import Hit
from onetool_code.project.source import SourceFiles, Unread, decode, file_text, split_lines


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("a\nb\n", ("a", "b")),
        ("a\nb", ("a", "b")),
        ("a\r\nb\r\n", ("a", "b")),
        ("a\n\n", ("a", "")),
        ("", ("",)),
        # Not line breaks for a file's line numbers (str.splitlines breaks at every one of them):
        ("a\fb\vc\x1cd\x1de\x1ef\x85g\u2028h\u2029i\n", ("a\fb\vc\x1cd\x1de\x1ef\x85g\u2028h\u2029i",)),
    ],
)
def test_lines_are_split_at_newlines_only(text, lines):
    assert split_lines(text) == lines


def test_a_function_after_form_feed_lines_is_on_its_own_line(tmp_path):
    """Tree-sitter, ChunkHound and the indexer put ``def f`` on line 6; splitting with ``str.splitlines``
    showed it on line 8 (two form-feed lines counted twice)."""
    source = "import os\n\f\n# -- helpers\fmore\n\f\n\ndef f():\n    return os.sep\n"
    (tmp_path / "a.py").write_text(source)
    hit = Hit(1, "a.py", "python", "function", "f", "def f():\n    return os.sep", 6, 7, 0.5)
    req = request.parse(
        queries="sep", batch=False, limit=None, offset=None, language=None, chunk_type=None, include=None,
        exclude=None, expand=None, mode=None, content=None, format=None, max_bytes=None,
    )  # fmt: skip
    (result,) = shape([hit], req, tmp_path)
    assert (result.start_line, result.end_line, result.note) == (6, 7, None)
    assert result.content == ["def f():", "    return os.sep"] and result.match_lines == [7]


def test_utf8_else_latin1_as_chunkhound_decodes():
    assert decode("café".encode()) == "café"
    assert decode(b"caf\xe9 \xff") == "caf\xe9 \xff"  # not UTF-8: Latin-1, every byte a character


def test_a_file_text_knows_its_hash_size_and_lines():
    data = b"# caf\xe9\r\nx = 1\r\n"
    text = file_text(data, 12.5)
    assert text.lines == ("# caf\xe9", "x = 1")
    assert (text.size, text.mtime, text.digest) == (len(data), 12.5, xxhash.xxh3_64_hexdigest(data))


@pytest.mark.parametrize(
    ("data", "chunkhound_line", "file_line"),
    [
        (b"x\ny\n", 2, 2),
        (b"\n\n\nimport os\n", 1, 4),  # ChunkHound strips leading blank lines before numbering
        (b"  \n\t\n  x = 1\n", 1, 3),
        (b"\r\n\r\nx\r\n", 1, 3),
        (b"a\rb\nc\n", 3, 2),  # a lone CR ends a line for ChunkHound (universal newlines), not for the file
        (b"a\rb\nc\n", 2, 1),
        (b"\xef\xbb\xbf\nx\n", 2, 2),  # a BOM is not whitespace: nothing stripped
        (b"x\n", 9, 1),  # clamped to the file
    ],
)
def test_chunkhound_line_numbers_map_onto_the_files(data, chunkhound_line, file_line):
    assert file_text(data, 0.0).from_chunkhound(chunkhound_line) == file_line


@pytest.mark.parametrize(
    ("data", "file_line", "chunkhound_line"),
    [
        (b"x\ny\n", 2, 2),
        (b"\n\n\nimport os\n", 4, 1),
        (b"  \n\t\n  x = 1\n", 3, 1),
        (b"\r\n\r\nx\r\n", 3, 1),
        (b"a\rb\nc\n", 2, 3),
        (b"a\rb\nc\n", 1, 1),  # the file's line 1 is ChunkHound's 1 and 2: its first
        (b"\n\nx\n", 1, 1),  # a stripped line has no number of ChunkHound's: the first
    ],
)
def test_file_lines_map_back_onto_chunkhounds(data, file_line, chunkhound_line):
    """What ``related`` is given (a line as answers show it) in the index's numbering."""
    text = file_text(data, 0.0)
    assert text.to_chunkhound(file_line) == chunkhound_line
    if file_line > text.shift:
        assert text.from_chunkhound(chunkhound_line) == file_line


def test_a_bom_is_not_part_of_the_first_line():
    assert file_text(b"\xef\xbb\xbfimport os\n", 0.0).lines == ("import os",)


def test_files_outside_the_root_or_gone_are_not_read(tmp_path):
    (tmp_path / "outside.py").write_text("secret\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    sources = SourceFiles(root)
    assert sources.read("link.py") == Unread("resolves outside the project root; not read")
    assert sources.read("gone.py") == Unread("deleted since indexing", gone=True)
    assert sources.window("gone.py", 1, 3) == []


def answered_within(seconds: float, call):
    """``call()``'s answer, failing (not hanging) when it takes longer than ``seconds``."""
    import threading

    answers = []
    worker = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert answers, f"no answer within {seconds} s"
    return answers[0]


@pytest.mark.parametrize("kind", ["fifo", "symlink to a fifo", "symlink to a device"])
def test_a_fifo_in_the_place_of_an_indexed_file_is_noted_not_read(project, kind):
    """Opening a FIFO waits for a writer forever: a search that shows that file must still answer."""
    import os

    import onetool_code

    indexed = project.root / "src" / "bookshelf" / "retry.py"
    indexed.unlink()
    if kind == "fifo":
        os.mkfifo(indexed)
    elif kind == "symlink to a fifo":
        os.mkfifo(project.root / "pipe")
        indexed.symlink_to(project.root / "pipe")
    else:
        indexed.symlink_to("/dev/zero")  # outside the project too: not read either way
    for content in ("auto", "always"):
        found = answered_within(
            30,
            lambda content=content: onetool_code.search(
                query="retry backoff delays", path=str(project.root), mode="lexical", format="json", content=content
            ),
        )
        shown = [r for r in found["results"] if r["file_path"] == "src/bookshelf/retry.py"]
        assert shown, found
        assert all("not read" in r.get("note", "") for r in shown)


def test_an_index_or_wal_that_is_a_fifo_is_refused_without_blocking(project):
    import os

    import onetool_code

    wal = project.db.with_name(project.db.name + ".wal")
    os.mkfifo(wal)
    answer = answered_within(30, lambda: onetool_code.search(query="retry", path=str(project.root), mode="lexical"))
    assert answer == f"Error: {wal} is not a regular file, so not part of an index"
    wal.unlink()
    project.db.unlink()
    os.mkfifo(project.db)
    answer = answered_within(30, lambda: onetool_code.status(path=str(project.root)))
    assert answer == f"Error: {project.db} is not a regular file, so not part of an index"


def test_outlines_of_many_threads_at_once_share_the_process_cache(tmp_path, monkeypatch):
    """The MCP server answers calls on threads of their own, and each places its hits in their files' outlines,
    which one cache keeps for the process: one thread's eviction must not break on another's insertion."""
    import sys
    import threading

    from onetool_code.project import source

    for n in range(40):
        (tmp_path / f"m{n}.py").write_text(f"class Holder{n}:\n    def method_{n}(self):\n        return {n}\n")
    monkeypatch.setattr(source, "OUTLINES_KEPT", 3)  # every insertion evicts
    failures: list[BaseException] = []
    names: list[set[str]] = []

    def outline_all(offset: int) -> None:
        try:
            files = SourceFiles(tmp_path)
            for n in [(offset + k) % 40 for k in range(40)] * 25:
                names.append({d.name for d in files.outline(f"m{n}.py", "python")} ^ {f"Holder{n}", f"method_{n}"})
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads hand over the GIL as often as CPython lets them
    try:
        threads = [threading.Thread(target=outline_all, args=(k * 7,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    assert len(names) == 8 * 1000 and not any(names)  # each outline is its own file's: no name missing or foreign
