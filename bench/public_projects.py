"""Real lines, clean names, few bytes: our answers over real ChunkHound 6.1.0 indexes of three public projects.

Why (issue 10): an agent trusts ``file:start-end`` and opens exactly those lines, so over sources that have not
changed since indexing no hit may say its file changed, no name may be one of ChunkHound's made-up labels
(``item_..._paragraph_...``, ``heading_37``), and the answers must stay small. This measures all three, the way
a new user would meet them: the source distributions of httpx 0.28.1, click 8.1.8 and structlog 25.4.0
(downloaded from the package registry with pip, Markdown changelogs and READMEs included), each indexed by the
real ChunkHound (``tests/tooling/chunkhound_env.py``) with vectors from the local test server
(``tests/openai_server.py``), then 40 realistic queries, each in the semantic and the lexical mode.

Run from the repository root (the first run downloads about 0.5 MB and indexes for about 3 minutes; ``--work``
keeps the indexed copies for the next run)::

    .venv-test/bin/python bench/public_projects.py --work /tmp/public-projects
    .venv-test/bin/python bench/public_projects.py --work /tmp/public-projects --dump /tmp/answers

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

import onetool_code

REPO = Path(__file__).resolve().parents[1]
PROJECTS = {"httpx": "0.28.1", "click": "8.1.8", "structlog": "25.4.0"}
QUERIES = {
    "httpx": [
        "proxy transport", "follow redirects", "timeout configuration", "basic authentication",
        "stream response body", "cookies persistence", "HTTP/2 support", "retry on connection error",
        "URL query parameters encoding", "digest auth", "event hooks", "async client close",
        "content decoding gzip brotli", "SSL verify certificates",
    ],
    "click": [
        "command line option parsing", "environment variable for option", "progress bar", "prompt for password",
        "shell completion", "echo with colors", "testing CliRunner", "group subcommands",
        "file path type validation", "default value callback", "version option", "context object passing",
        "escape markup in help text",
    ],
    "structlog": [
        "configure processors", "JSON renderer", "bind context variables", "stdlib logging integration",
        "exception formatting", "timestamper", "contextvars merge", "dev console renderer colors",
        "caching logger", "testing capture logs", "filtering by level", "async logger methods",
        "callsite parameters",
    ],
}  # fmt: skip
MODES = ("semantic", "lexical")
MAX_NAME = 60
# ChunkHound's made-up labels (measured on 6.1.0): Markdown pieces, TOML tables, a kind and a line number.
SYNTHETIC = re.compile(
    r"^(heading_\d|paragraph_|item_\w*paragraph|unordered_list|ordered_list|code_block_|link_ref_|definition_)"
    r"|_line_\d|^file_structure$|^unnamed$"
)


def _load(name: str, path: Path) -> ModuleType:
    """A helper from ``tests/`` by path: ``tests`` is not a package."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"Error: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def prepare(work: Path, base_url: str) -> dict[str, Path]:
    """Each project unpacked and indexed by ChunkHound under ``work`` (reused when already there)."""
    env = _load("chunkhound_env", REPO / "tests" / "tooling" / "chunkhound_env.py").ensure_chunkhound()
    roots = {}
    for name, version in PROJECTS.items():
        root = work / f"{name}-{version}"
        if not (root / ".chunkhound" / "db" / "chunks.db").is_file():
            with tempfile.TemporaryDirectory() as download:
                subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                     "--dest", download, f"{name}=={version}"],
                    check=True,
                )  # fmt: skip
                (archive,) = Path(download).glob("*.tar.gz")
                with tarfile.open(archive) as tar:
                    tar.extractall(work, filter="data")
            env.index(root, base_url)
        roots[name] = root
    return roots


@dataclass(frozen=True)
class Answer:
    """One default text answer and what its JSON twin says about each result."""

    project: str
    query: str
    mode: str
    text: str
    results: int
    notes: tuple[str, ...]
    made_up_names: tuple[str, ...]
    long_names: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def measure(roots: dict[str, Path], base_url: str) -> list[Answer]:
    answers = []
    for name, queries in QUERIES.items():
        for query in queries:
            for mode in MODES:
                options = {"query": query, "path": str(roots[name]), "base_url": base_url, "mode": mode}
                text = onetool_code.search(**options)
                items = onetool_code.search(**options, format="json", max_bytes=1_000_000)
                if not isinstance(text, str) or not isinstance(items, list):
                    raise SystemExit(f"Error: {name}: {query!r}: {text}")
                names = [str(i["name"]) for i in items]
                answers.append(
                    Answer(
                        name, query, mode, text, len(items),
                        notes=tuple(str(i["note"]) for i in items if i.get("note")),
                        made_up_names=tuple(n for n in names if SYNTHETIC.search(n)),
                        long_names=tuple(n for n in names if len(n) > MAX_NAME),
                    )
                )  # fmt: skip
    return answers


def report(answers: Sequence[Answer]) -> str:
    out = [
        "| mode | answers | results | notes | made-up names | names over 60 | median bytes | max bytes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in (*MODES, "both"):
        chosen = [a for a in answers if mode in ("both", a.mode)]
        sizes = [a.size for a in chosen]
        out.append(
            f"| {mode} | {len(chosen)} | {sum(a.results for a in chosen):,} | {sum(len(a.notes) for a in chosen)} "
            f"| {sum(len(a.made_up_names) for a in chosen)} | {sum(len(a.long_names) for a in chosen)} "
            f"| {statistics.median(sizes):,.0f} | {max(sizes):,} |"
        )
    largest = max(answers, key=lambda a: a.size)
    out.append(f"\nLargest answer: {largest.size:,} bytes, {largest.project} {largest.query!r} ({largest.mode}).")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, help="directory for the projects and their indexes (kept)")
    parser.add_argument("--dump", type=Path, help="write every answer and the numbers as JSON into this file")
    args = parser.parse_args(argv)
    server_module = _load("openai_server", REPO / "tests" / "openai_server.py")
    with server_module.serve() as server, tempfile.TemporaryDirectory() as scratch:
        work = (args.work or Path(scratch)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        answers = measure(prepare(work, server.base_url), server.base_url)
    if args.dump:
        args.dump.write_text(json.dumps([asdict(a) for a in answers], indent=1), encoding="utf-8")
    print(report(answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
