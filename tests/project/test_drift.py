"""How far a checkout is from its index: changed, new and deleted files, by stat first and content hash second,
kept between checks and walked again only when a directory or rule file changed."""

from __future__ import annotations

import os

import duckdb

from onetool_code.hits import FileRow, FileState
from onetool_code.project.drift import Checkout, drift


def _rows(db) -> list[FileRow]:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(
            "SELECT id, path, language, size, epoch(modified_time::TIMESTAMPTZ), content_hash FROM files"
        )
        return [
            FileRow(file_id, path, path.lower(), language, 0, FileState(size, mtime, digest))
            for file_id, path, language, size, mtime, digest in found.fetchall()
        ]


def test_an_untouched_checkout_is_as_indexed(project):
    assert drift(Checkout(project.root, frozenset()), _rows(project.db)).files == 0


def test_edits_new_files_and_deletions_are_found_and_a_touch_is_not(project):
    checkout = Checkout(project.root, frozenset())
    rows = _rows(project.db)
    assert drift(checkout, rows).files == 0  # walked once, kept
    retry = project.root / "src/bookshelf/retry.py"
    retry.write_text(retry.read_text() + "\n\ndef jittered_pause(attempt: int) -> float:\n    return attempt * 0.5\n")
    (project.root / "src/bookshelf/shelves.py").write_text("def count_shelves() -> int:\n    return 3\n")
    (project.root / "services/catalog/store.go").unlink()
    config = project.root / "src/bookshelf/config.py"
    os.utime(config, (1, 1))  # stat differs, bytes do not: ChunkHound's hash says unchanged
    (project.root / "app.log").write_text("ignored by .gitignore\n")
    with (project.root / ".gitignore").open("a") as ignore:  # a file the index holds that the walk now skips
        ignore.write("\nweb/src/types.ts\n")

    found = drift(checkout, rows)

    assert found.changed == ("src/bookshelf/retry.py",)
    assert found.new == ("src/bookshelf/shelves.py",)
    assert found.deleted == ("services/catalog/store.go",)  # not types.ts: still there, as indexed
    assert [s.rel for s in found.now] == ["src/bookshelf/retry.py", "src/bookshelf/shelves.py"]
    assert drift(Checkout(project.root, frozenset()), rows) == found  # a fresh walk agrees with the kept one


def test_an_edit_in_place_is_seen_by_the_next_check_without_a_walk(project):
    checkout = Checkout(project.root, frozenset())
    rows = _rows(project.db)
    assert drift(checkout, rows).files == 0
    folder = project.root / "src/bookshelf"
    before = folder.stat().st_mtime_ns
    retry = folder / "retry.py"
    with retry.open("a") as edit:  # in place: the directory's mtime stays
        edit.write("\nPAUSE = 2\n")
    assert folder.stat().st_mtime_ns == before

    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)

    (folder / "deep").mkdir()
    (folder / "deep" / "nested.py").write_text("def nested() -> None:\n    pass\n")
    assert drift(checkout, rows).new == ("src/bookshelf/deep/nested.py",)


def test_files_reached_through_a_symlink_are_not_new(project):
    """ChunkHound 6.1.0 indexes no file reached through a link (serde links ``serde/src/core`` to
    ``serde_core/src``): laid over the index, such files would answer twice."""
    (project.root / "src" / "linked").symlink_to(project.root / "src" / "bookshelf", target_is_directory=True)
    (project.root / "README-link.md").symlink_to(project.root / "services" / "catalog" / "store.go")
    found = drift(Checkout(project.root, frozenset()), _rows(project.db))
    assert found.files == 0, found
