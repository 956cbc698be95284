"""Ablation of the hybrid ranking: each signal turned off in turn, on every relevance bench at once.

Why: a signal of the ranking is kept only if the benches say it earns its place, on code nobody here tuned for as
well as on what it was built for. Each row sets the constants of one signal to the value that turns it off (a
factor of 1, a weight of 0) in this process, then runs, as an agent calls the library:

- the public semble benchmark's development split, words only (``bench/semble.py``: 14 repositories in 7
  languages, 268 queries, NDCG@10 over files as semble scores; our side only, semble's own figure is that
  bench's);
- the relevance bench on three small packages with real multilingual-e5-small vectors (``bench/relevance.py``);
- the scale bench on Django 5.1.4 (``bench/relevance.py --corpus django``: the test server's dense vectors);
- the same corpus asked questions written before any search ran on them (``bench/scale_queries_unseen.json``).

Every row reads the indexes into a fresh snapshot cache of its own (some signals live in the lexical index), so a
row costs the snapshots of the three corpora (under a minute a row on 2 cores; Django's is the long part).
Set the benches up first: ``bench/semble.py --setup-only``, ``bench/relevance_setup.py``,
``bench/django_corpus.py``.

Run from the repository root::

    .venv-test/bin/python bench/ablation.py                       # every row, a Markdown table
    .venv-test/bin/python bench/ablation.py --rows all,path_words --skip django

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import relevance
import semble

from onetool_code import names
from onetool_code.index import lexical
from onetool_code.index.store import STORE
from onetool_code.search import file_roles, lookup, ranking, retrieval

_FILE_EVIDENCE = ranking._file_evidence


def _evidence_as_code(scored: dict[Any, float], wants: Any, kinds: dict[str, float], met: Any, files: Any) -> None:
    """The file's evidence whatever kind of file it is (before issue 35's third pass)."""
    _FILE_EVIDENCE(scored, wants, dict.fromkeys(kinds, 1.0), met, files)


# name -> (what it is, the constants that turn it off)
ROWS: dict[str, tuple[str, dict[tuple[Any, str], Any]]] = {
    "all": ("every signal on", {}),
    "stems": ("words matched by their stems (Snowball)", {(names, "stem"): lambda token: token}),
    "path_in_bm25": (
        "the file's name twice and its folders in BM25's documents (off: its whole path once)",
        {(lexical, "STEM_REPEATS"): 1, (lexical, "FOLDERS"): 1000},
    ),
    "path_words": ("words of the file's name and folder lift its best hit", {(ranking, "PATH_WORDS"): 0.0}),
    "coherent_file": ("a file many of whose chunks match lifts its best hit", {(ranking, "COHERENT_FILE"): 0.0}),
    "same_file": ("a file's third hit and after decay", {(ranking, "SAME_FILE"): 1.0}),
    "per_file": ("each list keeps 10 hits of a file at most", {(retrieval, "PER_FILE"): 10**9}),
    "kinds": (
        "tests, documentation and data below code (in the lexical list and the prior)",
        {(ranking, "TESTS"): 1.0, (ranking, "DOCS"): 1.0, (ranking, "NOT_CODE"): 1.0},
    ),
    "not_code": ("configuration and data below code", {(ranking, "NOT_CODE"): 1.0}),
    "other_case": ("a name defined in another case than written counts less", {(ranking, "OTHER_CASE"): 1.0}),
    "in_prose": ("a name that is a word of a sentence counts less", {(ranking, "IN_PROSE"): 1.0}),
    "declaration": (
        "a type, trait or macro declaring the name above other definitions",
        {(ranking, "DECLARATION"): 1.0},
    ),
    "fusion_k60": ("reciprocal-rank constant 60 (off: 10, as before)", {(ranking, "HYBRID_K"): 10}),
    "file_focus": (
        "the share of the file's own name the query says lifts its best hit",
        {(ranking, "FILE_FOCUS"): 0.0},
    ),
    "hub_names": (
        "a hub file (mod.rs, __init__.py, index.ts) goes by its folder's name",
        {(file_roles, "HUB_NAMES"): frozenset()},
    ),
    "short_forms": (
        "a word's short form in code names a file or folder (client_ws.py for websocket, db/ for database)",
        {(file_roles, "short_forms"): lambda word: frozenset()},
    ),
    "project_words": (
        "the project's own name in a question names no file (cobra.go for 'how cobra integrates pflags')",
        {(file_roles, "project_words"): lambda name: frozenset()},
    ),
    "run_together": (
        "two words of a question run together find the definition so named ('JSON object': class JsonObject)",
        {(lookup, "run_together"): lambda query: frozenset()},
    ),
    "exported": ("a chunk re-exporting a name the query spells", {(ranking, "EXPORTED"): 1.0}),
    "lexical_lead": (
        "a tenth of a sentence's lexical value is its BM25 score over the first's, not its rank",
        {(ranking, "LEXICAL_LEAD"): 0.0},
    ),
    "file_words": (
        "a file's BM25 score as one document lifts its best hit (simplemerge.py for 'three-way text merge')",
        {(ranking, "FILE_WORDS"): 0.0},
    ),
    "definitions_weight": (
        "the named-definitions list below the words' own (off: weighed alike)",
        {(ranking, "DEFINITIONS_WEIGHT"): 1.0},
    ),
    "qualified_definitions": (
        "a qualified name keeps the named-definitions list at full weight",
        {(ranking, "QUALIFIED_DEFINITIONS_WEIGHT"): 0.6},
    ),
    "legacy": ("legacy copies (deprecated/, _compat/, v3/ beside v4/) below current code", {(ranking, "LEGACY"): 1.0}),
    "file_kind": (
        "a file's evidence (name, hits, focus) weighed by its kind, as its hits are",
        {(ranking, "_file_evidence"): _evidence_as_code},
    ),
    "phrases": (
        "five of the query's words in a row in the chunk (a pasted error message, a signature)",
        {(ranking, "PHRASE"): 0.0},
    ),
    "spelled_out": (
        "a definition whose name is three or more of the question's words ('compare ... in constant time')",
        {(ranking, "SPELLED_OUT"): 1.0},
    ),
    "qualified_files": (
        "a qualified name found where its qualifiers meet it lifts no other file by its name (Router::route)",
        {
            (ranking, "_file_evidence"): lambda scored, wants, kinds, met, files: _FILE_EVIDENCE(
                scored, wants, kinds, None, files
            )
        },
    ),
}


@contextlib.contextmanager
def turned_off(constants: dict[tuple[Any, str], Any]) -> Iterator[None]:
    """The constants set for the block, put back after; a fresh snapshot cache and no snapshot in memory."""
    saved = {(module, name): getattr(module, name) for module, name in constants}
    cache = tempfile.mkdtemp(prefix="onetool-code-ablation-")
    previous = os.environ.get("ONETOOL_CODE_CACHE_DIR")
    os.environ["ONETOOL_CODE_CACHE_DIR"] = cache
    for (module, name), value in constants.items():
        setattr(module, name, value)
    STORE.clear()
    _clear_caches()
    try:
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)
        STORE.clear()
        _clear_caches()
        if previous is None:
            del os.environ["ONETOOL_CODE_CACHE_DIR"]
        else:
            os.environ["ONETOOL_CODE_CACHE_DIR"] = previous
        shutil.rmtree(cache, ignore_errors=True)


def _clear_caches() -> None:
    """What is remembered of a path was computed with the constants before (a hub file's name)."""
    file_roles.own_name.cache_clear()
    file_roles.name_words.cache_clear()


def semble_split() -> dict[str, Any]:
    """Ours, hybrid, on the development split: overall and per category NDCG@10, and each repository's."""
    data, cache = semble.DEFAULT_DATA, semble.default_cache_dir()
    repos = semble.load_repos(data)
    queries = {r.name: semble.load_queries(data, r.name) for r in repos}
    answers = {r.name: semble.run_ours(r.root(cache), queries[r.name], "hybrid") for r in repos}
    summary = semble.summarize({"ours": answers}, queries, data)["ours"]
    return {
        "ndcg": summary["overall"]["ndcg10"],
        "categories": summary["overall"]["per_category"],
        "repos": {name: r["ndcg10"] for name, r in summary["per_repo"].items()},
    }


def relevance_bench(*options: str) -> dict[str, Any]:
    """The hybrid summary of ``bench/relevance.py`` (its own output, Markdown, is not needed here)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as details, contextlib.redirect_stdout(io.StringIO()):
        relevance.main(["--modes", "hybrid", "--details", details.name, *options])
        return json.loads(Path(details.name).read_text())["modes"]["hybrid"]["summary"]


BENCHES: dict[str, Callable[[], dict[str, Any]]] = {
    "semble": semble_split,
    "small": relevance_bench,
    "django": lambda: relevance_bench("--corpus", "django"),
    "unseen": lambda: relevance_bench("--corpus", "django", "--queries", str(relevance.UNSEEN_QUERIES)),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of: {', '.join(ROWS)}")
    parser.add_argument("--skip", default="", help="benches to leave out: semble, small, django, unseen")
    parser.add_argument("--json-out", type=Path, help="write every row's numbers here")
    args = parser.parse_args(argv)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    benches = {name: run for name, run in BENCHES.items() if name not in args.skip.split(",")}
    results: dict[str, dict[str, Any]] = {}
    for row in rows:
        started = time.perf_counter()
        with turned_off(ROWS[row][1]):
            results[row] = {name: run() for name, run in benches.items()}
        print(f"[ablation] {row}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results, list(benches)))
    return 0


def markdown(results: dict[str, dict[str, Any]], benches: list[str]) -> str:
    head = ["row", "signal turned off"]
    if "semble" in benches:
        head += ["semble NDCG@10", "semantic", "architecture", "symbol", "lowest repository"]
    for name in ("small", "django", "unseen"):
        if name in benches:
            head += [f"{name} R@1", f"{name} MRR@10", f"{name} Def@10"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    base = results.get("all")
    for row, numbers in results.items():
        cells = [row, ROWS[row][0] if row != "all" else "(none: every signal on)"]
        if "semble" in numbers:
            s = numbers["semble"]
            delta = f" ({s['ndcg'] - base['semble']['ndcg']:+.3f})" if base and row != "all" else ""
            lowest = min(s["repos"].items(), key=lambda kv: kv[1])
            cells += [f"{s['ndcg']:.3f}{delta}"]
            cells += [f"{s['categories'][c]:.3f}" for c in ("semantic", "architecture", "symbol")]
            cells += [f"{lowest[0]} {lowest[1]:.3f}"]
        for name in ("small", "django", "unseen"):
            if name in numbers:
                r = numbers[name]
                cells += [f"{r['r1'] * 100:.0f}%", f"{r['mrr10']:.2f}", f"{r['def10'] * 100:.0f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
