"""What searching the checkout over its index costs (issue 37), on Django 5.1.4 as ChunkHound indexed it.

Why: every search first asks how far the checkout is from its index, and lays the changed files over it. The
issue's targets: the no-change check adds at most 10% to a warm default search; a 50-file overlay at most 2x a warm
search; an edit is found by the first search after it is saved.

The corpus is never written: the edits go to a copy of its checkout made of hard links (each edited file is
written anew and renamed over its link, so the corpus's inode is untouched), and the bench points the index's
kept checkout at the copy. Timed in one process, warm (the snapshot read once), hybrid with the test embeddings
server in this process (``bench/hybrid_speed.py``), each row the median over the queries of the median of runs;
a warm row's ratio is to today's search timed in turn with it, run by run (the machine is shared):

- today: the search without the overlay (its check replaced by nothing);
- no change: the same search with the check (a watched checkout: the process is long-lived); the check alone,
  watched and with stats only (no watch: not Linux, the watch limit, a network file system);
- a 1-, 50- and 500-file overlay (each file edited: a function appended), warm, and the first search after the
  edit (the overlay made);
- the first search after one more save, with the 50-file overlay warm: its time, and whether the saved
  function is the first hit for its name.

Set the corpus up first (``bench/django_corpus.py``). Run from the repository root::

    .venv-test/bin/python bench/overlay.py [--runs 5] [--queries 10]

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import django_corpus  # noqa: E402
import hybrid_speed  # noqa: E402

from onetool_code import api, settings  # noqa: E402
from onetool_code.index import live, overlay  # noqa: E402
from onetool_code.project.drift import Checkout, drift  # noqa: E402


def _median_ms(runs: int, queries: Sequence[str], search: Callable[[str], object]) -> float:
    per_query = []
    for query in queries:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            search(query)
            times.append(time.perf_counter() - start)
        per_query.append(statistics.median(times))
    return statistics.median(per_query) * 1000


def _edit(path: Path, name: str) -> None:
    """Append a function, written anew and renamed over the hard link (the corpus's inode stays as it was)."""
    text = path.read_bytes() + f"\n\ndef {name}(attempt):\n    return attempt * 0.5\n".encode()
    fresh = path.with_name(path.name + ".overlay-bench")
    fresh.write_bytes(text)
    fresh.replace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=10)
    args = parser.parse_args()
    root = django_corpus.cache_dir() / f"django-{django_corpus.VERSION}"
    if not (root / ".chunkhound").is_dir():
        sys.exit(f"no Django index at {root}: run bench/django_corpus.py first")
    resolved = settings.resolve(path=str(root))
    queries = [q["query"] for q in json.loads((REPO / "bench" / "scale_queries.json").read_text())["queries"]]
    queries = queries[: args.queries]
    sources = sorted(p for p in root.rglob("*.py") if ".chunkhound" not in p.parts and "tests" not in p.parts)
    rows: list[tuple[str, float, str]] = []
    with hybrid_speed.dense_server() as server, tempfile.TemporaryDirectory(prefix="overlay-bench-") as scratch:

        def search(query: str) -> dict:
            return api.run_search(query=query, path=str(root), base_url=server.base_url, format="json")

        def unlaid(query: str) -> dict:
            laid = overlay.laid
            overlay.laid = lambda project_root, db_path, snapshot: overlay.Laid(snapshot)
            try:
                return search(query)
            finally:
                overlay.laid = laid

        for query in queries:
            search(query)  # warm: the snapshot read once, the query vectors' client made
        today = _median_ms(args.runs, queries, unlaid)
        rows.append(("warm hybrid search, no overlay (today)", today, ""))
        rows.append(("warm hybrid search with the check, no change", *_against(args, queries, search, unlaid)))
        kept = overlay.checkout(resolved.project_root, resolved.db_path)
        assert kept is not None
        files = _files(resolved)
        snapshot = live.view(resolved.project_root, resolved.db_path).snapshot
        # The whole of what a search pays for the checkout when nothing changed: the overlay's check.
        check = _median_ms(
            args.runs * 40, ["-"], lambda _: overlay.laid(resolved.project_root, resolved.db_path, snapshot)
        )
        how = "watched" if kept.unwatched is None else f"not watched: {kept.unwatched}"
        rows.append((f"the no-change check alone, long-lived ({how})", check, f"{check / today:.1%} of today's"))
        stated = Checkout(root, kept.exclude)
        stated.unwatched = "the bench's stat check"
        drift(stated, files)
        check = _median_ms(args.runs * 4, ["-"], lambda _: drift(stated, files))
        rows.append(
            ("the no-change check alone, no watch (kept walk: stats)", check, f"{check / today:.1%} of today's")
        )
        fresh = _median_ms(1, ["-"], lambda _: drift(Checkout(root, kept.exclude), files))
        rows.append(("the first check in a process (a walk)", fresh, ""))

        copy = Path(scratch) / "django"
        subprocess.run(["cp", "-al", str(root), str(copy)], check=True)
        shutil.rmtree(copy / ".chunkhound")
        overlay._checkouts[(resolved.project_root, resolved.db_path)] = Checkout(copy, kept.exclude)
        step = max(1, len(sources) // 500)
        chosen = [copy / p.relative_to(root) for p in sources[::step]][:500]
        done = 0
        run = int(time.time())  # new code each run: its vectors are not in the machine's cache yet
        for size in (1, 50, 500):
            for i in range(done, size):
                _edit(chosen[i], f"overlay_bench_added_{run}_{i}")
            done = size
            start = time.perf_counter()
            search(queries[0])
            first = (time.perf_counter() - start) * 1000
            rows.append((f"{size}-file overlay: first search after the edits", first, f"{first / today:.2f}x"))
            rows.append((f"{size}-file overlay: warm", *_against(args, queries, search, unlaid)))
            if size == 50:
                _edit(chosen[0], f"overlay_bench_saved_{run}")
                start = time.perf_counter()
                answer = search(f"overlay_bench_saved_{run}")
                saved = (time.perf_counter() - start) * 1000
                top = answer["results"][0]["file_path"] if answer.get("results") else None
                saved_file = chosen[0].relative_to(copy).as_posix()
                found = f"top hit the saved file ({top})" if top == saved_file else f"top hit {top}, not {saved_file}"
                rows.append(
                    ("50-file overlay: first search after one more save", saved, f"{saved / today:.2f}x; {found}")
                )
    print(f"Django 5.1.4 ({root}): {len(files):,} indexed files; {len(queries)} queries, median of {args.runs}\n")
    print("| step | median ms | against today |")
    print("|---|---:|---|")
    for label, ms, note in rows:
        print(f"| {label} | {ms:.1f} | {note} |" if ms >= 1 else f"| {label} | {ms:.3f} | {note} |")


def _against(
    args: argparse.Namespace, queries: Sequence[str], search: Callable[[str], object], today: Callable[[str], object]
) -> tuple[float, str]:
    """The search's median ms, and its ratio to today's search timed in turn with it, run by run (the machine's
    load, shared with other work, then weighs on both alike): the median over the queries of the ratio of
    medians."""
    took, ratios = [], []
    for query in queries:
        mine, theirs = [], []
        for _ in range(args.runs):
            for searcher, into in ((today, theirs), (search, mine)):
                start = time.perf_counter()
                searcher(query)
                into.append(time.perf_counter() - start)
        took.append(statistics.median(mine))
        ratios.append(statistics.median(mine) / statistics.median(theirs))
    return statistics.median(took) * 1000, f"{statistics.median(ratios):.2f}x"


def _files(resolved: settings.Settings) -> Sequence:
    from onetool_code import index

    def read(view: index.View) -> Sequence:
        with view.reader() as reader:
            return reader.files()

    return index.open(resolved).search(read)


if __name__ == "__main__":
    main()
