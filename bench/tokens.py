"""Tokens per answer: the bytes an agent must read to answer one code question, ours against the alternatives.

Why: agents pay for every byte a tool returns, and OneTool hides any result over 5,000 bytes behind a handle
(issue 3, "Benchmark: tokens per answer"). This reproduces the search-efficiency RFC's comparison on the
bundled sample project, counting the WHOLE response an agent receives, not only the code in it:

1. ``ours``: ``onetool_code.search(query=q)``, the default text answer (limit 10);
2. ``ChunkHound md``: ChunkHound's MCP Markdown layout rendered from the same ranked hits (before our merge);
3. ``old OneTool``: the historical ``code`` pack's layout (500-character snippets) for the same hits;
4. ``rg -n`` and ``rg -n -C3`` for the query's words (our tokenizer's tokens, one case-insensitive alternation);
5. ``grep files``: reading every file that ``rg`` matches, whole;
6. ``right files``: reading whole the files that truly answer the query (``right`` in the queries file).

Tokens are estimated as bytes/4. Targets (reported, never asserted; this is a benchmark, not a test):
median default response <= 1,400 bytes and none over 4,000 bytes (issue 10; issue 3 asked for 2,000 and 5,000),
>= 3x smaller than ChunkHound's Markdown.

Semantic search needs embeddings, so the deterministic local OpenAI-compatible server of
``tests/openai_server.py`` runs in-process, and a temporary copy of the sample project is indexed (the
fixture itself is never written to). ``--index`` chooses who builds that index:

- ``onetool``: ``onetool_code.indexer.build_index`` (ChunkHound-compatible chunks);
- ``windows``: a stand-in builder in this file, ~30-line windows in ChunkHound's schema, for as long as the
  indexer does not exist (TODO: drop it once ``onetool_code.indexer.build_index`` has landed);
- ``chunkhound``: the real ChunkHound 6.1.0 from ``tests/tooling/chunkhound_env.py`` (~3 min to install the
  first time, then cached): its chunks are what agents meet in practice;
- ``auto`` (default): ``onetool`` when it is importable, else ``windows``.

Run from the repository root::

    /tmp/dev/bin/python bench/tokens.py                   # Markdown tables
    /tmp/dev/bin/python bench/tokens.py --json            # the numbers, as JSON
    /tmp/dev/bin/python bench/tokens.py --dump /tmp/resp  # every response, to read where the bytes go

ripgrep is looked up on PATH and next to this Python (``pip install ripgrep`` puts ``rg`` there;
``apt-get install ripgrep`` on Debian). Without it the rg and grep-files columns say ``no rg``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from types import ModuleType
from typing import Any

from onetool_code import names, request, schema, settings
from onetool_code.answer import shaping
from onetool_code.api import search
from onetool_code.hits import Hit
from onetool_code.index import database
from onetool_code.search import engine, query_vectors

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PROJECT = REPO / "fixtures" / "project"
DEFAULT_QUERIES = Path(__file__).resolve().with_name("queries.json")

TARGET_MEDIAN = 1_400
TARGET_MAX = 4_000
TARGET_CHUNKHOUND_RATIO = 3.0
OLD_SNIPPET_CHARS = 500  # the old pack's snippet length without ``expand``
WINDOW_LINES = 30
# ChunkHound's Markdown uses these (3 UTF-8 bytes each, and they count): escapes keep the source unambiguous.
EN_DASH = "\u2013"
EM_DASH = "\u2014"
EMBED_BATCH = 64

# The stand-in builder's file set: what ChunkHound would parse in the sample project. Extension -> language.
LANGUAGE_BY_EXTENSION = {
    "py": "python", "ts": "typescript", "tsx": "tsx", "js": "javascript", "jsx": "jsx", "go": "go",
    "rs": "rust", "java": "java", "md": "markdown", "toml": "toml", "json": "json", "yaml": "yaml",
    "yml": "yaml", "sh": "bash", "sql": "sql",
}  # fmt: skip
LANGUAGE_BY_NAME = {"Makefile": "makefile"}


# -- the queries ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """One benchmark question; ``right`` is the smallest set of files that answers it, read whole."""

    query: str
    kind: str
    right: tuple[str, ...]
    why: str = ""


def load_queries(path: Path, project: Path) -> list[Query]:
    """The queries file, checked against the project: a renamed fixture file must fail loudly, not count 0."""
    data = json.loads(path.read_text(encoding="utf-8"))
    queries = [
        Query(str(q["query"]), str(q.get("kind", "")), tuple(q.get("right", ())), str(q.get("why", "")))
        for q in data["queries"]
    ]
    missing = sorted({f for q in queries for f in q.right if not (project / f).is_file()})
    if missing:
        raise SystemExit(f"Error: {path} names right files that are not in {project}: {', '.join(missing)}")
    wordless = [q.query for q in queries if not names.match_tokens(q.query)]
    if wordless:  # rg would get an empty pattern and match every line
        raise SystemExit(f"Error: queries without a word of two or more characters for rg: {wordless}")
    return queries


# -- the project copy and its index --------------------------------------------------------------------------


def _ignored(rel: str, patterns: Sequence[str]) -> bool:
    """A small .gitignore subset (``dir/``, ``a/b/``, ``*.ext``), enough for the sample project's file."""
    parts = rel.split("/")
    for pattern in patterns:
        if pattern.endswith("/"):
            body = pattern.rstrip("/")
            if "/" in body:
                if rel.startswith(body.lstrip("/") + "/"):
                    return True
            elif body in parts[:-1]:
                return True
        elif fnmatch(parts[-1], pattern):
            return True
    return False


def project_files(root: Path) -> list[tuple[str, str]]:
    """(relative path, language) of the files ChunkHound would index: no hidden or ignored paths."""
    gitignore = root / ".gitignore"
    patterns = []
    if gitignore.is_file():
        patterns = [
            line.strip() for line in gitignore.read_text().splitlines() if line.strip() and not line.startswith("#")
        ]
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or any(part.startswith(".") for part in rel.split("/")) or _ignored(rel, patterns):
            continue
        language = LANGUAGE_BY_NAME.get(path.name) or LANGUAGE_BY_EXTENSION.get(path.suffix.lstrip("."))
        if language:
            found.append((rel, language))
    return found


def build_window_index(config: settings.Settings) -> str:
    """The stand-in index: every file cut into ~30-line windows, embedded, in ChunkHound's own DDL.

    TODO: remove once ``onetool_code.indexer.build_index`` exists; it makes real, definition-shaped chunks.
    """
    import duckdb

    from onetool_code.search import embeddings

    root = config.project_root
    rows: list[tuple[int, str, str, int, int, str]] = []  # file id, language, code, start, end, symbol
    files = project_files(root)
    for file_id, (rel, language) in enumerate(files, start=1):
        lines = (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
        for start in range(1, len(lines) + 1, WINDOW_LINES):
            window = lines[start - 1 : start - 1 + WINDOW_LINES]
            if any(line.strip() for line in window):
                rows.append(
                    (file_id, language, "\n".join(window), start, start + len(window) - 1, f"block_line_{start}")
                )
    vectors = embeddings.embed([r[2] for r in rows], config, batch_size=EMBED_BATCH)
    dims = int(vectors.shape[1])
    config.db_path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(config.db_path))
    try:
        for statement in (*schema.SCHEMA_DDL, *schema.embedding_ddl(dims)):
            con.execute(statement)
        con.execute("INSERT INTO schema_version (version, description) VALUES (?, ?)", list(schema.SCHEMA_VERSION_ROW))
        for file_id, (rel, language) in enumerate(files, start=1):
            path = root / rel
            con.execute(
                "INSERT INTO files (id, path, name, extension, size, language) VALUES (?, ?, ?, ?, ?, ?)",
                [file_id, rel, path.name, path.suffix.lstrip(".") or None, path.stat().st_size, language],
            )
        table = schema.embedding_table(dims)
        for chunk_id, ((file_id, language, code, start, end, symbol), vector) in enumerate(
            zip(rows, vectors, strict=True), start=1
        ):
            con.execute(
                "INSERT INTO chunks (id, file_id, chunk_type, symbol, code, start_line, end_line, language) "
                "VALUES (?, ?, 'block', ?, ?, ?, ?, ?)",
                [chunk_id, file_id, symbol, code, start, end, language],
            )
            con.execute(
                f"INSERT INTO {table} (chunk_id, provider, model, embedding) VALUES (?, ?, ?, ?)",
                [chunk_id, config.provider, config.model, vector.tolist()],
            )
    finally:
        con.close()
    return f"stand-in builder: {WINDOW_LINES}-line windows, {len(files)} files, {len(rows)} chunks"


def _onetool_builder() -> Callable[..., Any] | None:
    try:
        module = importlib.import_module("onetool_code.indexer")
    except ImportError:
        return None
    builder = getattr(module, "build_index", None)
    return builder if callable(builder) else None


def _load_file(name: str, path: Path) -> ModuleType:
    """Import a helper from ``tests/`` by path: ``tests`` is not a package, and sys.path stays untouched."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"Error: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class body runs
    spec.loader.exec_module(module)
    return module


def build_index(kind: str, config: settings.Settings, base_url: str) -> str:
    """Index the project copy with the chosen builder; returns a one-line description for the report."""
    if kind == "auto":
        kind = "onetool" if _onetool_builder() else "windows"
    if kind == "windows":
        return build_window_index(config)
    if kind == "onetool":
        builder = _onetool_builder()
        if builder is None:
            raise SystemExit("Error: onetool_code.indexer.build_index does not exist (yet); use --index windows")
        builder(config, embeddings=True)
        return "onetool_code.indexer.build_index"
    chunkhound_env = _load_file("chunkhound_env", REPO / "tests" / "tooling" / "chunkhound_env.py")
    env = chunkhound_env.ensure_chunkhound()
    env.index(config.project_root, base_url)
    return f"ChunkHound {chunkhound_env.CHUNKHOUND_VERSION}"


# -- the layouts we compare with ------------------------------------------------------------------------------


def render_chunkhound(hits: Sequence[Hit], total: int, page_size: int, offset: int = 0) -> str:
    """ChunkHound 6.1's MCP ``search`` Markdown, as chunkhound-index.md describes it, for these hits.

    Per hit: ``## `path` L10<en dash>L20 <em dash> symbol (92%)``, a blank line, the whole chunk in a fence
    (language hint, longer than any backtick run inside); hits joined by ``---``; the footer counts ``total``
    hits. Rendered here rather than run, so both layouts show exactly the same hits.
    """
    if not hits:
        return "No results found."
    blocks = []
    for hit in hits:
        parts = [f"## `{hit.file_path}`"]
        parts.append(
            f"L{hit.start_line}{EN_DASH}L{hit.end_line}" if hit.end_line != hit.start_line else f"L{hit.start_line}"
        )
        if hit.symbol:
            parts.append(f"{EM_DASH} {hit.symbol}")
        parts.append(f"({round(hit.score * 100)}%)")
        longest = _longest_backtick_run(hit.code)
        fence = "`" * max(3, longest + 1)
        hint = "" if hit.language == "unknown" else hit.language
        blocks.append(f"{' '.join(parts)}\n\n{fence}{hint}\n{hit.code}\n{fence}")
    pages = max(1, math.ceil(total / page_size))
    footer = f"Page {offset // page_size + 1} of {pages} (results {offset + 1}{EN_DASH}{offset + len(hits)} of {total})"
    if offset + page_size < total:
        footer += f" | next_offset={offset + page_size}"
    return "\n\n---\n\n".join(blocks) + f"\n\n---\n{footer}"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def render_old_onetool(hits: Sequence[Hit], query: str) -> str:
    """The historical OneTool ``code`` pack (1.0.0b2) for these hits: header, then per result the type,
    symbol, language, ``File:``, ``Score:`` and the code cut to 500 characters.

    Its source is gone; the field lines are from onetool-pack.md, the blank lines, the fence and the ``...``
    after a cut snippet are our reconstruction (a few bytes per result either way).
    """
    if not hits:
        return f"No results found for: {query}"
    out = [f"Found {len(hits)} results for: {query}"]
    for i, hit in enumerate(hits, start=1):
        code = hit.code if len(hit.code) <= OLD_SNIPPET_CHARS else hit.code[:OLD_SNIPPET_CHARS] + "..."
        out.append(
            f"\n{i}. [{hit.chunk_type}] {hit.symbol} ({hit.language})\n"
            f"   File: {hit.file_path}:{hit.start_line}-{hit.end_line}\n"
            f"   Score: {hit.score:.4f}\n"
            f"```{hit.language}\n{code}\n```"
        )
    return "\n".join(out)


@dataclass(frozen=True)
class Ripgrep:
    """The ``rg`` binary, or None with the reason, so a machine without it still gets the other columns."""

    binary: str | None
    version: str

    @classmethod
    def find(cls, explicit: str | None) -> Ripgrep:
        candidates = [explicit] if explicit else [shutil.which("rg"), str(Path(sys.executable).with_name("rg"))]
        for candidate in candidates:
            if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
                try:
                    out = subprocess.run(
                        [candidate, "--version"], capture_output=True, text=True, check=True, timeout=30
                    ).stdout
                except (OSError, subprocess.SubprocessError):
                    continue
                return cls(candidate, out.splitlines()[0] if out else "rg")
        return cls(None, "not installed")

    def run(self, args: Sequence[str], cwd: Path) -> bytes | None:
        """rg's stdout as an agent's shell tool would capture it (no tty: ``path:line:text``, no colour).

        ``--no-require-git`` honours the project's .gitignore in the temporary copy (not a git checkout),
        as it would in the agent's real checkout; ``--sort path`` makes the output reproducible.
        """
        if self.binary is None:
            return None
        proc = subprocess.run(
            [self.binary, "--no-require-git", "--sort", "path", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=60,
        )
        if proc.returncode not in (0, 1):  # 1: nothing matched
            raise SystemExit(f"Error: rg {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout


# -- measuring ------------------------------------------------------------------------------------------------


@dataclass
class Row:
    """One query's sizes in bytes (None: not measurable here, e.g. no rg), and how good our answer was."""

    query: str
    kind: str
    hits: int
    results: int
    ours: int
    chunkhound: int
    old_onetool: int
    rg_n: int | None
    rg_c3: int | None
    grep_files: int | None
    grep_file_count: int | None
    right_files: int
    right_file_count: int
    first_right_rank: int | None  # rank of our first result in a right file, 1-based
    right_found: int  # how many of the right files our answer names
    responses: dict[str, str] = field(default_factory=dict, repr=False)

    def ratio(self, other: int | None) -> float | None:
        return None if other is None or not self.ours else other / self.ours


def measure(q: Query, root: Path, base_url: str, rg: Ripgrep, total: int) -> Row:
    """Every layout's bytes for one query, all from the same ranked hits."""
    config = settings.resolve(path=str(root), base_url=base_url)
    req = request.parse(config, queries=q.query, mode="semantic")
    ranked = engine.run(config, req)
    ours = search(query=q.query, path=str(root), base_url=base_url)
    if not isinstance(ours, str) or ours.startswith("Error:"):
        raise SystemExit(f"Error: search({q.query!r}) failed: {ours}")
    results = shaping.shape(ranked.hits, req, root)
    ranks = [i for i, r in enumerate(results, start=1) if r.file_path in q.right]
    chunkhound = render_chunkhound(ranked.hits, total, req.limit)
    old = render_old_onetool(ranked.hits, q.query)

    regex = "|".join(names.match_tokens(q.query))
    rg_n = rg.run(["-n", "-i", "-e", regex], root)
    rg_c3 = rg.run(["-n", "-i", "-C3", "-e", regex], root)
    listed = rg.run(["-l", "-i", "-e", regex], root)
    grep_files = None if listed is None else [f for f in listed.decode().splitlines() if f]
    responses = {"ours": ours, "chunkhound": chunkhound, "old_onetool": old}
    if rg_n is not None and rg_c3 is not None:
        responses |= {"rg_n": rg_n.decode(errors="replace"), "rg_c3": rg_c3.decode(errors="replace")}
    return Row(
        query=q.query,
        kind=q.kind,
        hits=len(ranked.hits),
        results=len(results),
        ours=_bytes(ours),
        chunkhound=_bytes(chunkhound),
        old_onetool=_bytes(old),
        rg_n=None if rg_n is None else len(rg_n),
        rg_c3=None if rg_c3 is None else len(rg_c3),
        grep_files=None if grep_files is None else sum((root / f).stat().st_size for f in grep_files),
        grep_file_count=None if grep_files is None else len(grep_files),
        right_files=sum((root / f).stat().st_size for f in q.right),
        right_file_count=len(q.right),
        first_right_rank=ranks[0] if ranks else None,
        right_found=len({r.file_path for r in results} & set(q.right)),
        responses=responses,
    )


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def embedded_chunks(config: settings.Settings) -> int:
    """ChunkHound's footer total for a semantic search: every chunk with a vector of the model."""
    with database.connect(config.project_root, config.db_path) as con:
        return query_vectors.embedding_set(database.layout(con, config.db_path), config).count


@contextmanager
def project_copy(project: Path, keep: Path | None = None) -> Iterator[Path]:
    """A copy of the project without any index it may carry, so the fixture is never written to.

    Thrown away afterwards, unless ``keep`` names a (new) directory: then the copy and its index stay there
    for a closer look (``python -m onetool_code search ... --path KEEP``).
    """
    ignore = shutil.ignore_patterns(".chunkhound", "__pycache__")
    if keep is not None:
        if keep.exists():
            raise SystemExit(f"Error: --keep {keep} already exists; name a new directory")
        shutil.copytree(project, keep, ignore=ignore)
        yield keep.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="onetool-bench-") as tmp:
        dest = Path(tmp) / project.name
        shutil.copytree(project, dest, ignore=ignore)
        yield dest


# -- reporting ------------------------------------------------------------------------------------------------

COLUMNS: tuple[tuple[str, str], ...] = (
    ("ours", "ours"),
    ("chunkhound", "ChunkHound md"),
    ("old_onetool", "old OneTool"),
    ("rg_n", "rg -n"),
    ("rg_c3", "rg -n -C3"),
    ("grep_files", "grep files"),
    ("right_files", "right files"),
)


def _cell(value: int | None, missing: str) -> str:
    return missing if value is None else f"{value:,} ({value // 4:,})"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


def summary(rows: Sequence[Row]) -> dict[str, Any]:
    """Totals, our median and max, ratios against ours, and the targets (met or not, never asserted)."""
    totals: dict[str, int | None] = {}
    for key, _ in COLUMNS:
        values = [getattr(r, key) for r in rows]
        totals[key] = None if any(v is None for v in values) else sum(values)
    ours = [r.ours for r in rows]
    ratios = {k: None if v is None else v / totals["ours"] for k, v in totals.items() if k != "ours" and totals["ours"]}
    per_query_ch = [r.chunkhound / r.ours for r in rows]
    median = statistics.median(ours)
    return {
        "queries": len(rows),
        "totals_bytes": totals,
        "totals_tokens": {k: None if v is None else v // 4 for k, v in totals.items()},
        "ours_median_bytes": median,
        "ours_max_bytes": max(ours),
        "ours_max_query": rows[ours.index(max(ours))].query,
        "ratio_vs_ours": ratios,
        "chunkhound_ratio_min": min(per_query_ch),
        "chunkhound_ratio_median": statistics.median(per_query_ch),
        "chunkhound_ratio_queries_at_target": sum(1 for r in per_query_ch if r >= TARGET_CHUNKHOUND_RATIO),
        "right_in_top3": sum(1 for r in rows if r.first_right_rank is not None and r.first_right_rank <= 3),
        "targets": {
            f"median <= {TARGET_MEDIAN:,} bytes": median <= TARGET_MEDIAN,
            f"max <= {TARGET_MAX:,} bytes": max(ours) <= TARGET_MAX,
            f"ChunkHound/ours >= {TARGET_CHUNKHOUND_RATIO:g}x (total)": (ratios.get("chunkhound") or 0)
            >= TARGET_CHUNKHOUND_RATIO,
        },
    }


def markdown(rows: Sequence[Row], facts: dict[str, Any], rg: Ripgrep) -> str:
    missing = "no rg"
    head = ["#", "query", "kind", *(title for _, title in COLUMNS), "CH/ours", "old/ours", "right/ours", "right@"]
    lines = [
        f"Tokens per answer on `{facts['project']}` ({facts['index']}; {facts['embedded_chunks']} embedded chunks; "
        f"{rg.version}). Each cell: bytes (tokens = bytes/4). `right@`: rank of our first result in a right "
        "file, and how many right files our answer names.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---:" if i == 0 or i > 2 else "---" for i in range(len(head))) + "|",
    ]
    for i, r in enumerate(rows, start=1):
        cells = [str(i), r.query, r.kind, *(_cell(getattr(r, key), missing) for key, _ in COLUMNS)]
        cells += [_times(r.ratio(r.chunkhound)), _times(r.ratio(r.old_onetool)), _times(r.ratio(r.right_files))]
        cells.append(f"{r.first_right_rank or '-'} ({r.right_found}/{r.right_file_count})")
        lines.append("| " + " | ".join(cells) + " |")
    s = summary(rows)
    total_cells = ["", "**total**", "", *(_cell(s["totals_bytes"][key], missing) for key, _ in COLUMNS)]
    total_cells += [_times(s["ratio_vs_ours"].get(k)) for k in ("chunkhound", "old_onetool", "right_files")]
    total_cells.append(f"top-3: {s['right_in_top3']}/{len(rows)}")
    lines.append("| " + " | ".join(total_cells) + " |")
    lines += ["", "| layout | total bytes | total tokens | x ours |", "|---|---:|---:|---:|"]
    for key, title in COLUMNS:
        b, t = s["totals_bytes"][key], s["totals_tokens"][key]
        ratio = "1.0x" if key == "ours" else _times(s["ratio_vs_ours"].get(key))
        lines.append(
            f"| {title} | {missing if b is None else f'{b:,}'} | {missing if t is None else f'{t:,}'} | {ratio} |"
        )
    lines += [
        "",
        f"- ours: median {s['ours_median_bytes']:,.0f} bytes, max {s['ours_max_bytes']:,} bytes "
        f"({s['ours_max_query']!r})",
        f"- ChunkHound Markdown / ours: {_times(s['ratio_vs_ours'].get('chunkhound'))} in total, per query "
        f"min {s['chunkhound_ratio_min']:.1f}x, median {s['chunkhound_ratio_median']:.1f}x; "
        f"{s['chunkhound_ratio_queries_at_target']} of {len(rows)} queries at >= {TARGET_CHUNKHOUND_RATIO:g}x",
    ]
    lines += [f"- target {name}: {'met' if ok else 'NOT met'}" for name, ok in s["targets"].items()]
    if rg.binary is None:
        lines.append("- rg not installed: `apt-get install ripgrep` or `pip install ripgrep`, or pass --rg PATH")
    return "\n".join(lines)


def dump(rows: Sequence[Row], directory: Path) -> None:
    """Write every response to ``directory/NN-<layout>.txt`` so a reader can see where the bytes go."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, row in enumerate(rows, start=1):
        for layout, text in row.responses.items():
            (directory / f"{i:02d}-{layout}.txt").write_text(f"{row.query}\n\n{text}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--project", type=Path, default=DEFAULT_PROJECT, help="project to copy and index")
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES, help="queries file (JSON)")
    parser.add_argument("--index", choices=("auto", "onetool", "windows", "chunkhound"), default="auto")
    parser.add_argument("--rg", help="path of the rg binary (default: PATH, then next to this Python)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON instead of Markdown")
    parser.add_argument("--dump", type=Path, help="directory to write every response into")
    parser.add_argument("--keep", type=Path, help="keep the indexed project copy in this new directory")
    args = parser.parse_args(argv)

    project = args.project.resolve()
    queries = load_queries(args.queries, project)
    rg = Ripgrep.find(args.rg)
    server_module = _load_file("openai_server", REPO / "tests" / "openai_server.py")
    with server_module.serve() as server, project_copy(project, args.keep) as root:
        config = settings.resolve(path=str(root), base_url=server.base_url)
        built = build_index(args.index, config, server.base_url)
        total = embedded_chunks(config)
        rows = [measure(q, root, server.base_url, rg, total) for q in queries]
    facts = {
        "project": os.path.relpath(project, Path.cwd()),
        "index": built,
        "embedded_chunks": total,
        "rg": rg.version,
    }
    if args.dump:
        dump(rows, args.dump)
    if args.json:
        data = {
            "facts": facts,
            "rows": [{k: v for k, v in asdict(r).items() if k != "responses"} for r in rows],
            "summary": summary(rows),
        }
        print(json.dumps(data, indent=2))
    else:
        print(markdown(rows, facts, rg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
