"""The command line: ``python -m onetool_code status|search|batch|index|pack-path``.

The only module that writes to stdout/stderr. Results go to stdout through the one formatter; errors go to
stderr as one ``Error: ...`` line. Exit codes: 0 success (no results included), 1 an error, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from onetool_code import api, request
from onetool_code.errors import OneToolCodeError
from onetool_code.spans import LOGGER_NAME

EXAMPLES = """examples:
  python -m onetool_code status --path ~/src/myproject
  python -m onetool_code search "parse config file" --path ~/src/myproject --limit 5
  python -m onetool_code search "retry backoff" --language go --exclude "test|mock" --format json
  python -m onetool_code search "load_config" --mode lexical --content always --expand 5
  python -m onetool_code batch "auth logic|token refresh|session expiry" --limit 8
  python -m onetool_code index ~/src/myproject --no-embeddings
  python -m onetool_code pack-path

exit codes: 0 success (also when nothing is found), 1 an error, 2 bad usage"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"Error: {message} (see: python -m onetool_code {self._subcommand()}--help)\n")

    def _subcommand(self) -> str:
        parts = self.prog.split()
        return f"{parts[-1]} " if len(parts) > 1 and parts[-1] not in {"onetool_code", "onetool-code"} else ""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--path", help="project root (default: $OT_CWD, else the current directory)")
    common.add_argument("--db", help="index file, or a directory holding chunks.db (relative to the project)")
    common.add_argument("--provider", help="embedding provider recorded in the index (default: openai)")
    common.add_argument("--model", help="embedding model (default: text-embedding-3-small)")
    common.add_argument("--base-url", help="OpenAI-compatible API base URL (a local server needs no key)")
    common.add_argument("--format", choices=request.FORMATS, default="text", help="output format (default: text)")
    common.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
    common.add_argument("--verbose", "-v", action="store_true", help="show log spans on stderr")

    searching = argparse.ArgumentParser(add_help=False)
    searching.add_argument("--limit", help="results, 1-100 (default 10)")
    searching.add_argument("--language", help="language(s), |-separated: python|ts|go")
    searching.add_argument("--chunk-type", help="chunk type(s), |-separated: function|method|class")
    searching.add_argument("--include", help="keep only paths containing one of these |-separated substrings")
    searching.add_argument("--exclude", help="drop paths containing any of these |-separated substrings")
    searching.add_argument("--expand", help="lines of context (0-200) around each hit, read from disk")
    searching.add_argument(
        "--mode",
        default="hybrid",
        help="hybrid (default: meaning and words, defining code first), semantic (ChunkHound's order), "
        "lexical (words; no key needed), regex (a regular expression over the code)",
    )
    searching.add_argument("--content", default="auto", help="auto (by result count), always, never")
    searching.add_argument("--max-bytes", help="response budget in bytes (default 5000)")
    searching.add_argument("--no-cache", action="store_true", help="skip the in-process vector cache")

    parser = _Parser(
        prog="python -m onetool_code",
        description="Read-only semantic and lexical search over ChunkHound code indexes.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    commands.add_parser("status", parents=[common], help="what the index holds and whether it is in use")
    search = commands.add_parser("search", parents=[common, searching], help="search with one query")
    search.add_argument("query")
    search.add_argument("--offset", help="skip this many hits (the next page)")
    batch = commands.add_parser("batch", parents=[common, searching], help="several |-separated queries, fused")
    batch.add_argument("queries")
    index = commands.add_parser("index", parents=[common], help="write a ChunkHound-compatible index")
    index.add_argument("project", nargs="?", help="project root (default: --path, $OT_CWD or the cwd)")
    index.add_argument("--no-embeddings", action="store_true", help="store chunks only (enough for lexical search)")
    index.add_argument(
        "--drop-hnsw", action="store_true", help="drop ChunkHound's HNSW index when vss is not installed here"
    )
    commands.add_parser("pack-path", help="print the pack file to list in OneTool's tools_dir")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed by argparse
        return int(exc.code or 0)
    if args.command == "pack-path":
        print(Path(__file__).with_name("pack.py"))
        return 0
    logger = logging.getLogger(LOGGER_NAME)
    handler, level = logging.StreamHandler(sys.stderr), logger.level
    if args.verbose:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        result = _run(args)
    except OneToolCodeError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    try:
        print(result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2), flush=True)
    except BrokenPipeError:
        # The reader stopped reading (``| head``): the rest is not wanted, and that is no error. Python would
        # report the broken pipe again when it flushes stdout at exit, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _run(args: argparse.Namespace) -> Any:
    embedding = {"provider": args.provider, "model": args.model, "base_url": args.base_url}
    if args.command == "status":
        return api.run_status(path=args.path, db=args.db, format=args.format, **embedding)
    if args.command == "index":
        return _index(args, embedding)
    options = {
        "path": args.path,
        "db": args.db,
        "limit": args.limit,
        "language": args.language,
        "chunk_type": args.chunk_type,
        "include": args.include,
        "exclude": args.exclude,
        "expand": args.expand,
        "mode": args.mode,
        "content": args.content,
        "format": args.format,
        "max_bytes": args.max_bytes,
        "cache": False if args.no_cache else None,
        **embedding,
    }
    if args.command == "search":
        return api.run_search(query=args.query, offset=args.offset, **options)
    return api.run_batch(queries=args.queries, **options)


def _index(args: argparse.Namespace, embedding: dict[str, str | None]) -> str:
    from onetool_code import settings
    from onetool_code.indexer import build_index

    resolved = settings.resolve(path=args.project or args.path, db=args.db, **embedding)
    summary = build_index(resolved, embeddings=not args.no_embeddings, drop_hnsw=args.drop_hnsw)
    return summary.describe()


def main_entry() -> None:
    sys.exit(main())
