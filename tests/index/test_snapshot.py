"""Snapshots: searches answer without opening the index file, from the snapshot of its current state, or while a
writer holds it from the last one with a note; a changed file is read again once for the machine."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from conftest import disagreeing, settled

import onetool_code
from onetool_code.index import live, private_copy, store
from onetool_code.index.store import STORE
from onetool_code.search import embeddings

# A process holding the index read-write, as ChunkHound does while it indexes: it changes one chunk's code, says
# "ready", and keeps the file until its standard input closes.
WRITER = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("UPDATE chunks SET code = replace(code, 'load_config', 'LOAD_CONFIG_NOW')")
    print("ready", flush=True)
    sys.stdin.read()
    con.close()
""")


def search(project, **options) -> dict:
    options.setdefault("format", "json")
    answer = onetool_code.search(path=str(project.root), base_url=project.base_url, **options)
    assert isinstance(answer, dict), answer
    return answer


def places(answer: dict) -> list[tuple[str, int, int]]:
    return [(r["file_path"], r["start_line"], r["end_line"]) for r in answer["results"]]


def folders() -> list[Path]:
    root = store.cache_root() / live.KIND
    return sorted(p for p in root.iterdir() if ".tmp-" not in p.name) if root.is_dir() else []


def python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


# Every tool in a new process whose duckdb cannot be imported: an answer proves the index file was never opened.
WITHOUT_DUCKDB = textwrap.dedent("""
    import json, sys
    sys.modules["duckdb"] = None
    import onetool_code
    root, base_url = sys.argv[1], sys.argv[2]
    answers = {
        mode: onetool_code.search(query=sys.argv[3], path=root, base_url=base_url, mode=mode, format="json")
        for mode in ("semantic", "hybrid", "lexical")
    }
    answers["regex"] = onetool_code.search(query="def load_", path=root, mode="regex", format="json")
    answers["batch"] = onetool_code.search_batch(queries=[sys.argv[3], "RateLimiter"], path=root, base_url=base_url,
                                                 format="json")
    answers["status"] = onetool_code.status(path=root, format="json")
    print(json.dumps(answers))
""")


def test_a_new_process_answers_every_tool_from_the_snapshot_without_opening_the_index(project):
    query = "load configuration file"
    expected = {mode: search(project, query=query, mode=mode) for mode in ("semantic", "hybrid", "lexical")}
    expected["regex"] = search(project, query="def load_", mode="regex")
    expected["batch"] = onetool_code.search_batch(
        queries=[query, "RateLimiter"], path=str(project.root), base_url=project.base_url, format="json"
    )
    assert all(answer["results"] for answer in expected.values())
    answers = json.loads(python(WITHOUT_DUCKDB, str(project.root), project.base_url, query).stdout)
    for name, answer in expected.items():
        assert answers[name] == answer, name
    status = answers["status"]
    assert status["snapshot"]["current"] and status["chunks"] > 0 and status["in_use"] is None


def test_the_snapshot_answers_as_the_index_itself_does(project):
    """The same answers with snapshots off (ChunkHound's SQL on the file) in every mode, with filters."""
    cases = [
        {"query": "retry with exponential backoff", "mode": "semantic"},
        {"query": "retry with exponential backoff", "mode": "hybrid", "language": "go|python"},
        {"query": "UserSession token", "mode": "lexical", "exclude": "test", "limit": 4, "offset": 2},
        {"query": r"def \w+_config", "mode": "regex"},
        {"query": r"(?i)class \w+(service|store)", "mode": "regex", "include": "src", "chunk_type": "class"},
        {"query": "^func ", "mode": "regex", "language": "go", "limit": 3, "offset": 1},
    ]
    for case in cases:
        assert search(project, **case) == search(project, cache=False, **case), case
    for pattern in ("def (?=x)", "(unclosed"):
        ours = onetool_code.search(query=pattern, path=str(project.root), mode="regex")
        assert ours.startswith("Error: query is not a valid regular expression (RE2 syntax")
        assert onetool_code.search(query=pattern, path=str(project.root), mode="regex", cache=False).startswith(
            "Error: query is not a valid regular expression (RE2 syntax"
        )


def test_while_a_writer_holds_the_index_answers_come_from_the_last_snapshot_with_a_note(project, monkeypatch):
    """While the file keeps being written (here: written, and not yet quiet for as long as a copy waits), the
    last snapshot answers and says so; once the writer has gone, the file is read again."""
    monkeypatch.setattr(live, "COPY_QUIET_SECONDS", 60.0)
    before = search(project, query="load_config", mode="lexical")
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(project.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout.readline().strip() == "ready"
            during = search(project, query="load_config", mode="lexical")
            status = onetool_code.status(path=str(project.root), format="json")
            text = onetool_code.status(path=str(project.root))
        finally:
            writer.stdin.close()
            writer.wait(30)
    assert places(during) == places(before)
    assert (
        f"the index is being updated by python (PID {writer.pid}); this answer is from the snapshot of "
        in (during["notice"])
    )
    assert during["notice"].endswith(" s old)")
    assert not status["snapshot"]["current"] and f"(PID {writer.pid})" in status["snapshot"]["notice"]
    assert f"In use by ChunkHound: yes, the index is being updated by python (PID {writer.pid})" in text
    after = search(project, query="LOAD_CONFIG_NOW", mode="regex")  # read again once the writer has gone
    assert "notice" not in after and after["results"]
    assert onetool_code.status(path=str(project.root), format="json")["snapshot"]["current"]


def test_with_no_snapshot_a_writer_holding_the_index_is_read_from_a_private_copy(project):
    """No snapshot to answer from: once the file is quiet, a consistent copy of it (and its WAL, which holds the
    writer's change) is read in the cache directory and deleted; the index file is never opened."""
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(project.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout.readline().strip() == "ready"
            digest = hashlib.sha256(project.db.read_bytes()).hexdigest()
            answer = search(project, query="LOAD_CONFIG_NOW", mode="regex")
            status = onetool_code.status(path=str(project.root), format="json")
            assert hashlib.sha256(project.db.read_bytes()).hexdigest() == digest
        finally:
            writer.stdin.close()
            writer.wait(30)
    assert writer.returncode == 0
    assert answer["results"] and "notice" not in answer  # the regex matched the code the WAL holds
    assert status["snapshot"]["current"] and status["snapshot"]["copy_seconds"] > 0
    assert not list((store.cache_root() / private_copy.FOLDER).iterdir())


def rewritten(db: Path, into: Path, new: str) -> Path:
    """A copy of the index whose ``load_config`` reads ``new`` (same length: the files stay the same size)."""
    shutil.copy(db, into)
    con = duckdb.connect(str(into))
    try:
        con.execute("UPDATE chunks SET code = replace(code, 'load_config', ?)", [new])
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return into


def test_an_in_place_copy_that_keeps_size_and_mtime_is_read_again(project, tmp_path):
    ours = rewritten(project.db, tmp_path / "ours.db", "xoad_config")
    theirs = rewritten(project.db, tmp_path / "theirs.db", "LOAD_CONFIG")
    assert ours.stat().st_size == theirs.stat().st_size
    shutil.copy(ours, project.db)
    settled(project.db)
    kept = project.db.stat()
    assert search(project, query="LOAD_CONFIG", mode="regex")["results"] == []
    with project.db.open("r+b") as file:  # cp over the file, then its old mtime put back
        file.write(theirs.read_bytes())
    os.utime(project.db, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    now = project.db.stat()
    assert (now.st_size, now.st_mtime_ns, now.st_ino) == (kept.st_size, kept.st_mtime_ns, kept.st_ino)
    assert search(project, query="LOAD_CONFIG", mode="regex")["results"]
    metas = [json.loads((f / "snapshot.json").read_text()) for f in folders()]
    bases = [f.name for f, meta in zip(folders(), metas, strict=True) if meta["base"] is None]
    assert len(bases) == 1 and sorted(str(meta["base"]) for meta in metas) == sorted([*bases, "None"])  # delta + base


def test_a_file_that_just_changed_is_read_once_it_has_been_quiet(project):
    search(project, query="load_config", mode="lexical")
    os.utime(project.db)  # written just now, as by a writer that has just closed it
    started = time.monotonic()
    assert search(project, query="load_config", mode="lexical")["results"]
    assert time.monotonic() - started >= live.QUIET_SECONDS - 0.1
    started = time.monotonic()
    search(project, query="load_config", mode="lexical")
    assert time.monotonic() - started < live.QUIET_SECONDS / 2


RACER = textwrap.dedent("""
    import json, sys, time
    import onetool_code
    from onetool_code.index.store import STORE
    time.sleep(max(0.0, float(sys.argv[3]) - time.time()))
    answer = onetool_code.search(query="load_config", path=sys.argv[1], base_url=sys.argv[2], format="json")
    print(json.dumps({"builds": STORE.builds, "answer": answer}))
""")


def test_processes_racing_for_a_new_state_read_it_once(project):
    start = str(time.time() + 3)  # after both have imported onetool_code
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(project.root), project.base_url, start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), [err for _, err in outputs]
    results = [json.loads(out) for out, _ in outputs]
    assert sorted(r["builds"] for r in results) == [0, 0, 1]
    assert results[0]["answer"] == results[1]["answer"] == results[2]["answer"]
    assert results[0]["answer"]["results"] and len(folders()) == 1


def test_snapshots_of_indexes_that_are_gone_are_removed(project, sample_index, tmp_path):
    search(project, query="load_config", mode="lexical")
    (store.cache_root() / "vectors" / "0123-4567").mkdir(parents=True)  # what an earlier version left
    project.db.unlink()
    other = tmp_path / "other"
    shutil.copytree(sample_index.root, other)
    STORE.clear()
    assert onetool_code.search(query="load_config", path=str(other), mode="lexical").startswith("Found ")
    assert [json.loads((f / "snapshot.json").read_text())["db_path"] for f in folders()] == [
        str(other / ".chunkhound" / "db" / "chunks.db")
    ]
    assert not (store.cache_root() / "vectors").exists()


# Another process's work during our embeddings request: it writes the index, then publishes the new state's
# snapshot (which removes the folder of the one this process has mapped).
SUPERSEDE = textwrap.dedent("""
    import os, sys, time
    import duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("UPDATE chunks SET code = replace(code, 'load_config', 'LOAD_CONFIG_NOW')")
    con.close()
    then = time.time() - 60
    os.utime(sys.argv[1], (then, then))
    import onetool_code
    from onetool_code.index import snapshot
    snapshot.MIN_DELTA_CHUNKS = snapshot.MAX_DELTA_SHARE = 0  # read whole: the new base replaces the old one
    assert onetool_code.search(query="LOAD_CONFIG_NOW", path=sys.argv[2], mode="lexical").startswith("Found ")
""")


def test_a_snapshot_superseded_during_a_search_is_searched_again_in_the_new_one(project, monkeypatch, spans):
    search(project, query="load_config", mode="semantic")  # mapped here; its lexical index not loaded yet
    first = folders()
    real = embeddings.embed
    calls = []

    def embed_while_another_process_publishes(texts, settings, **options):
        if not calls:
            python(SUPERSEDE, str(project.db), str(project.root))
        calls.append(texts)
        return real(texts, settings, **options)

    monkeypatch.setattr(embeddings, "embed", embed_while_another_process_publishes)
    answer = search(project, query="where load_config sets LOAD_CONFIG_NOW", content="always")
    assert "LOAD_CONFIG_NOW" in json.dumps(answer) and "notice" not in answer
    assert len(calls) == 2 and folders() != first and not first[0].exists()
    assert any("superseded during the search" in record.getMessage() for record in spans)


# -- A damaged cache heals itself, and stays private (issue 24) ------------------------------------------------


def one_snapshot(project) -> Path:
    """The folder of the one snapshot a first search made."""
    search(project, query="load_config", mode="lexical")
    (made,) = folders()
    return made


def damage(made: Path, how: str) -> str:
    """Damage one file of a published snapshot as a crash or a full disk would; which one."""
    if how == "missing vocabulary":
        (target,) = made.glob("lexical/vocab*")
        target.unlink()
    else:
        part = "lexical/vocab*" if how == "truncated vocabulary" else "vectors-0/matrix.npy"
        (target,) = made.glob(part)
        with target.open("r+b") as handle:
            handle.truncate(target.stat().st_size // 2)
    return str(target.relative_to(made))


@pytest.mark.parametrize("how", ["missing vocabulary", "truncated vocabulary", "truncated vectors"])
def test_a_damaged_snapshot_is_set_aside_and_made_again_once(project, how, spans):
    made = one_snapshot(project)
    expected = {
        mode: places(search(project, query="load_config", mode=mode)) for mode in ("lexical", "semantic", "hybrid")
    }
    damage(made, how)
    spans.clear()
    reads = []
    for _ in range(2):  # fresh processes: nothing held in memory
        STORE.clear()
        for mode in ("lexical", "semantic", "hybrid"):
            assert places(search(project, query="load_config", mode=mode)) == expected[mode]
        reads.append(sum("snapshot of " in note for r in spans for note in json.loads(r.getMessage()).get("notes", [])))
        spans.clear()
    assert reads == [1, 0]  # read again once, then mapped
    assert [p.name for p in folders()] == [made.name]


DISAGREEING = (
    "rows/end_lines.npy", "rows/code_ends.npy", "vectors-0/codes.npy", "vectors-0/signs.npy", "vectors-0/scales.npy",
    "digests.npy", "lexical/lengths.npy", "lexical/indices.csc.index.npy", "lexical/data.csc.index.npy",
)  # fmt: skip


@pytest.mark.parametrize("name", DISAGREEING)
def test_a_snapshot_whose_arrays_disagree_in_rows_is_set_aside_and_made_again_once(project, name, spans):
    """Every file the size its record says, every array well formed, one of them with another count of rows than
    the rest (issue 38): refused as it is loaded, not failed (or answered wrongly) in the middle of a search."""
    made = one_snapshot(project)
    modes = ("lexical", "semantic", "hybrid", "regex")
    expected = {mode: places(search(project, query="load_config", mode=mode)) for mode in modes}
    disagreeing(made, name)
    spans.clear()
    reads = []
    for _ in range(2):  # fresh processes: nothing held in memory
        STORE.clear()
        for mode in modes:
            assert places(search(project, query="load_config", mode=mode)) == expected[mode]
        notes = [note for r in spans for note in json.loads(r.getMessage()).get("notes", [])]
        reads.append(sum("snapshot of " in note for note in notes))
        if not reads[1:]:
            assert any("is damaged" in note and f"{name} is shaped (1" in note for note in notes), notes
        spans.clear()
    assert reads == [1, 0]  # read again once, then mapped
    assert [p.name for p in folders()] == [made.name]


def test_a_snapshot_is_written_durably_before_it_is_published(project, monkeypatch):
    """Every file and folder of a snapshot is flushed to disk before the rename that publishes it: a power cut
    cannot leave a published snapshot with empty files."""
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        return real(fd)

    monkeypatch.setattr(store.os, "fsync", fsync)
    made = one_snapshot(project)
    # What was flushed inside the private folder the snapshot was written in (``<name>.tmp-PID-TID``), by its
    # path relative to that folder ("" for the folder itself).
    inside = {s.split(".tmp-", 1)[1].partition("/")[2] for s in synced if ".tmp-" in s}
    assert {str(p.relative_to(made)) for p in made.rglob("*")} | {""} <= inside
    assert str(made.parent) in synced  # the rename itself


def test_folders_of_writers_killed_mid_snapshot_are_removed(project):
    """A writer killed with SIGKILL while it writes leaves its private folder: the next publish removes it."""
    code = textwrap.dedent("""
        import os, sys, onetool_code
        from onetool_code.index import store
        real = store.shutil.rmtree
        def write_forever(into):
            (into / "half.npy").write_bytes(b"x" * 1000)
            print("writing", flush=True)
            sys.stdin.read()
        store.publish(store.cache_root() / "snapshot" / "0000-aaaa", write_forever)
    """)
    writer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "writing"
    writer.kill()
    writer.wait(30)
    writer.stdin.close()
    writer.stdout.close()
    snapshots = store.cache_root() / live.KIND
    assert [p.name for p in snapshots.iterdir() if ".tmp-" in p.name]
    alive = snapshots / f"0000-bbbb.tmp-{os.getpid()}-1"  # a living writer's folder stays
    alive.mkdir()
    one_snapshot(project)
    assert [p.name for p in snapshots.iterdir() if ".tmp-" in p.name] == [alive.name]


def test_the_cache_is_private(project):
    made = one_snapshot(project)
    root = store.cache_root()
    for path in (root, *root.rglob("*")):
        mode = path.stat().st_mode & 0o777
        if path.is_dir() and path != root.parent:
            assert mode == 0o700, path
        elif path.is_file():
            assert mode == 0o600, path
    assert made.exists()


@pytest.mark.parametrize("problem", ["writable by others", "owned by another user"])
def test_a_cache_folder_others_control_is_refused_and_searches_answer_without_it(
    project, monkeypatch, tmp_path, problem
):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    if problem == "writable by others":
        shared.chmod(0o777)
        reason = "other users can write to it"
    else:
        os.chown(shared, 65534, 65534)  # nobody
        reason = "another user owns it"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(shared))
    answer = search(project, query="load_config", mode="lexical")
    assert answer["results"]
    assert answer["notice"] == (
        f"the cache folder {shared} is not used: {reason}, so answers read the index itself. Set "
        "ONETOOL_CODE_CACHE_DIR to a folder of your own that only you can write to."
    )
    assert list(shared.iterdir()) == []
    status = onetool_code.status(path=str(project.root))
    assert f"Note: the cache folder {shared} is not used: {reason}" in status
