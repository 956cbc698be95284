"""A first read's lexical index, built by a child process while this one reads the vectors.

Both jobs are partly Python (the tokens; DuckDB's one object per vector), so on one interpreter they take turns
at the GIL: at 109,494 chunks a thread beside the vectors' read saved nothing (10.5 s, against 10.1 s one after
the other). A child has an interpreter and a core of its own. It maps the rows this process has written to the
spill folder (``ChunkRows.save``), writes bm25s' files beside them, and exits; this process maps those files, and
the snapshot moves them into place (``lexical.save``). The answers are the same as a build here: it is the same
code over the same rows.

A child costs its start-up (imports: about 0.4 s), so a small index, or one without vectors to read meanwhile, is
tokenised on a thread as before; so is one whose child cannot start or fails (told in the call's log).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from onetool_code.index import lexical
from onetool_code.index.rows import ChunkRows
from onetool_code.spans import note

MIN_CHUNKS = 20_000  # below this a child's start-up costs more than it saves

# The child imports this very package, the parent's copy: its folder is put first unless the child's own path
# (the parent's environment, without the current directory: ``-P``) has it already, then ``main`` runs.
_START = (
    "import sys; sys.argv[1] in sys.path or sys.path.insert(0, sys.argv[1]); "
    "from onetool_code.index import lexical_process as m; m.main()"
)
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


class Pending:
    """The lexical index being built; ``result`` waits for it, ``cancel`` stops a child (a failed read; a
    thread's build, once started, runs to its end)."""

    def __init__(self, result: Callable[[], lexical.LexicalIndex], cancel: Callable[[], object]) -> None:
        self.result, self.cancel = result, cancel


def start(chunks: ChunkRows, spilled: Path | None, with_vectors: bool) -> Pending:
    """Start building the lexical index of ``chunks``: in a child process when they are many, spilled (their
    texts on disk, under ``spilled / "rows"``) and vectors are read meanwhile; else on a thread."""
    if spilled is None or not with_vectors or chunks.chunk_ids.size < MIN_CHUNKS or not sys.executable:
        return _on_thread(chunks)
    out, log = spilled / "lexical", spilled / "lexical.log"
    try:
        chunks.save(spilled / "rows")  # the blobs are there already: this adds the arrays the child maps
        out.mkdir()
        with log.open("wb") as told:  # a file, not a pipe: a chatty child never waits for this one to read
            child = subprocess.Popen(
                [sys.executable, "-P", "-c", _START, _PACKAGE_PARENT, str(spilled / "rows"), str(out)],
                stdin=subprocess.PIPE,  # held open: the child exits when it closes (``_orphaned``)
                stdout=subprocess.DEVNULL,
                stderr=told,
            )
    except OSError as exc:
        note(f"the lexical index is built in this process: no child could start ({exc})")
        return _on_thread(chunks)

    def result() -> lexical.LexicalIndex:
        child.wait()
        _close(child)
        if child.returncode == 0:
            try:
                return dataclasses.replace(lexical.load(out, chunks), files=out)
            except (OSError, ValueError, KeyError) as exc:
                told = f"what it wrote cannot be read: {exc}"
        else:
            told = f"it failed ({child.returncode}): {log.read_text('utf-8', 'replace')[-500:]}"
        note(f"the lexical index is built in this process: {told}")
        return lexical.build(chunks)

    def cancel() -> None:
        child.kill()
        child.wait()
        _close(child)

    return Pending(result, cancel)


def _close(child: subprocess.Popen[bytes]) -> None:
    if child.stdin is not None:
        child.stdin.close()


def _on_thread(chunks: ChunkRows) -> Pending:
    """``lexical.build`` on a thread of its own (the GIL is shared, but the vectors' DuckDB and numpy parts let go
    of it)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="onetool-code lexical index")
    try:
        future: Future[lexical.LexicalIndex] = pool.submit(lexical.build, chunks)
    finally:
        pool.shutdown(wait=False)
    return Pending(future.result, future.cancel)


def main() -> None:
    """The child: ``sys.argv`` is [-c, package parent, rows folder, output folder]. (A parent that forks without
    exec hands the pipe's end to its fork too: the child then outlives the parent until the fork exits.)"""
    rows_folder, out = Path(sys.argv[2]), Path(sys.argv[3])
    threading.Thread(target=_orphaned, daemon=True).start()
    lexical.save(lexical.build(ChunkRows.load(rows_folder)), out)


def _orphaned() -> None:
    """Exit as soon as the parent's end of stdin closes: a parent that died, or gave the read up, leaves no child
    tokenising for nobody. (The descriptor itself: a thread blocked in ``sys.stdin`` would abort the
    interpreter's normal exit, which waits for that stream's lock.)"""
    while os.read(0, 4096):
        pass
    os._exit(3)
