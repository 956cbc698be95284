"""Kotlin and Swift on real code: definitions found by name, and what ChunkHound's index leaves out.

Why (issue 35): the held-out split of the semble benchmark has Kotlin and Swift repositories, the development split
has none, and our rules for them were written from small samples. This bench reads real code in both, written by
others: the sources of the npm package ``expo-modules-core`` (a pinned version, fetched with ``npm pack``: the
Android side in Kotlin, the iOS side in Swift, with TypeScript, C++ and Objective-C beside them), indexed by the
real ChunkHound 6.1.0 without embeddings, so the default search answers by words as on the semble bench.

The queries are made from the code, not written by hand, so that nobody's idea of a good answer decides them: each
type (``class``, ``interface``, ``object``; ``struct``, ``protocol``, ``enum``, ``actor``...) and function
(``fun``, ``func``) declared in exactly one file outside the tests (types of four letters or more, functions of six
or more starting in lowercase: not ``get`` or ``Item``), each asked by its bare name, as an agent asks for a
symbol. The gold is the file that declares it. Reported per language and kind: R@1 and MRR@10 over the distinct
files of the answer; and, per language, the share of non-blank lines that no chunk of the index covers (ChunkHound
drops some definitions whole: such a query cannot find its definition).

Run from the repository root (the first run downloads about 10 MB and indexes for about 15 s; then 1,329 searches
take under a minute; ``--work`` keeps the indexed copy for the next run; another checkout: see the top of
``bench/README.md``)::

    .venv-test/bin/python bench/languages.py --work /tmp/languages

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
from public_projects import REPO, _load

import onetool_code

PACKAGE = "expo-modules-core@58.1.0"
KEPT = ("android", "ios", "src", "common", "package.json", "README.md")  # not its 32 MB of prebuilt binaries
_MODIFIERS = {
    ".kt": r"public|private|internal|protected|open|abstract|sealed|data|inline|value|annotation|enum|inner|"
    r"override|suspend|external|operator|infix|@\w+(?:\([^)\n]*\))?",
    ".swift": r"public|private|internal|fileprivate|open|final|static|class|override|nonisolated|mutating|"
    r"convenience|required|indirect|@\w+(?:\([^)\n]*\))?",
}
_WORDS = {".kt": r"class|interface|object|fun", ".swift": r"class|struct|protocol|enum|actor|func|typealias"}
DECLARATION = {
    ext: re.compile(
        rf"^[ \t]*(?:(?:{_MODIFIERS[ext]})[ \t]+)*({_WORDS[ext]})[ \t]+(?:<[^>\n]*>[ \t]*)?(?:[\w<>?]+\.)?([A-Za-z_]\w*)",
        re.MULTILINE,
    )
    for ext in _WORDS
}
LANGUAGE = {".kt": "kotlin", ".swift": "swift"}
_KEYWORDS = frozenset({"extension", "class", "func", "fun", "var", "val", "let", "init"})
_TEST = re.compile(r"(^|/)(tests?|Tests?|androidTest|\w+Tests)(/|$)|Tests?\.\w+$")


@dataclass(frozen=True)
class Query:
    name: str
    kind: str  # "type" or "function"
    language: str
    gold: str
    line: int


def prepare(work: Path) -> Path:
    """The package unpacked and indexed under ``work`` (reused when already there)."""
    root = work / PACKAGE.replace("@", "-")
    if (root / ".chunkhound" / "db" / "chunks.db").is_file():
        return root
    env = _load("chunkhound_env", REPO / "tests" / "tooling" / "chunkhound_env.py").ensure_chunkhound()
    with tempfile.TemporaryDirectory() as download:
        subprocess.run(
            ["npm", "pack", "--silent", "--pack-destination", download, PACKAGE], check=True, stdout=subprocess.DEVNULL
        )
        (archive,) = Path(download).glob("*.tgz")
        with tarfile.open(archive) as tar:
            tar.extractall(download, filter="data")
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for name in KEPT:
            source = Path(download) / "package" / name
            if source.is_dir():
                shutil.copytree(source, root / name)
            elif source.is_file():
                shutil.copy2(source, root / name)
    (root / ".chunkhound.json").write_text(json.dumps({"indexing": {"per_file_timeout_seconds": 0}}))
    env.index_no_embeddings(root)
    return root


def queries(root: Path) -> list[Query]:
    """The names declared in exactly one non-test Kotlin or Swift file, in order."""
    found: dict[str, set[tuple[str, str, str, int]]] = defaultdict(set)
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.suffix not in DECLARATION or relative.startswith(".chunkhound") or _TEST.search(relative):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in DECLARATION[path.suffix].finditer(text):
            if match.group(2) in _KEYWORDS:  # "protocol extension, so that ..." in a doc comment
                continue
            kind = "function" if match.group(1) in ("fun", "func") else "type"
            line = text.count("\n", 0, match.start(2)) + 1
            found[match.group(2)].add((kind, LANGUAGE[path.suffix], relative, line))
    # A name declared more than once in its one file (a class and its constructor) counts by its first line.
    single = {
        name: min(places, key=lambda p: p[3]) for name, places in found.items() if len({p[2] for p in places}) == 1
    }
    types = sorted(n for n, p in single.items() if p[0] == "type" and len(n) > 3)
    functions = sorted(n for n, p in single.items() if p[0] == "function" and len(n) > 5 and n[0].islower())
    return [Query(name, *single[name]) for name in types + functions]


@contextlib.contextmanager
def _index(root: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to a copy of the index: the index file itself is never opened here."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "chunks.db"
        shutil.copy2(root / ".chunkhound" / "db" / "chunks.db", copy)
        con = duckdb.connect(str(copy), read_only=True)
        try:
            yield con
        finally:
            con.close()


def uncovered(root: Path) -> dict[str, tuple[int, int]]:
    """Per language: non-blank lines, and those no chunk of the index covers."""
    with _index(root) as con:
        files = con.execute("SELECT id, path, language FROM files").fetchall()
        spans = con.execute("SELECT file_id, start_line, end_line FROM chunks").fetchall()
    covered: dict[int, set[int]] = defaultdict(set)
    for file_id, start, end in spans:
        covered[file_id].update(range(start or 0, (end or 0) + 1))
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for file_id, path, language in files:
        lines = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        for number, line in enumerate(lines, start=1):
            if line.strip():
                totals[language][0] += 1
                totals[language][1] += number not in covered[file_id]
    return {language: (total, missing) for language, (total, missing) in totals.items()}


def in_a_chunk(root: Path, chosen: Sequence[Query]) -> set[str]:
    """The queries whose declaring line some chunk of the index covers."""
    with _index(root) as con:
        return {
            q.name
            for q in chosen
            if con.execute(
                "SELECT 1 FROM chunks c JOIN files f ON c.file_id = f.id "
                "WHERE f.path = ? AND c.start_line <= ? AND c.end_line >= ? LIMIT 1",
                [q.gold, q.line, q.line],
            ).fetchone()
        }


def rank(root: Path, query: Query) -> int | None:
    """The gold file's place among the answer's distinct files (first 10), as the semble bench counts."""
    answer = onetool_code.search(query=query.name, path=str(root), format="json", limit=10)
    if not isinstance(answer, dict):
        raise SystemExit(f"Error: {query.name}: {answer}")
    files = list(dict.fromkeys(str(hit["file_path"]) for hit in answer["results"]))
    return next((i for i, path in enumerate(files, start=1) if path == query.gold), None)


def report(
    chosen: Sequence[Query], ranks: dict[str, int | None], indexed: set[str], lines: dict[str, tuple[int, int]]
) -> str:
    """The Markdown: the places per language and kind, every name not first, and the lines in no chunk."""
    out = ["| language | kind | queries | R@1 | MRR@10 | declaration in no chunk |", "|---|---|---:|---:|---:|---:|"]
    groups: dict[tuple[str, str], list[Query]] = defaultdict(list)
    for q in chosen:
        groups[(q.language, q.kind)].append(q)
    for key in [*sorted(groups), ("all", "")]:
        group = chosen if key[0] == "all" else groups[key]
        first = sum(ranks[q.name] == 1 for q in group)
        mrr = sum(1 / r for q in group if (r := ranks[q.name])) / len(group)
        lost = sum(q.name not in indexed for q in group)
        out.append(f"| {key[0]} | {key[1]} | {len(group)} | {first}/{len(group)} | {mrr:.3f} | {lost} |")
    out.append("\nMissed (not first): " + ", ".join(
        f"`{q.name}` ({ranks[q.name] or '-'}{'' if q.name in indexed else ', in no chunk'})"
        for q in chosen if ranks[q.name] != 1
    ))  # fmt: skip
    out += ["", "| language | non-blank lines | in no chunk |", "|---|---:|---:|"]
    for language, (total, missing) in sorted(lines.items(), key=lambda item: -item[1][0]):
        out.append(f"| {language} | {total:,} | {missing:,} ({100 * missing / total:.1f}%) |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, help="directory for the package and its index (kept)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        work = (args.work or Path(scratch)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        root = prepare(work)
        chosen = queries(root)
        counts = Counter((q.language, q.kind) for q in chosen)
        print(
            f"{len(chosen)} queries: " + ", ".join(f"{n} {lang} {kind}" for (lang, kind), n in sorted(counts.items()))
        )
        ranks = {q.name: rank(root, q) for q in chosen}
        print(report(chosen, ranks, in_a_chunk(root, chosen), uncovered(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
