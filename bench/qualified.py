"""Qualified names on real code: ``Router::route``, ``JsonReader.peek``, asked where the bare name is ambiguous.

Why (issue 35, fourteenth pass): an agent names a method by its type, in its language's way (Rust's and C++'s
``Type::method``, the others' ``Type.method``), most often when the bare name is everywhere (``new``, ``route``,
``parse``). The semble benchmark's symbol questions are bare names, so nothing measured this. The queries are made
from the code, not written by hand: in each of the semble development split's repositories (already indexed by
``bench/semble.py``'s setup, words only), every method or function whose name is defined in two or more files
outside the tests, inside a type declared in one file only (not zod's ``ZodObject``, in its legacy ``v3/`` and its
current code), is asked as ``Type::method`` or ``Type.method``. The gold is that file. The types come from the
file's own syntax (``project.definitions.outline``: the class, ``impl`` or trait around a method, a Go method's
receiver). At most ``--per-repo`` queries a repository, spread evenly over its files in path order. Reported per
repository: R@1 and MRR@10 over the answer's distinct files; ``--dotted`` also asks Rust and C++ with a dot.

Run from the repository root after ``bench/semble.py --setup-only`` (a minute or two)::

    .venv-test/bin/python bench/qualified.py
    .venv-test/bin/python bench/qualified.py --data /tmp/blind-questions/benchmark --cache-dir /tmp/blind-questions/semble

The second asks the Kotlin (and Java) and Swift of ``expo-modules-core``, laid out by ``bench/blind_questions.py``.

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import semble

import onetool_code
from onetool_code.project.definitions import outline
from onetool_code.search.file_roles import is_test

LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "rust", "java", "kotlin", "swift", "cpp", "c", "go"}
)
COLONS = frozenset({"rust", "cpp", "c"})  # the languages that write ``Type::method``
CALLABLE = frozenset({"function", "method", "constructor"})


@dataclass(frozen=True)
class Asked:
    repo: str
    language: str
    owner: str
    name: str
    gold: str

    def query(self, dotted: bool) -> str:
        return f"{self.owner}{'.' if dotted or self.language not in COLONS else '::'}{self.name}"


def make_queries(root: Path, repo: str, per_repo: int) -> list[Asked]:
    """The qualified names of ``root``'s index whose bare name is defined in two files or more."""
    with duckdb.connect(str(semble._db(root)), read_only=True) as con:
        files = con.execute("SELECT path, language FROM files ORDER BY path").fetchall()
    where: dict[str, set[str]] = defaultdict(set)  # bare name -> files defining it
    types: dict[str, set[str]] = defaultdict(set)  # type -> files declaring it or a block of it
    owned: dict[tuple[str, str], set[str]] = defaultdict(set)  # (type, name) -> files
    languages: dict[str, str] = {}
    for path, language in files:
        if language not in LANGUAGES or is_test(path):
            continue
        try:
            text = (root / path).read_text()
        except (OSError, UnicodeDecodeError):
            continue
        for definition in outline(text, language):
            if definition.label not in CALLABLE:
                types[definition.name].add(path)
                continue
            if len(definition.name) < 3 or definition.name.startswith("__"):
                continue
            where[definition.name].add(path)
            if definition.parents:
                owned[(definition.parents[-1], definition.name)].add(path)
                languages[path] = language
    candidates = sorted(
        (next(iter(paths)), owner, name)
        for (owner, name), paths in owned.items()
        if len(paths) == 1
        and len(where[name]) > 1
        and len(types[owner]) == 1
        and len(owner) > 1
        and owner.isidentifier()
    )
    step = max(1, len(candidates) // per_repo) if candidates else 1
    return [Asked(repo, languages[path], owner, name, path) for path, owner, name in candidates[::step][:per_repo]]


def rank(root: Path, asked: Asked, dotted: bool) -> int | None:
    answer = onetool_code.search(query=asked.query(dotted), path=str(root), format="json", limit=10)
    files = semble.distinct_files([result["file_path"] for result in answer.get("results", [])])
    return files.index(asked.gold) + 1 if asked.gold in files else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-repo", type=int, default=30)
    parser.add_argument("--repos", help="comma-separated (default: all of the split)")
    parser.add_argument("--dotted", action="store_true", help="also ask Rust and C++ names with a dot")
    parser.add_argument("--cache-dir", type=Path, default=semble.default_cache_dir())
    parser.add_argument("--data", type=Path, default=semble.DEFAULT_DATA)
    args = parser.parse_args(argv)
    for key in [k for k in os.environ if k.startswith(semble._SCRUBBED_PREFIXES)]:
        del os.environ[key]  # words only, as the semble bench answers
    os.environ["ONETOOL_CODE_CACHE_DIR"] = tempfile.mkdtemp(prefix="qualified-")
    wanted = set(args.repos.split(",")) if args.repos else None
    ways = [False, True] if args.dotted else [False]
    print(f"onetool_code: `{Path(onetool_code.__file__).resolve()}`\n")
    print("| repository | queries | " + " | ".join(("dotted " if d else "") + "R@1 | MRR@10" for d in ways) + " |")
    print("|---|---:|" + "---:|---:|" * len(ways))
    totals: dict[bool, list[int | None]] = defaultdict(list)
    for repo in semble.load_repos(args.data):
        if wanted and repo.name not in wanted:
            continue
        root = repo.root(args.cache_dir)
        asked = make_queries(root, repo.name, args.per_repo)
        if not asked:
            continue
        cells = []
        for dotted in ways:
            ranks = [rank(root, a, dotted) for a in asked]
            totals[dotted].extend(ranks)
            cells.append(_cells(ranks))
            for a, r in zip(asked, ranks, strict=True):
                if r != 1:
                    print(f"[qualified] {repo.name}: {a.query(dotted)} -> {a.gold} at {r}", file=sys.stderr)
        print(f"| {repo.name} | {len(asked)} | " + " | ".join(cells) + " |")
    print(f"| all | {len(totals[False])} | " + " | ".join(_cells(totals[d]) for d in ways) + " |")
    return 0


def _cells(ranks: Sequence[int | None]) -> str:
    first = sum(1 for r in ranks if r == 1) / len(ranks)
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    return f"{first:.0%} | {mrr:.3f}"


if __name__ == "__main__":
    sys.exit(main())
