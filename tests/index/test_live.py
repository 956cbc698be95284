"""A live index: a changed state is read as its delta against the last base and answers as a full read would;
long-lived processes refresh in the background; the first read of an index shows its progress on the command
line's terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import build_index, disagreeing, settled

import onetool_code
from onetool_code.index import live, private_copy, quantised, snapshot
from onetool_code.index.store import STORE
from onetool_code.schema import Filters

CASES = (
    {"query": "retry with exponential backoff", "mode": "semantic"},
    {"query": "reconcile ledger entries", "mode": "semantic", "limit": 20},
    {"query": "load configuration file", "mode": "semantic", "language": "python", "exclude": "test"},
    {"query": "retry with exponential backoff", "mode": "lexical"},
    {"query": "reconcile ledger", "mode": "lexical"},
    {"query": "cache eviction least recently used", "mode": "lexical", "limit": 20},
    {"query": "config", "mode": "lexical", "include": "src", "chunk_type": "function"},
    {"query": "retry with exponential backoff", "mode": "hybrid"},
    {"query": "reconcile ledger entries", "mode": "hybrid"},
    {"query": r"def \w+_delays", "mode": "regex"},
    {"query": r"(?i)class \w+", "mode": "regex", "limit": 30},
)


def answer(project, **case) -> dict:
    found = onetool_code.search(path=str(project.root), base_url=project.base_url, format="json", **case)
    assert isinstance(found, dict) and "results" in found, found
    return found


def places(found: dict) -> list[tuple[str, int, int]]:
    return [(r["file_path"], r["start_line"], r["end_line"]) for r in found["results"]]


def change(project) -> None:
    """A few saved files, as an editor would leave them: one edited (a function renamed), one added, one
    deleted; then the index brought up to date file by file (our indexer replaces a changed file's chunks and
    vectors with new ids, as ChunkHound does)."""
    retry = project.root / "src" / "bookshelf" / "retry.py"
    retry.write_text(retry.read_text().replace("def backoff_delays(", "def backoff_schedule_delays("))
    (project.root / "src" / "bookshelf" / "ledger.py").write_text(
        '"""Ledger reconciliation."""\n\n\ndef reconcile_ledger_entries(entries, statement):\n'
        '    """Match every ledger entry with a statement line."""\n    return [e for e in entries if e in statement]\n'
    )
    (project.root / "web" / "src" / "lruCache.js").unlink()
    sidecar = project.db.with_name(project.db.name + ".root.json")  # the copy's own root, as if indexed here
    sidecar.write_text(json.dumps({"version": 1, "indexed_root_path": str(project.root)}))
    build_index(project.root, project.base_url)


def status(project) -> dict:
    return onetool_code.status(path=str(project.root), format="json")["snapshot"]


def full_read(project, monkeypatch, tmp_path, case: dict) -> dict:
    """The same search against a snapshot read whole, in a cache directory of its own."""
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "whole"))
    STORE.clear()
    try:
        return answer(project, **case)
    finally:
        monkeypatch.delenv("ONETOOL_CODE_CACHE_DIR")
        STORE.clear()


def test_a_changed_index_is_read_as_a_delta_that_answers_as_a_full_read(project, monkeypatch, tmp_path):
    before = answer(project, query="reconcile ledger", mode="lexical")
    base = status(project)
    assert base["delta_chunks"] == 0 and not before["results"]
    change(project)
    delta = {json.dumps(case): answer(project, **case) for case in CASES}
    now = status(project)
    assert now["current"] and 0 < now["delta_chunks"] < 40  # three files' chunks, not the index's 392
    assert json.loads((Path(now["folder"]) / "snapshot.json").read_text())["base"] == Path(base["folder"]).name
    assert delta[json.dumps(CASES[4])]["results"][0]["file_path"] == "src/bookshelf/ledger.py"
    assert not any(r["file_path"] == "web/src/lruCache.js" for found in delta.values() for r in found["results"])
    assert "backoff_schedule_delays" in json.dumps(delta[json.dumps(CASES[9])])
    for case in CASES:
        whole = full_read(project, monkeypatch, tmp_path, case)
        ours = delta[json.dumps(case)]
        assert places(ours) == places(whole), case
        if case["mode"] == "semantic" or case["mode"] == "regex":
            assert [r["score"] for r in ours["results"]] == [r["score"] for r in whole["results"]], case


@pytest.mark.parametrize("name", ["alive.npy", "vectors-0/alive.npy", "vectors-0/codes.npy", "rows/end_lines.npy"])
def test_a_delta_whose_arrays_disagree_with_its_base_is_read_again_once(project, name, spans):
    """A delta's masks of its base's live rows, or its own arrays, with another count of rows than they describe
    (issue 38): refused as the delta is loaded (a mask of one row would broadcast, and show the base's dead rows),
    and read again as a delta of the same base."""
    answer(project, query="reconcile ledger", mode="lexical")  # the base snapshot
    change(project)
    expected = {json.dumps(case): places(answer(project, **case)) for case in CASES}
    folder = Path(status(project)["folder"])
    assert json.loads((folder / "snapshot.json").read_text())["base"] is not None
    disagreeing(folder, name)
    reads = []
    for _ in range(2):  # fresh processes: nothing held in memory
        STORE.clear()
        spans.clear()
        for case in CASES:
            assert places(answer(project, **case)) == expected[json.dumps(case)], case
        notes = [note for r in spans for note in json.loads(r.getMessage()).get("notes", [])]
        reads.append(sum("made (a delta of" in note for note in notes))
        if len(reads) == 1:
            assert any("is damaged" in note and f"{name} is shaped (1" in note for note in notes), notes
    assert reads == [1, 0]  # read again once, as a delta, then mapped
    assert status(project)["delta_chunks"] > 0


def test_hybrids_shortlist_of_a_delta_holds_every_row_of_the_delta(project, monkeypatch):
    """The sign bits are the base's: a refreshed snapshot's new rows are always candidates, so a shortlist of three
    base rows still finds the new file's chunk nearest its own vector."""
    answer(project, query="reconcile ledger", mode="lexical")  # the base snapshot
    change(project)
    held = live.view(project.root, project.db).snapshot
    vectors = next(iter(held.vectors.values()))
    assert vectors.added is not None
    height = vectors.codes.shape[0]
    new = [k for k in range(vectors.added.shape[0]) if held.chunks.attributes.paths[vectors.attributes.file_codes[height + k]] == "src/bookshelf/ledger.py"]  # fmt: skip
    for name, value in (("SHORTLIST_FROM", 1), ("SHORTLIST", 1), ("SHORTLIST_MIN", 1), ("SHORTLIST_DIMS", 1)):
        monkeypatch.setattr(quantised, name, value)
    page = vectors.rank(np.asarray(vectors.added[new[:1]]), Filters(), 3, 0, exact=False)[0]
    assert page[0][0] == int(vectors.chunk_ids[height + new[0]])


def test_related_answers_from_a_delta_as_from_a_full_read(project, monkeypatch, tmp_path):
    """A place in the delta (the new file) and one in the base: their stored vectors are found in the joined
    snapshot, and the deleted file's chunks are gone from the answers."""
    answer(project, query="reconcile ledger", mode="lexical")  # the base snapshot
    change(project)
    places_asked = [{"file": "src/bookshelf/ledger.py", "line": 5}, {"file": "src/bookshelf/config.py", "line": 138}]
    options = {"path": str(project.root), "format": "json", "limit": 20}
    delta = [onetool_code.related(**place, **options) for place in places_asked]
    assert 0 < status(project)["delta_chunks"] < 40
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "whole"))
    STORE.clear()
    whole = [onetool_code.related(**place, **options) for place in places_asked]
    assert status(project)["delta_chunks"] == 0
    for ours, read_whole in zip(delta, whole, strict=True):
        assert places(ours) == places(read_whole) and ours["results"], ours
        assert [r["score"] for r in ours["results"]] == [r["score"] for r in read_whole["results"]]
        assert not any(r["file_path"] == "web/src/lruCache.js" for r in ours["results"])


def test_lexical_scores_of_a_delta_stay_within_the_stated_bound_of_a_full_read_and_its_shares_are_exact(project):
    from onetool_code import names
    from onetool_code.index import lexical
    from onetool_code.schema import Filters

    answer(project, query="retry", mode="lexical")
    change(project)
    answer(project, query="retry", mode="lexical")
    joined = live.view(project.root, project.db).snapshot
    assert joined.base is not None
    words = joined.lexical_index
    rebuilt = lexical.build(snapshot_rows(project))
    bound = abs(words.drift) / (1 - abs(words.drift))
    queries = ("retry backoff", "config load file", "ledger reconcile entries", "cache", "server store catalog")
    for query in queries:
        tokens = names.query_tokens(query)
        ours = dict(words.rank([tokens], Filters(), 1000)[0])
        theirs = dict(rebuilt.rank([tokens], Filters(), 1000)[0])
        assert set(ours) == set(theirs), query
        for chunk_id, score in theirs.items():
            assert abs(ours[chunk_id] - score) <= score * bound + 1e-5, (query, chunk_id)
        # The share of the chunks that hold each word is exact: the dead documents out, the delta's in.
        assert words.shares(tokens) == rebuilt.shares(tokens), query
        # So are the files' scores as whole documents: the dead chunks' words out, the delta's in.
        whole_files = rebuilt.file_scores(tokens)
        assert words.file_scores(tokens) == pytest.approx(whole_files, rel=1e-9) and whole_files, query
    assert 0 < rebuilt.shares(["retri"])["retri"] < 1


def snapshot_rows(project):
    """The index's rows, read whole now (the lexical index a full read would build from them)."""
    from onetool_code.index import database, rows

    with database.connect(project.root, project.db) as con:
        return rows.build(database.file_rows(con), database.chunk_rows(con))


def test_a_delta_too_large_for_its_base_is_read_whole(project, monkeypatch):
    answer(project, query="retry", mode="lexical")
    monkeypatch.setattr(snapshot, "MIN_DELTA_CHUNKS", 0)
    monkeypatch.setattr(snapshot, "MAX_DELTA_SHARE", 0.0)
    change(project)
    found = answer(project, query="reconcile ledger", mode="lexical")
    assert found["results"][0]["file_path"] == "src/bookshelf/ledger.py"
    assert status(project)["delta_chunks"] == 0  # a new base


def test_a_long_lived_process_refreshes_in_the_background_and_never_waits_long(project, monkeypatch):
    monkeypatch.setattr(live, "_background", True)
    monkeypatch.setattr(live, "FRESH_WAIT_SECONDS", 0.0)
    assert not answer(project, query="reconcile ledger", mode="lexical")["results"]
    change(project)
    started = time.monotonic()
    stale = answer(project, query="reconcile ledger", mode="lexical")
    assert time.monotonic() - started < 1.0
    assert (
        "the index changed and is being read in the background; this answer is from the snapshot of "
        in (stale["notice"])
    )
    # The checkout laid over the last snapshot answers for the new file already (issue 37).
    assert "1 new" in stale["notice"] and stale["results"][0]["file_path"] == "src/bookshelf/ledger.py"
    deadline = time.monotonic() + 30
    while live.refreshing(project.db) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    fresh = answer(project, query="reconcile ledger", mode="lexical")
    assert "notice" not in fresh and fresh["results"][0]["file_path"] == "src/bookshelf/ledger.py"


# A process that, like the MCP server, refreshes in the background and answers at once from the last snapshot.
IMPATIENT = textwrap.dedent("""
    import json, sys
    import onetool_code
    from onetool_code.index import live
    live.refresh_in_background()
    live.FRESH_WAIT_SECONDS = 0.0
    found = onetool_code.search(query="reconcile ledger", mode="lexical", path=sys.argv[1], format="json")
    print(json.dumps(found))
""")


def test_a_process_that_exits_finishes_the_refresh_it_started(project):
    """A refresh runs in a daemon thread inside DuckDB: the process exiting under it would tear DuckDB down
    while the thread reads through it (the test suite's own process once aborted so). An exiting process waits
    for it, and the snapshot it finishes answers the next process at once."""
    answer(project, query="reconcile ledger", mode="lexical")  # the snapshot of the state before the change
    change(project)

    def impatient() -> dict:
        done = subprocess.run(
            [sys.executable, "-c", IMPATIENT, str(project.root)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    stale = impatient()
    assert "being read in the background" in stale["notice"]
    assert stale["results"][0]["file_path"] == "src/bookshelf/ledger.py"  # the checkout over the last snapshot
    fresh = impatient()  # the refresh the first process started, finished before it exited
    assert "notice" not in fresh and fresh["results"][0]["file_path"] == "src/bookshelf/ledger.py"


def test_a_copy_that_does_not_fit_leaves_the_last_snapshot_answering_with_the_reason(project, monkeypatch):
    """Free space cannot be used up for real here without risk to the machine: the file system's answer is
    replaced by one with 1 MB free."""
    import shutil

    from test_snapshot import WRITER

    answer(project, query="load_config", mode="lexical")
    real = shutil.disk_usage

    def full(path):
        return real(path)._replace(free=1 << 20)

    monkeypatch.setattr(private_copy.shutil, "disk_usage", full)
    monkeypatch.setattr(live, "COPY_QUIET_SECONDS", 0.0)
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(project.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout.readline().strip() == "ready"
            found = answer(project, query="load_config", mode="lexical")
        finally:
            writer.stdin.close()
            writer.wait(30)
    assert found["results"]
    assert found["notice"].startswith("not enough free space in ")
    assert "this answer is from the snapshot of " in found["notice"]


def on_a_terminal(command: list[str]) -> tuple[str, str]:
    """What ``command`` writes to stderr, a terminal (a pseudo-terminal), and to stdout, a pipe."""
    parent, child = pty.openpty()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=child, text=True) as proc:
        os.close(child)
        seen = b""
        while True:
            ready, _, _ = select.select([parent], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(parent, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        out = proc.stdout.read()
        assert proc.wait(60) == 0
    os.close(parent)
    return seen.decode(), out


@pytest.mark.parametrize("terminal", [True, False])
def test_the_first_read_shows_its_progress_on_a_terminal_only(project, terminal):
    settled(project.db)
    command = [sys.executable, "-m", "onetool_code", "status", "--path", str(project.root)]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ.copy())
        assert done.returncode == 0 and done.stderr == ""  # too small a read for its line on a pipe
        return
    text, out = on_a_terminal(command)
    assert "chunks" in text and "vectors of text-embedding-3-small" in text and "lexical index" in text, text
    assert "392/392" in text and "\r" in text  # counts, redrawn in place
    assert "Files: " in out and "\x1b" not in out


def test_the_library_draws_nothing_even_on_a_terminal(project):
    """Only the command line writes to stderr: the library (OneTool's pack calls it inside OneTool, whose stderr
    is its own) reads an index for the first time in silence."""
    settled(project.db)
    script = "import sys, onetool_code; print(onetool_code.status(path=sys.argv[1]))"
    text, out = on_a_terminal([sys.executable, "-c", script, str(project.root)])
    assert text == "" and "Files: " in out


COMPACTED = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])
    vector = [float(x) for x in sys.argv[3].split(",")]
    con.execute("UPDATE embeddings_1536 SET embedding = ?::FLOAT[1536] WHERE chunk_id = ?", [vector, int(sys.argv[2])])
    # A compaction, as ChunkHound's ends its runs: every row rewritten, in order, at a new rowid.
    con.execute("CREATE TEMP TABLE kept AS SELECT * FROM embeddings_1536 ORDER BY rowid")
    con.execute("DELETE FROM embeddings_1536")
    con.execute("INSERT INTO embeddings_1536 SELECT * FROM kept ORDER BY rowid")
    con.execute("CHECKPOINT")
    con.close()
""")


def test_a_vector_updated_in_place_is_found_after_a_compaction_renumbers_every_row(project):
    from openai_server import vector_for

    from onetool_code.index import database

    query = "exponential backoff retry"
    first = answer(project, query=query, mode="semantic")
    with database.connect(project.root, project.db) as con:
        target, path = con.execute(
            "SELECT c.id, f.path FROM chunks c JOIN files f ON c.file_id = f.id "
            "WHERE f.path LIKE '%lruCache.js' ORDER BY c.id LIMIT 1"
        ).fetchone()
        rowids = dict(con.execute("SELECT id, rowid FROM embeddings_1536").fetchall())
    assert first["results"][0]["file_path"] != path
    vector = ",".join(repr(float(x)) for x in vector_for(query))
    done = subprocess.run(
        [sys.executable, "-c", COMPACTED, str(project.db), str(target), vector], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()
    settled(project.db)
    with database.connect(project.root, project.db) as con:
        moved = con.execute("SELECT id, rowid FROM embeddings_1536").fetchall()
    assert sum(rowids.get(i) != rowid for i, rowid in moved) > len(moved) / 2  # renumbered
    second = answer(project, query=query, mode="semantic")
    assert second["results"][0]["file_path"] == path and second["results"][0]["score"] == pytest.approx(1.0, abs=1e-3)
    assert status(project)["delta_chunks"] == 0  # the chunks are the base's; one vector was read again
    whole = onetool_code.search(
        query=query, path=str(project.root), base_url=project.base_url, mode="semantic", format="json", cache=False
    )
    assert places(second) == places(whole)


UPDATED = textwrap.dedent("""
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])
    vector = [float(x) for x in sys.argv[4].split(",")]
    con.execute("UPDATE embeddings_1536 SET embedding = ?::FLOAT[1536] WHERE chunk_id = ?", [vector, int(sys.argv[2])])
    con.execute("UPDATE embeddings_1536 SET model = model WHERE chunk_id = ?", [int(sys.argv[3])])  # moved, the same
    con.execute("CHECKPOINT")
    con.close()
""")


def test_of_two_rows_duckdb_moved_only_the_one_whose_vector_changed_is_read_again(project):
    """An UPDATE moves a row to a new rowid whether or not its vector changed: the two are told apart by the
    digest of the stored vector."""
    from openai_server import vector_for

    from onetool_code.index import database

    query = "exponential backoff retry"
    answer(project, query=query, mode="semantic")
    with database.connect(project.root, project.db) as con:
        changed, same = (
            row[0]
            for row in con.execute(
                "SELECT c.id FROM chunks c JOIN files f ON c.file_id = f.id "
                "WHERE f.path LIKE '%lruCache.js' ORDER BY c.id LIMIT 2"
            ).fetchall()
        )
        before = dict(con.execute("SELECT chunk_id, rowid FROM embeddings_1536").fetchall())
    vector = ",".join(repr(float(x)) for x in vector_for(query))
    done = subprocess.run(
        [sys.executable, "-c", UPDATED, str(project.db), str(changed), str(same), vector],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    settled(project.db)
    with database.connect(project.root, project.db) as con:
        after = dict(con.execute("SELECT chunk_id, rowid FROM embeddings_1536").fetchall())
    assert after[changed] != before[changed] and after[same] != before[same]  # both moved
    found = answer(project, query=query, mode="semantic")
    assert found["results"][0]["score"] == pytest.approx(1.0, abs=1e-3)
    (held,) = live.view(project.root, project.db).snapshot.vectors.values()
    assert held.added is not None and held.added.shape[0] == 1  # the changed vector alone was read again
    whole = onetool_code.search(
        query=query, path=str(project.root), base_url=project.base_url, mode="semantic", format="json", cache=False
    )
    assert places(found) == places(whole)


def holding(project):
    """A process holding the index read-write, as ChunkHound does while it indexes (``test_snapshot.WRITER``)."""
    from test_snapshot import WRITER

    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(project.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout.readline().strip() == "ready"
    return writer


def released(writer) -> None:
    writer.stdin.close()
    writer.wait(30)
    writer.stdout.close()


def test_a_full_cache_disk_beside_a_writer_says_so_not_in_use(project, monkeypatch):
    """No snapshot yet, a writer holds the index, and no copy fits: the error is the disk's, with what to do.
    Free space cannot be used up for real here without risk to the machine: the file system's answer is replaced
    by one with 1 MB free."""
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(private_copy.shutil, "disk_usage", lambda path: real(path)._replace(free=1 << 20))
    monkeypatch.setattr(live, "COPY_QUIET_SECONDS", 0.0)
    writer = holding(project)
    try:
        found = onetool_code.search(query="load_config", path=str(project.root), mode="lexical")
    finally:
        released(writer)
    assert found.startswith(
        f"Error: the index is in use by python (PID {writer.pid}) and cannot be copied to be read: "
    )
    assert "not enough free space in " in found and "set ONETOOL_CODE_CACHE_DIR to a folder on a larger disk" in found
    assert "\n" not in found


def test_status_says_who_holds_the_index_when_it_answers_from_a_copy(project, monkeypatch):
    monkeypatch.setattr(live, "COPY_QUIET_SECONDS", 0.0)
    writer = holding(project)
    try:
        text = onetool_code.status(path=str(project.root))
        data = onetool_code.status(path=str(project.root), format="json")
    finally:
        released(writer)
    (line,) = [line for line in text.splitlines() if line.startswith("In use by ChunkHound: ")]
    assert line.startswith(
        f"In use by ChunkHound: yes, python (PID {writer.pid}) holds it read-write; this answer is from a copy of it "
        "taken at "
    )
    assert data["held_by"] == {"pid": writer.pid, "program": "python"}
    assert data["snapshot"]["copy_seconds"] > 0 and data["snapshot"]["current"]
    after = onetool_code.status(path=str(project.root), format="json")
    assert after["held_by"] is None


def compact_steps(db: Path) -> tuple[Path, Path]:
    """ChunkHound 6.1's compaction as it moves files: ``chunks.db`` aside first (the rebuild comes later)."""
    backup, new = (db.with_name(db.name + suffix) for suffix in (".compact_backup", ".compact_new"))
    db.rename(backup)
    return backup, new


def assert_status_from_the_snapshot(project, notice: str) -> None:
    """``status`` answers from the snapshot a search would, says why in its text and json, and is no error."""
    text = onetool_code.status(path=str(project.root))
    data = onetool_code.status(path=str(project.root), format="json")
    assert f"\nRefresh: {notice}" in text and "\nFiles: 29, chunks: " in text, text
    assert data["snapshot"]["notice"].startswith(notice) and not data["snapshot"]["current"], data
    assert data["files"] == 29 and data["size_bytes"] > 0, data


def put_back(db: Path, backup: Path, new: Path) -> None:
    """The rebuild written beside the file and renamed into place: a new inode; then the backup removed."""
    new.write_bytes(backup.read_bytes())
    new.replace(db)
    backup.unlink()
    settled(db)


def test_a_search_during_a_compaction_answers_from_the_last_snapshot_never_not_indexed(project, sample_index):
    case = {"query": "retry with exponential backoff", "mode": "hybrid"}
    before = answer(project, **case)
    backup, new = compact_steps(project.db)
    during = answer(project, **case)
    assert during["notice"].startswith("the index is being compacted by ChunkHound; this answer is from the snapshot")
    assert during["results"] == before["results"]
    assert_status_from_the_snapshot(project, "the index is being compacted by ChunkHound; this answer is from ")
    # Another project's read prunes the snapshots of index files that are gone: not of one being compacted.
    answer(sample_index, **case)
    assert answer(project, **case)["notice"].startswith("the index is being compacted")
    put_back(project.db, backup, new)
    after = answer(project, **case)
    assert "notice" not in after and after["results"] == before["results"]


def test_a_search_with_no_snapshot_waits_for_the_compacted_file(project):
    import threading

    backup, new = compact_steps(project.db)
    finisher = threading.Timer(0.5, put_back, (project.db, backup, new))
    finisher.start()
    try:
        found = answer(project, query="retry with exponential backoff", mode="lexical")
    finally:
        finisher.join()
    assert found["results"] and "notice" not in found


@pytest.mark.parametrize("suffix", [".compact_backup", ".old", ".compact", ".swap_intent"])
def test_a_compactions_file_left_standing_makes_no_search_wait(project, monkeypatch, suffix):
    """A file no compaction is writing (a crashed one, or one the repository shipped) is not a compaction: the
    index is missing, and the answer says so at once."""
    from onetool_code.index import holders

    monkeypatch.setattr(holders, "COMPACTION_STALE_SECONDS", 0.3)
    project.db.rename(project.db.with_name(project.db.name + suffix))
    time.sleep(0.4)
    started = time.monotonic()
    answer = onetool_code.search(query="retry", path=str(project.root), base_url=project.base_url)
    assert answer.startswith("Error: Project not indexed.") and time.monotonic() - started < 5, answer


# ChunkHound 6.1.0's native writer as it swaps the file to compact it (``run_attach_copy_compaction`` in
# chunkhound-native's compaction.rs; the intent's text here is only the phase): after each step it prints the
# step's name and waits for a line.
NATIVE_SWAP = """
import os, shutil, sys

db = sys.argv[1]


def intent(phase):
    with open(db + ".swap_intent", "w") as f:
        f.write(phase)


def step(name):
    print(name, flush=True)
    sys.stdin.readline()


intent("pre-swap")
os.rename(db, db + ".old")
intent("phase1")
step("moved")
shutil.copyfile(db + ".old", db + ".compact")
step("rebuilt")
intent("phase2")
os.rename(db + ".compact", db)
os.remove(db + ".swap_intent")
os.remove(db + ".old")
step("swapped")
"""
BEING_COMPACTED = "the index is being compacted by ChunkHound; this answer is from "


def test_every_step_of_chunkhounds_native_swap_answers_from_the_snapshot_with_a_note(project):
    """Issue 32: while ChunkHound's native compaction had moved the file, searches were told "not indexed"."""
    case = {"query": "retry with exponential backoff", "mode": "hybrid"}
    before = answer(project, **case)
    with subprocess.Popen(
        [sys.executable, "-c", NATIVE_SWAP, str(project.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as swap:
        assert swap.stdin is not None and swap.stdout is not None
        for expected in ("moved", "rebuilt"):
            assert swap.stdout.readline().strip() == expected
            assert not project.db.exists()
            during = answer(project, **case)
            assert during["notice"].startswith(BEING_COMPACTED + "the snapshot of "), during
            assert during["results"] == before["results"]
            assert_status_from_the_snapshot(project, BEING_COMPACTED)
            swap.stdin.write("next\n")
            swap.stdin.flush()
        assert swap.stdout.readline().strip() == "swapped"
        swap.stdin.close()
    assert swap.returncode == 0
    settled(project.db)
    after = answer(project, **case)
    assert "notice" not in after and after["results"] == before["results"]


@pytest.mark.parametrize("suffix", [".swap_intent", ".old", ".compact"])
def test_each_name_of_the_native_swap_alone_is_a_compaction(project, suffix):
    case = {"query": "load_config", "mode": "lexical"}
    before = answer(project, **case)
    moved = [sys.executable, "-c", "import os, sys; os.rename(sys.argv[1], sys.argv[1] + sys.argv[2])"]
    subprocess.run([*moved, str(project.db), suffix], check=True)
    during = answer(project, **case)
    assert during["notice"].startswith(BEING_COMPACTED) and during["results"] == before["results"]
    assert_status_from_the_snapshot(project, BEING_COMPACTED)


def test_a_missing_file_with_a_snapshot_answers_from_it_and_says_how_to_index_again(project):
    """Not indexed only when nothing of the index is left: here its snapshot is."""
    case = {"query": "load_config", "mode": "lexical"}
    before = answer(project, **case)
    project.db.unlink()
    during = answer(project, **case)
    missing = (
        f"the index file {project.db} is missing and no compaction is moving it (if it was removed, index again: "
        f"chunkhound index {project.root}); this answer is from "
    )
    assert during["notice"].startswith(missing + "the snapshot of ") and during["results"] == before["results"]
    assert_status_from_the_snapshot(project, missing)
