"""``related`` and ``usages`` on Django 5.1.4 as the real ChunkHound 6.1.0 indexed it (issue 27).

- **related**: warm latency of ``api.run_related`` (ranking by a chunk's stored vector, shaping, the text answer)
  at 109,494 chunks x 1536 dims, from 30 places drawn with a fixed seed, with the embeddings setting pointed at a
  port nothing listens on: an answer proves no server was asked. Its target: at most 50 ms. For three of the
  places, its top 50 (chunk ids, before merging) is compared with ChunkHound's own SQL (``index.semantic``) given
  the chunk's stored vector, 2-3 s each.
- **usages**: 10 names, bare and qualified, against ``rg -w`` over the same files (those in the index). Two
  measures:

  - *rg's files*: ``rg -w -F NAME`` (a qualified name written as given, ``timezone.now``); those where it matches
    only lines that define the name are rg's false files by the issue's measure; the others (A) are what we must
    find (at least 95%).
  - *true files*: whether a listed file really uses the name, judged independently of both: for a Python file,
    its syntax tree (a ``Name`` or ``Attribute`` of the identifier, or its import; for ``module.name``, that
    attribute of ``module`` or the bare name imported from a module of that name; a ``def``/``class`` of it is a
    definition; a comment or a docstring is not a use), for another file, a line naming it that does not define
    it. A listed file that is not true is a *false file*; rg's are counted over ``rg -w -F IDENTIFIER``, what an
    agent would run for the bare name.

Run from the repository root::

    .venv-test/bin/python bench/django_corpus.py       # once
    .venv-test/bin/python bench/related_usages.py --blas-threads 1

Needs ``rg`` (ripgrep) on PATH. It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PLACES = 30
NAMES = (
    "bulk_create", "get_object_or_404", "mark_safe", "slugify", "reverse_lazy",
    "QuerySet.bulk_create", "Model.full_clean", "timezone.now", "text.slugify", "safestring.mark_safe",
)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, help="OPENBLAS_NUM_THREADS (set before numpy is imported)")
    args = parser.parse_args(argv)
    if args.blas_threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    import django_corpus

    root = django_corpus.ensure()
    with socket.socket() as probe:  # a port nothing listens on: any request would be refused
        probe.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    related(root, refused, args.reps)
    usages(root)
    return 0


# -- related ----------------------------------------------------------------------------------------------------


def related(root: Path, refused: str, reps: int) -> None:
    import numpy as np

    from onetool_code import api, index, request, schema, settings
    from onetool_code.index import database, live
    from onetool_code.search import related
    from onetool_code.search.query_vectors import embedding_set

    resolved = settings.resolve(path=str(root), base_url=refused)
    held = live.view(resolved.project_root, resolved.db_path).snapshot
    chosen = embedding_set(held.layout, resolved)
    vectors = held.vectors[chosen]
    chunks = held.chunks
    rng = random.Random(27)
    places = []
    for column in rng.sample(range(vectors.chunk_ids.size), PLACES):
        (hit,) = chunks.hits([(int(vectors.chunk_ids[column]), 0.0)])
        places.append((hit.file_path, hit.start_line))
    times: list[float] = []
    for file, line in places:
        answer = api.run_related(file=file, line=line, path=str(root), base_url=refused)  # warm
        assert isinstance(answer, str) and answer.startswith("Found "), answer
        samples = []
        for _ in range(reps):
            started = time.perf_counter()
            api.run_related(file=file, line=line, path=str(root), base_url=refused)
            samples.append((time.perf_counter() - started) * 1000)
        times.append(statistics.median(samples))
    same = exact = 0
    for file, line in places[:3]:
        req = request.parse(
            queries="like", batch=False, limit=50, offset=0, language=None, chunk_type=None, include=None,
            exclude=None, expand=None, mode="semantic", content=None, format=None, max_bytes=None,
        )  # fmt: skip
        ours = [hit.chunk_id for hit in related.run(resolved, req, file, line).hits]
        chunk_id = next(h.chunk_id for h in chunks.holding(file, line) if vectors.vector_of(h.chunk_id) is not None)
        with index.connect(resolved.project_root, resolved.db_path) as con:
            stored = database.vector_of(con, chosen, chunk_id)
            assert stored is not None
            (sql,) = database.semantic(con, chosen, stored[np.newaxis], schema.Filters(), 51, 0)
        expected = [h for h in sql if h.chunk_id != chunk_id][:50]
        exact += int(ours == [h.chunk_id for h in expected])
        # DuckDB rounds a cosine in its own way: identical vectors (the same code twice) may get scores an ulp
        # apart, which it then orders by that ulp and the snapshot by path (``cache.py``). Up to such ties:
        score = {h.chunk_id: h.score for h in expected}
        same += int(set(ours) == set(score) and all(score[a] >= score[b] - 1e-6 for a, b in itertools.pairwise(ours)))
    print(f"## related: Django 5.1.4 as ChunkHound indexed it ({vectors.chunk_ids.size:,} chunks x {chosen.dims})\n")
    print(f"{PLACES} places (seed 27), median of {reps} warm calls each, embeddings server: none (refused port)\n")
    print("| median ms | p90 ms | max ms | top 50 = ChunkHound's SQL order | up to ties of scores 1e-6 apart |")
    print("|---:|---:|---:|---:|---:|")
    p90 = statistics.quantiles(times, n=10)[-1]
    print(f"| {statistics.median(times):.1f} | {p90:.1f} | {max(times):.1f} | {exact} of 3 | {same} of 3 |\n")


# -- usages -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    written: str
    identifier: str
    module: str | None  # a lowercase qualifier


def usages(root: Path) -> None:
    from onetool_code import api, settings
    from onetool_code.index import live

    resolved = settings.resolve(path=str(root))
    indexed = {f.path for f in live.view(resolved.project_root, resolved.db_path).snapshot.files}
    print("## usages: 10 names against rg -w over the same files\n")
    print(
        "| name | rg -w NAME: files | of them definitions only | rg's files with another line (A) | ours "
        "| ours of A | true files | ours of them | ours false | rg -w identifier: false | ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for written in NAMES:
        *before, identifier = written.split(".")
        near = before[-1] if before else None
        name = Name(written, identifier, near if near and not near[0].isupper() else None)
        started = time.perf_counter()
        found = api.run_usages(name=written, path=str(root), format="json", max_bytes=1_000_000)
        elapsed = (time.perf_counter() - started) * 1000
        assert isinstance(found, dict) and "files" in found, found
        ours = {f["path"] for f in found["files"]}
        literal = _rg(root, written, indexed)
        rg_files = {path for path, lines in literal.items() if any(not _defines(text, identifier) for text in lines)}
        bare = _rg(root, identifier, indexed)
        true = {path for path in bare if _truly_uses(root, path, bare[path], name)}
        print(
            f"| `{written}` | {len(literal)} | {len(literal) - len(rg_files)} | {len(rg_files)} | {len(ours)} "
            f"| {_share(ours & rg_files, rg_files)} | {len(true)} | {_share(ours & true, true)} | {len(ours - true)} "
            f"| {len(bare.keys() - true)} | {elapsed:.0f} |"
        )


def _share(part: set[str], whole: set[str]) -> str:
    return f"{len(part)} ({100 * len(part) / len(whole):.1f}%)" if whole else "0"


def _rg(root: Path, text: str, indexed: set[str]) -> dict[str, list[str]]:
    """``rg -w -F text``'s matching lines, by file, for the files in the index."""
    out = subprocess.run(
        ["rg", "-w", "-F", "--no-heading", "--with-filename", "--no-line-number", "--glob", "!.chunkhound", text, "."],
        cwd=root, capture_output=True, text=True, errors="replace", check=False,
    )  # fmt: skip
    found: dict[str, list[str]] = {}
    for row in out.stdout.splitlines():
        path, _, line = row.partition(":")
        path = path.removeprefix("./")
        if path in indexed:
            found.setdefault(path, []).append(line)
    return found


def _defines(line: str, identifier: str) -> bool:
    from onetool_code.names import definition_lines

    return re.search(definition_lines([identifier.lower()]), line) is not None


def _truly_uses(root: Path, path: str, lines: Sequence[str], name: Name) -> bool:
    """The independent judgement: a Python file by its syntax tree, another file by its lines."""
    if path.endswith(".py"):
        try:
            tree = ast.parse((root / path).read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            tree = None
        if tree is not None:
            return _tree_uses(tree, path, name)
    mentions = [line for line in lines if not _defines(line, name.identifier)]
    if name.module is None:
        return bool(mentions)
    pattern = re.compile(rf"(?<![\w$]){re.escape(name.module)}(?![\w$])")
    text = (root / path).read_text(encoding="utf-8", errors="replace")
    return bool(mentions) and pattern.search(text) is not None


def _tree_uses(tree: ast.AST, path: str, name: Name) -> bool:
    ident, module = name.identifier, name.module
    own_module = module is not None and module in {*Path(path).parent.parts, Path(path).stem}
    imported = False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and any(a.name == ident for a in node.names)
            and (module is None or (node.module or "").split(".")[-1] == module)
        ):
            imported = True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == ident:
            if module is None:
                return True
            value = node.value
            qualifier = value.id if isinstance(value, ast.Name) else getattr(value, "attr", None)
            if qualifier == module:
                return True
        elif isinstance(node, ast.Name) and node.id == ident and (module is None or imported or own_module):
            return True
    return imported


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    sys.exit(main())
