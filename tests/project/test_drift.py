"""How far a checkout is from its index: changed, new and deleted files, by stat first and content hash second,
kept between checks and walked again only when a directory or rule file changed."""

from __future__ import annotations

import errno
import os
import threading

import duckdb

from onetool_code.hits import FileRow, FileState
from onetool_code.project import drift as drift_module
from onetool_code.project.drift import Checkout, Drift, drift


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


def _watched(project) -> tuple[Checkout, list[FileRow]]:
    """A checkout checked twice, as a long-lived process does: walked, then watched."""
    checkout = Checkout(project.root, frozenset())
    rows = _rows(project.db)
    assert drift(checkout, rows).files == 0
    assert drift(checkout, rows).files == 0
    assert checkout.unwatched is None, checkout.unwatched
    return checkout, rows


def test_a_watched_checkout_sees_a_save_at_once_and_walks_only_new_folders(project, monkeypatch):
    checkout, rows = _watched(project)
    unchanged = drift(checkout, rows)
    assert drift(checkout, rows) is unchanged  # no event: no stat, no work
    walks = []
    real_walk = drift_module.walk
    monkeypatch.setattr(drift_module, "walk", lambda *a, **k: walks.append(a) or real_walk(*a, **k))
    folder = project.root / "src/bookshelf"
    retry = folder / "retry.py"
    with retry.open("a") as edit:  # in place, searched at once: no sleep
        edit.write("\nPAUSE = 2\n")
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)
    saved = folder / "config.py.part"  # an editor's save: written beside, renamed over
    saved.write_text((folder / "config.py").read_text() + "\nLIMIT = 3\n")
    saved.replace(folder / "config.py")
    (folder / "deep" / "deeper").mkdir(parents=True)
    (folder / "deep" / "deeper" / "nested.py").write_text("def nested() -> None:\n    pass\n")
    (folder / "notes.bin").write_bytes(b"\0")  # not a language: not indexed
    (project.root / "services/catalog/store.go").unlink()
    found = drift(checkout, rows)
    assert found.changed == ("src/bookshelf/config.py", "src/bookshelf/retry.py")
    assert found.new == ("src/bookshelf/deep/deeper/nested.py",)
    assert found.deleted == ("services/catalog/store.go",)
    (folder / "deep" / "deeper" / "later.py").write_text("def later() -> None:\n    pass\n")  # the new folder's watch
    assert drift(checkout, rows).new == ("src/bookshelf/deep/deeper/later.py", "src/bookshelf/deep/deeper/nested.py")
    assert walks == []
    assert drift(Checkout(project.root, frozenset()), rows) == drift(checkout, rows)  # a fresh walk agrees


def test_a_watched_checkout_walks_again_when_an_ignore_file_or_folder_changes(project):
    checkout, rows = _watched(project)
    with (project.root / ".gitignore").open("a") as ignore:
        ignore.write("\nsrc/bookshelf/retry.py\n")
    (project.root / "src/bookshelf/retry.py").write_text("def gone() -> None:\n    pass\n")
    assert drift(checkout, rows).files == 0  # ignored now: as ChunkHound would skip it, kept as indexed
    (project.root / "services").rename(project.root / "moved")
    found = drift(checkout, rows)
    assert "services/catalog/store.go" in found.deleted
    assert "moved/catalog/store.go" in found.new
    assert drift(Checkout(project.root, frozenset()), rows) == found


def test_a_lost_watch_costs_one_walk_then_is_trusted_again(project, monkeypatch):
    checkout, rows = _watched(project)
    watch = checkout._watch
    monkeypatch.setattr(watch, "changes", lambda: None)  # the kernel's queue overflowed (IN_Q_OVERFLOW)
    retry = project.root / "src/bookshelf/retry.py"
    retry.write_text(retry.read_text() + "\nPAUSE = 2\n")
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)
    assert checkout._watch is not watch and checkout.unwatched is None
    retry.write_text(retry.read_bytes().decode().replace("PAUSE = 2", "PAUSE = 3 + 4"))
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)


def test_past_the_watch_limit_every_check_stats(project, monkeypatch):
    import inotify_simple

    def refused(self, path, mask):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(inotify_simple.INotify, "add_watch", refused)  # fs.inotify.max_user_watches reached
    checkout = Checkout(project.root, frozenset())
    rows = _rows(project.db)
    assert drift(checkout, rows).files == 0
    assert drift(checkout, rows).files == 0
    assert "could not be watched" in checkout.unwatched
    retry = project.root / "src/bookshelf/retry.py"
    with retry.open("a") as edit:
        edit.write("\nPAUSE = 2\n")
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)


def test_checks_on_many_threads_agree_with_a_walk(project):
    """The MCP server's calls run on threads of their own: each check, while files are saved, says what the
    checkout held at some moment, and once the saves stop every thread sees the last of them."""
    checkout, rows = _watched(project)
    retry = project.root / "src/bookshelf/retry.py"
    seen: list[Drift] = []
    stop = threading.Event()

    def check() -> None:
        while not stop.is_set():
            seen.append(drift(checkout, rows))

    threads = [threading.Thread(target=check) for _ in range(4)]
    for thread in threads:
        thread.start()
    for i in range(30):
        (project.root / "src/bookshelf" / f"made_{i}.py").write_text(f"def made_{i}() -> None:\n    pass\n")
        retry.write_text(retry.read_text() + f"\nPAUSE_{i} = {i}\n")
    stop.set()
    for thread in threads:
        thread.join()
    assert seen and all(found.changed in ((), ("src/bookshelf/retry.py",)) for found in seen)
    last = drift(checkout, rows)
    assert len(last.new) == 30 and last == drift(Checkout(project.root, frozenset()), rows)


def test_a_watched_file_replaced_by_a_folder_is_walked_as_the_folder(project):
    checkout, rows = _watched(project)
    config = project.root / "src/bookshelf/config.py"
    config.unlink()
    config.mkdir()
    (config / "inner.py").write_text("def inner() -> None:\n    pass\n")
    found = drift(checkout, rows)
    assert found.new == ("src/bookshelf/config.py/inner.py",)
    assert "src/bookshelf/config.py" not in {source.rel for source in checkout.files()}
    assert drift(Checkout(project.root, frozenset()), rows) == found


def test_a_checkout_on_a_network_file_system_is_stated_not_watched(project, monkeypatch):
    """Changes made on another machine send no event here: such a checkout keeps the stat check (no NFS mount
    can be had in a test, so the file system's type is what is replaced)."""
    from onetool_code.project import watch

    assert watch._file_system(project.root)  # this machine's: read from /proc/self/mountinfo
    monkeypatch.setattr(watch, "_file_system", lambda root: "nfs4")
    checkout = Checkout(project.root, frozenset())
    rows = _rows(project.db)
    assert drift(checkout, rows).files == drift(checkout, rows).files == 0
    assert checkout.unwatched == "the nfs4 file system sends no events for changes made elsewhere"
    retry = project.root / "src/bookshelf/retry.py"
    with retry.open("a") as edit:
        edit.write("\nPAUSE = 2\n")
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)


def test_a_link_made_to_a_watched_folder_leaves_its_edits_seen(project):
    """The kernel gives a folder reached by a new link the watch it has already: the link is not walked (as the
    whole walk would skip it), and the folder's events stay its own."""
    checkout, rows = _watched(project)
    (project.root / "src" / "linked").symlink_to(project.root / "src" / "bookshelf", target_is_directory=True)
    assert drift(checkout, rows).files == 0
    retry = project.root / "src/bookshelf/retry.py"
    with retry.open("a") as edit:
        edit.write("\nPAUSE = 2\n")
    found = drift(checkout, rows)
    assert found.changed == ("src/bookshelf/retry.py",)
    assert not any(source.rel.startswith("src/linked/") for source in checkout.files())
    assert drift(Checkout(project.root, frozenset()), rows) == found


def test_a_folder_the_kernel_will_not_watch_is_passed_over(project, monkeypatch):
    """Root reads every folder here, so the kernel's refusal of one (an unreadable folder, or one gone since it
    was listed) is put in its mouth; the rest of the checkout stays watched."""
    import inotify_simple

    real = inotify_simple.INotify.add_watch

    def refusing(self, path, mask):
        if str(path).endswith("services"):
            raise OSError(errno.EACCES, "Permission denied")
        return real(self, path, mask)

    monkeypatch.setattr(inotify_simple.INotify, "add_watch", refusing)
    checkout, rows = _watched(project)
    retry = project.root / "src/bookshelf/retry.py"
    with retry.open("a") as edit:
        edit.write("\nPAUSE = 2\n")
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)
    assert checkout.unwatched is None


def test_a_change_no_event_told_of_is_seen_within_the_verify_interval(project, monkeypatch):
    """A file system that sends no events and was not recognised as one: the watch stays silent, and the
    checkout is still stated every ``VERIFY_SECONDS`` (0 here: the next check)."""
    checkout, rows = _watched(project)
    monkeypatch.setattr(checkout._watch, "changes", lambda: set())  # the edit made on another machine
    retry = project.root / "src/bookshelf/retry.py"
    with retry.open("a") as edit:
        edit.write("\nPAUSE = 2\n")
    assert drift(checkout, rows).files == 0  # within the interval: the watch is trusted
    monkeypatch.setattr(drift_module, "VERIFY_SECONDS", 0.0)
    assert drift(checkout, rows).changed == ("src/bookshelf/retry.py",)
