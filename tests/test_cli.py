"""The command line, in-process: output on stdout, one-line errors on stderr, exit codes 0/1/2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import build_index, compact_rows, read_compact

import onetool_code
from onetool_code import advice, agents, cli, progress

REPO = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_json(capsys, sample_index):
    code, out, err = run(
        capsys, "search", "retry with exponential backoff", "--path", str(sample_index.root),
        "--base-url", sample_index.base_url, "--limit", "5", "--json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    hits = json.loads(out)["results"]
    assert 0 < len(hits) <= 5
    assert {"file_path", "start_line", "end_line", "chunk_type", "name", "language", "score"} <= set(hits[0])


def test_search_with_every_option(capsys, sample_index):
    code, out, err = run(
        capsys, "search", "retry", "--path", str(sample_index.root), "--mode", "lexical", "--limit", "3",
        "--offset", "1", "--language", "python|go", "--chunk-type", "function|method", "--include", "src|services",
        "--exclude", "test", "--expand", "2", "--content", "always", "--max-bytes", "4000", "--format", "compact",
    )  # fmt: skip
    assert code == 0, err
    answer = read_compact(out.removesuffix("\n"))
    assert answer["count"] <= 3 and all(where.endswith((".py", ".go")) for where, *_ in compact_rows(answer))


def test_batch_and_status(capsys, sample_index):
    code, out, _ = run(capsys, "batch", "retry|cache", "--path", str(sample_index.root), "--mode", "lexical")
    assert code == 0 and out.startswith("Found ") and "for 2 queries" in out.splitlines()[0]
    code, out, _ = run(capsys, "status", "--path", str(sample_index.root))
    assert code == 0 and "Files: " in out and "In use by ChunkHound: no" in out


def test_no_results_exit_zero(capsys, sample_index):
    assert run(capsys, "search", "zzqxv", "--path", str(sample_index.root), "--mode", "lexical")[:2] == (
        0, "No results found for: zzqxv\n",
    )  # fmt: skip


def test_errors_exit_one_with_one_message_on_stderr(capsys, tmp_path):
    code, out, err = run(capsys, "search", "x", "--path", str(tmp_path))
    assert (code, out) == (1, "")
    root = tmp_path.resolve()
    assert err == (
        f"Error: Project not indexed. Run: chunkhound index {root} (expected database at: "
        f"{root / '.chunkhound/db/chunks.db'}; or build a compatible index with: python -m onetool_code index "
        f"{root}, or without an embeddings key, enough for words: python -m onetool_code index {root} "
        "--no-embeddings)\n"
    )


@pytest.mark.parametrize("fmt", ["json", "compact", "text"])
@pytest.mark.parametrize("budget", [500, 1200, 5000])
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_every_format_fits_the_budget_as_printed(capsys, sample_index, fmt, budget, mode):
    code, out, err = run(
        capsys, "search", "retry backoff cache config", "--path", str(sample_index.root), "--mode", mode,
        "--base-url", sample_index.base_url, "--format", fmt, "--max-bytes", str(budget), "--content", "always",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert len(out.removesuffix("\n").encode()) <= budget
    if fmt != "text":
        answer = read_compact(out.removesuffix("\n")) if fmt == "compact" else json.loads(out)
        assert answer["count"] >= (1 if budget > 500 else 0)


LOANS = "admin/src/main/java/org/bookshelf/admin/LoanService.java"
INDEX = "src/bookshelf/search_index.py"


@pytest.mark.parametrize(
    ("query", "mode", "first", "method", "lines", "preview"),
    [
        ("how is the fine for an overdue loan computed", "hybrid", f"{LOANS}:16-118 class LoanService", "fineFor", (101, 105),
         ["101: /** Fine owed for a loan as of {@code asOf}. */", "102: public long fineFor(Loan loan, LocalDate asOf) {"]),
        ("withdraw a book from the index", "hybrid", f"{INDEX}:60-213 class BookSearchIndex", "remove", (104, 116),
         ["104: def remove(self, book_id: int) -> bool:",
          '105: """Withdraw a book from the index. Returns False if it was absent."""']),
        ("autocomplete indexed terms by prefix", "hybrid", f"{INDEX}:60-213 class BookSearchIndex", "suggest", (200, 205),
         ["200: def suggest(self, prefix: str, limit: int = 5) -> list[str]:",
          '201: """Autocomplete: indexed terms starting with ``prefix``, most common first."""']),
        ("lend a book to a member", "lexical", f"{LOANS}:16-118 class LoanService", "borrow", (74, 86),
         ["74: /** Lend a book to a member, enforcing the open-loan limit. */",
          "75: public Loan borrow(long memberId, long bookId) {"]),
        ("hit rate statistics of the cache", "lexical", "web/src/lruCache.js:11-83 class LruCache", "stats", (73, 82),
         ["73: stats() {", "80: hitRate: total === 0 ? 0 : this.hits / total,"]),
    ],
)  # fmt: skip
def test_a_long_result_names_the_definition_the_query_is_about(
    capsys, sample_index, query, mode, first, method, lines, preview
):
    """A whole class answers; the method inside it that the query's words meet best is named first among its
    definitions and its lines are the preview and the matching lines, in every format (issue 36, item 5)."""
    where = ["--path", str(sample_index.root), "--base-url", sample_index.base_url, "--mode", mode]
    code, out, err = run(capsys, "search", query, *where, "--content", "never")
    assert (code, err) == (0, "")
    said = out.splitlines()
    assert said[1].startswith(f"1. {first} (")
    assert said[2].startswith(f"  defines: method {method}, ")
    assert said[3:5] == [f"  {line}" for line in preview]
    code, out, err = run(capsys, "search", query, *where, "--content", "never", "--format", "json")
    top = json.loads(out)["results"][0]
    assert top["definitions"].startswith(f"method {method}, ")
    assert [line.strip() for line in top["preview"].split("\n")] == [line.partition(": ")[2] for line in preview]
    assert top["match_lines"] and set(top["match_lines"]) <= set(range(lines[0], lines[1] + 1))
    code, out, err = run(capsys, "search", query, *where, "--content", "never", "--format", "compact")
    (_, _, _, row), *_ = compact_rows(read_compact(out.removesuffix("\n")))
    assert row[4] == "\n".join(preview) and row[5]["d"].startswith(f"method {method}, ")


def test_a_query_naming_the_long_result_itself_names_nothing_inside(capsys, sample_index):
    """ "LoanService" asks for the class: no method of it is put first, the class's own lines are previewed."""
    code, out, _ = run(capsys, "search", "LoanService", "--path", str(sample_index.root), "--base-url",
                       sample_index.base_url, "--content", "never")  # fmt: skip
    assert code == 0
    assert out.splitlines()[1].startswith(f"1. {LOANS}:16-118 class LoanService (")
    assert out.splitlines()[2:4] == [
        "  defines: method withStatus, class Policy, method standard, maxOpenLoans, loanDays, finePerDayCents "
        "(+5 more)",
        "  68: public LoanService(LoanRepository repository, Policy policy, Clock clock) {",
    ]


def test_a_first_read_of_a_big_index_says_so_once_on_a_pipe(tmp_path):
    """A pipe (a script, a log) gets one line on stderr when a first read is a long one (``NOTICE_CHUNKS`` or
    more); the warm search after it says nothing, and what is on stdout is the same."""
    functions = 100  # a chunk each
    files = progress.NOTICE_CHUNKS // functions + 1
    (tmp_path / "src").mkdir()
    for f in range(files):
        code = "".join(f"def handler_{f}_{i}(value):\n    return value * {i} + {f}\n\n\n" for i in range(functions))
        (tmp_path / "src" / f"mod_{f}.py").write_text(code)
    db = build_index(tmp_path, None, embeddings=False)
    command = [
        sys.executable, "-m", "onetool_code", "search", "handler_7_7", "--mode", "lexical", "--path", str(tmp_path),
        "--limit", "2",
    ]  # fmt: skip
    first, warm = [subprocess.run(command, capture_output=True, text=True, timeout=120) for _ in range(2)]
    chunks = files * functions
    assert (first.returncode, first.stderr) == (
        0, f"reading the index {db} for the first time ({chunks:,} chunks): this takes a moment, once\n",
    )  # fmt: skip
    assert (warm.returncode, warm.stderr) == (0, "")
    assert first.stdout == warm.stdout and first.stdout.startswith("Found 2 results for: handler_7_7\n1. src/mod_7.py")


@pytest.mark.parametrize("pattern", ["def (", "(?<=def )load", "a{2,1}"])
def test_an_invalid_regex_is_one_plain_line(sample_index, pattern):
    """RE2 writes its own complaint to the process's stderr from C++: nothing but our one line may be there."""
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", "search", pattern, "--mode", "regex", "--path", str(sample_index.root)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("Error: query is not a valid regular expression (RE2 syntax, no lookaround or ")
    assert done.stderr.count("\n") == 1
    assert "b'" not in done.stderr and "re2.cc" not in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "x", "--limit", "ten"], "Error: limit must be a whole number from 1 to 100, got 'ten'\n"),
        (["search", "x", "--format", "xml"], "Error: format must be one of text, json, compact; got 'xml'\n"),
        (["serch", "x"], "Error: argument COMMAND: invalid choice: 'serch'"),
        (["search"], "Error: search needs a query, or --like FILE:LINE\n"),
        (["search", "--like", "src/bookshelf/retry.py"], "Error: --like takes FILE:LINE (src/app.py:42), got "),
        (["search", "x", "--like", "a.py:1"], "Error: give a query or --like FILE:LINE, not both\n"),
        (["search", "--like", "a.py:1", "--mode", "lexical"], "Error: --mode does not apply to --like: it ranks"),
        (["usages"], "Error: the following arguments are required: name"),
        (["usages", "not a name"], "Error: name 'not a name' is not an identifier"),
        (["agents", "vim"], "Error: unknown agent 'vim'; known: claude, codex, opencode, amp, cursor, gemini\n"),
        (["search", "x", "--chunk-type", "widget"], "Error: unknown chunk_type 'widget'"),
        (["search", "x", "--limit", "²"], "Error: limit must be a whole number from 1 to 100, got '²'\n"),
        (["search", "x", "--expand", "³"], "Error: expand must be a whole number from 0 to 200, got '³'\n"),
        (["search", "x", "--offset", "¹"], "Error: offset must be a whole number from 0 to 100,000, got '¹'\n"),
        (["search", "retry \udcff", "--mode", "lexical"], "Error: query is not valid text"),
    ],
)
def test_usage_errors_exit_two_in_one_line(capsys, sample_index, argv, message):
    where = ["--path", str(sample_index.root)] if argv[0] in ("search", "usages") and len(argv) > 1 else []
    code, out, err = run(capsys, *argv, *where)
    assert (code, out) == (2, "")
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_verbose_shows_spans_on_stderr_only(capsys, sample_index):
    code, out, err = run(capsys, "search", "retry", "--path", str(sample_index.root), "--mode", "lexical", "-v")
    assert code == 0 and out.startswith("Found ")
    record = json.loads(err.strip().splitlines()[-1])
    assert record["span"] == "code.search" and record["status"] == "SUCCESS" and record["mode"] == "lexical"


def test_pack_path_prints_the_pack_file(capsys):
    code, out, _ = run(capsys, "pack-path")
    assert code == 0 and Path(out.strip()).is_file() and out.strip().endswith("onetool_code/pack.py")


def test_help_has_examples(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "examples:" in out and "exit codes:" in out


def test_readme_documents_every_subcommand_and_option():
    readme = (REPO / "README.md").read_text()
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        assert f"python -m onetool_code {name}" in readme, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert flag in readme, f"{name} {flag}"
    assert re.search(r"bash scripts/demo\.sh", readme) and re.search(r"bash scripts/test\.sh", readme)


def test_a_reader_that_stops_early_ends_the_command_quietly(sample_index):
    """``python -m onetool_code search ... | head -1``: stdout closed early is no error and no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "onetool_code", "search", "return", "--path", str(sample_index.root), "--mode",
         "lexical", "--limit", "100", "--content", "always", "--expand", "200", "--max-bytes", "1000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout.readline().startswith(b"Found ")
    proc.stdout.close()  # the answer is far larger than a pipe's buffer: the writer meets a closed pipe
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert (proc.wait(timeout=60), stderr) == (0, b"")


def test_search_like_is_related(capsys, sample_index):
    root = str(sample_index.root)
    code, out, err = run(capsys, "search", "--like", "src/bookshelf/retry.py:40", "--path", root, "--limit", "3")
    assert (code, err) == (0, "")
    with advice.on_command_line():  # the budget's hint names flags
        assert out == onetool_code.related(file="src/bookshelf/retry.py", line=40, path=root, limit=3) + "\n"


def test_usages_prints_the_files_that_use_a_name(capsys, sample_index):
    root = str(sample_index.root)
    code, out, err = run(capsys, "usages", "backoff_delays", "--path", root, "--exclude", "docs", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == onetool_code.usages(name="backoff_delays", path=root, exclude="docs", format="json")


def test_agents_prints_and_writes_the_instructions(capsys, tmp_path):
    code, out, err = run(capsys, "agents", "gemini")
    assert (code, err) == (0, "") and out == agents.instructions("gemini")
    code, out, err = run(capsys, "agents", "gemini", "--write", "--path", str(tmp_path))
    assert (code, out, err) == (0, f"{tmp_path / 'GEMINI.md'}: created\n", "")
    assert (tmp_path / "GEMINI.md").read_text() == agents.section()
    (tmp_path / "AGENTS.md").symlink_to(tmp_path / "elsewhere.md")
    code, out, err = run(capsys, "agents", "codex", "--write", "--path", str(tmp_path))
    assert (code, out) == (2, "") and err == (
        f"Error: {tmp_path / 'AGENTS.md'} is a symlink or not a regular file: nothing written\n"
    )
    assert not (tmp_path / "elsewhere.md").exists()


def test_code_holding_a_fence_is_fenced_by_a_longer_one(capsys, sample_index):
    """A Markdown chunk's own ```json block stays inside the answer's fence (issue 36, item 9)."""
    args = ["search", '"title"', "--mode", "regex", "--include", "docs/api.md", "--limit", "1", "--content", "always"]
    code, out, _ = run(capsys, *args, "--path", str(sample_index.root))
    lines = out.split("\n")
    opening = next(i for i, line in enumerate(lines) if line.startswith("```"))
    fence = lines[opening].split("markdown")[0]
    closing = lines.index(fence, opening + 1)
    assert code == 0 and fence == "````"
    assert "```json" in lines[opening + 1 : closing] and lines[closing + 1] == "More results: offset=1"


def test_a_page_whose_hits_were_merged_says_so_beside_the_next_offset(capsys, sample_index):
    """The demo's query: 10 hits make 8 results; the count and the next offset say why they differ."""
    args = ["search", "retry with exponential backoff", "--mode", "lexical", "--path", str(sample_index.root)]
    code, out, _ = run(capsys, *args)
    lines = out.rstrip("\n").split("\n")
    found = int(lines[0].split()[1])
    assert code == 0 and found < 10
    assert lines[-1] == "More results: offset=10 (overlapping hits merged)"
