"""Placing hits in their files as they are now: unchanged files trust the index, changed ones are searched."""

from __future__ import annotations

import os

import xxhash

from onetool_code.hits import FileState, Hit
from onetool_code.project.placement import EDITED, LOST, MOVED, Placement, locate, place
from onetool_code.project.source import SourceFiles

SOURCE = [
    "import os",  # 1
    "",
    "",
    "def first(path):",  # 4
    "    text = open(path).read()",
    "    return text.strip()",
    "",
    "",
    "def second(items):",  # 9
    "    total = 0",
    "    for item in items:",
    "        total += item",
    "    return total",  # 13
]


def write(root, rel, lines):
    path = root / rel
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def indexed(root, rel, lines):
    """Write the file and return the state its index row holds (as ChunkHound wrote it)."""
    path = write(root, rel, lines)
    data = path.read_bytes()
    return FileState(len(data), path.stat().st_mtime, xxhash.xxh3_64_hexdigest(data))


def chunk(start, end, code, state, path="a.py"):
    return Hit(1, path, "python", "function", "f", code, start, end, 0.5, file=state)


def second_chunk(state):
    return chunk(9, 13, "\n".join(SOURCE[8:13]), state)


def test_an_unchanged_file_keeps_chunkhounds_range_without_a_note(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(9, 13, True)


def test_an_unchanged_file_is_trusted_even_when_the_chunk_text_does_not_line_up(tmp_path):
    """ChunkHound joins pieces into one chunk (a gap's lines lost, overlapping pieces repeated): with the
    same bytes, its range is right whatever the text says."""
    state = indexed(tmp_path, "a.py", SOURCE)
    joined = "def first(path):\n    return text.strip()\n    return text.strip()\ndef second(items):"
    assert place(chunk(4, 9, joined, state), SourceFiles(tmp_path)) == Placement(4, 9, True)


def test_a_row_without_a_hash_is_compared_by_size_and_mtime(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    hashless = FileState(state.size, state.mtime, None)
    wrong_text = chunk(9, 13, "nothing like the file", hashless)
    assert place(wrong_text, SourceFiles(tmp_path)) == Placement(9, 13, True)
    os.utime(tmp_path / "a.py", (0, 0))
    assert place(wrong_text, SourceFiles(tmp_path)).note.startswith("changed since indexing, no longer in the file")


def test_lines_inserted_above_move_the_hit(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    write(tmp_path, "a.py", [*SOURCE[:3], "CONSTANT = 1", "OTHER = 2", "", *SOURCE[3:]])
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(
        12, 16, True, "moved since indexing (indexed at 9-13)", MOVED
    )


def test_a_change_elsewhere_in_the_file_says_nothing(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    write(tmp_path, "a.py", [*SOURCE, "", "", "def third():", "    pass"])
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(9, 13, True)


def test_an_edited_function_is_shown_as_it_is_now_with_what_changed(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    edited = [*SOURCE[:9], "    total = 0.0", "    for item in items:", "        total += item", "    return total", ""]
    write(tmp_path, "a.py", [*SOURCE[:3], "# a comment", *edited[3:]])
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(
        10, 14, True, "changed since indexing: 1 of 5 indexed lines differ", EDITED
    )


def test_an_edited_last_line_is_still_inside_the_range(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    write(tmp_path, "a.py", [*SOURCE[:12], "    return round(total, 2)"])
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(
        9, 13, True, "changed since indexing: 1 of 5 indexed lines differ", EDITED
    )


def test_code_that_is_gone_from_the_file_keeps_chunkhounds_range(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    write(tmp_path, "a.py", SOURCE[:8])
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(
        9, 13, False, "changed since indexing, no longer in the file; showing the indexed code", LOST
    )


def test_a_deleted_file_keeps_chunkhounds_range(tmp_path):
    state = indexed(tmp_path, "a.py", SOURCE)
    (tmp_path / "a.py").unlink()
    assert place(second_chunk(state), SourceFiles(tmp_path)) == Placement(
        9, 13, False, "deleted since indexing; showing the indexed code", LOST
    )


def test_leading_blank_lines_shift_chunkhounds_numbers_but_not_ours(tmp_path):
    """ChunkHound 6.1.0 counts from the first non-blank line; our indexer (and a fixed ChunkHound) from the
    file's first: with the same bytes either way, the chunk's first line tells which."""
    lines = ["", "", *SOURCE]
    state = indexed(tmp_path, "a.py", lines)
    code = "\n".join(SOURCE[8:13])
    assert place(chunk(9, 13, code, state), SourceFiles(tmp_path)) == Placement(11, 15, True)
    assert place(chunk(11, 15, code, state), SourceFiles(tmp_path)) == Placement(11, 15, True)


def test_a_latin1_file_is_read_as_chunkhound_read_it(tmp_path):
    path = tmp_path / "legacy.py"
    path.write_bytes(b"# caf\xe9 cr\xe8me\n\ndef brul\xe9e():\n    return 1\n")
    data = path.read_bytes()
    state = FileState(len(data), path.stat().st_mtime, xxhash.xxh3_64_hexdigest(data))
    hit = chunk(3, 4, "def brul\xe9e():\n    return 1", state, "legacy.py")
    assert place(hit, SourceFiles(tmp_path)) == Placement(3, 4, True)
    assert SourceFiles(tmp_path).window("legacy.py", 1, 1) == ["# caf\xe9 cr\xe8me"]


# -- locate ---------------------------------------------------------------------------------------------------


def test_a_joined_chunk_with_repeated_lines_is_found_whole():
    """httpx's ``_client.py`` 740-787 as ChunkHound 6.1.0 stored it: two overlapping pieces, so
    ``proxy=proxy,`` and ``)`` appear twice in the chunk text and once in the file."""
    file_lines = [
        "class Client:",
        "    def _init_proxy_transport(",
        "        self,",
        "        proxy: Proxy,",
        "    ) -> BaseTransport:",
        "        return HTTPTransport(",
        "            verify=verify,",
        "            proxy=proxy,",
        "        )",
        "",
        "    def _transport_for_url(self, url: URL) -> BaseTransport:",
        "        return self._transport",
    ]
    code = "\n".join(
        ["def _init_proxy_transport(", "        self,", "        proxy: Proxy,", "    ) -> BaseTransport:",
         "        return HTTPTransport(", "            verify=verify,", "            proxy=proxy,", "        )",
         "            proxy=proxy,", "        )"]
    )  # fmt: skip
    found = locate(code, file_lines, 2)
    assert (found.start_line, found.end_line, found.missing, found.total) == (2, 9, 0, 8)


def test_a_chunk_whose_first_line_lost_its_export_is_found():
    file_lines = ["class Outer {", "  export class Inner {", "", "    run() {}", "  }", "}"]
    found = locate("class Inner {\n    run() {}\n  }", file_lines, 2)
    assert (found.start_line, found.end_line, found.missing) == (2, 5, 0)


def test_a_line_that_occurs_twice_is_found_where_the_index_put_it():
    file_lines = ["def a():", "    return None", *[f"x{i} = {i}" for i in range(300)], "def b():", "    return None"]
    found = locate("    return None", file_lines, 304)
    assert (found.start_line, found.end_line) == (304, 304)
    assert locate("    return None", file_lines, 2).start_line == 2


def test_nothing_in_common_is_not_found():
    assert locate("def gone():\n    pass", ["x = 1", "y = 2"], 1) is None
