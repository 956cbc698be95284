"""The command line: ``python -m onetool_code status|search|batch|usages|index|publish|mcp|agents|pack-path``.

The only module that writes to stdout/stderr. Results go to stdout through the one formatter; errors go to
stderr as one ``Error: ...`` line, and so does the first read of a big index (a bar on a terminal), through the
watcher this module installs (``progress.on_stderr``). Exit codes: 0 success (no results included), 1 an error, 2
bad usage.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NoReturn

from onetool_code import advice, agents, api, parameters, progress, settings
from onetool_code.answer import formatting
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.spans import LOGGER_NAME

# --path means one thing everywhere: each one given is a root; a command that works on one project takes it
# repeated only when every one names the same folder (``status``, ``search``, ``batch`` and ``mcp`` search them
# all, as a workspace).
ONE_PROJECT = "Repeated, each must name the same folder: this command works on one project."
EXAMPLES = """examples:
  python -m onetool_code status --path ~/src/myproject
  python -m onetool_code search "parse config file" --path ~/src/myproject --limit 5
  python -m onetool_code search "retry backoff" --language go --exclude "test|mock" --format json
  python -m onetool_code search "load_config" --mode lexical --content always --expand 5
  python -m onetool_code batch "auth logic|token refresh|session expiry" --limit 8
  python -m onetool_code search --like src/auth/tokens.py:42 --exclude test
  python -m onetool_code usages QuerySet.bulk_create
  python -m onetool_code agents claude --write
  python -m onetool_code index ~/src/myproject --no-embeddings
  python -m onetool_code publish s3://bucket/indexes/myproject --path ~/src/myproject --keep 5
  python -m onetool_code search "parse config file" --path s3://bucket/indexes/myproject
  python -m onetool_code mcp --path ~/src/myproject
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
    where = argparse.ArgumentParser(add_help=False)
    _flags(where, parameters.DB, *parameters.EMBEDDING)
    where.add_argument("--verbose", "-v", action="store_true", help="show log spans on stderr")

    common = argparse.ArgumentParser(add_help=False, parents=[where])
    _flags(common, parameters.FORMAT)
    common.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")

    searching = argparse.ArgumentParser(add_help=False)
    _flags(
        searching, parameters.LIMIT, parameters.LANGUAGE, parameters.CHUNK_TYPE, parameters.INCLUDE,
        parameters.EXCLUDE, parameters.EXPAND, parameters.MODE, parameters.RERANK, parameters.CONTENT,
        parameters.MAX_BYTES,
    )  # fmt: skip
    no_cache = argparse.ArgumentParser(add_help=False)
    no_cache.add_argument(
        "--no-cache", action="store_true", help="no snapshots: read the index file itself at every search"
    )

    parser = _Parser(
        prog="python -m onetool_code",
        description="Read-only semantic and lexical search over ChunkHound code indexes.\n\n"
        + textwrap.fill(parameters.WHEN, 100),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    status = commands.add_parser(
        "status", parents=[common, no_cache], help="what the index holds and whether it is in use"
    )
    _flags(status, parameters.PATHS)
    _workspace_flag(status)
    search = commands.add_parser("search", parents=[common, searching, no_cache], help="search with one query")
    _flags(search, parameters.PATHS)
    _workspace_flag(search)
    search.add_argument("query", nargs="?", help=parameters.QUERY.doc)
    _flags(search, parameters.OFFSET)
    search.add_argument(
        "--like", metavar="FILE:LINE", help="instead of a query: code like the chunk at FILE:LINE, by its stored "
        "vector (no embeddings request)",
    )  # fmt: skip
    batch = commands.add_parser(
        "batch", parents=[common, searching, no_cache], help="several |-separated queries, fused"
    )
    batch.add_argument("queries", help=parameters.QUERIES.doc)
    _flags(batch, parameters.PATHS)
    _workspace_flag(batch)
    usages = commands.add_parser(
        "usages", parents=[common, no_cache], help="where a name is used, by file, its definitions left out"
    )
    usages.add_argument("name", help=parameters.NAME.doc)
    _flags(usages, parameters.PATH, parameters.LANGUAGE, parameters.INCLUDE, parameters.EXCLUDE, parameters.MAX_BYTES)
    index = commands.add_parser("index", parents=[common], help="write a ChunkHound-compatible index")
    _flags(index, parameters.PATH)
    index.add_argument("project", nargs="?", help="project root (default: --path, $OT_CWD or the cwd)")
    index.add_argument("--no-embeddings", action="store_true", help="store chunks only (enough for lexical search)")
    index.add_argument(
        "--drop-hnsw", action="store_true", help="drop ChunkHound's HNSW index when vss is not installed here"
    )
    publish = commands.add_parser(
        "publish",
        parents=[where],
        help="upload the index as a new version to object storage (s3://, gs://, az://, file://)",
    )
    publish.add_argument("url", help="where readers find it: s3://bucket/prefix, gs://..., az://..., file:///folder")
    _flags(publish, parameters.PATH)
    publish.add_argument("--keep", type=int, metavar="N", help="remove all but the newest N versions")
    mcp = commands.add_parser(
        "mcp",
        parents=[where, no_cache],
        help="an MCP server over stdio: tools search, search_batch, status, related, usages",
    )
    _flags(mcp, parameters.PATHS)
    _workspace_flag(mcp)
    mcp.add_argument("--log-file", help="append the log spans to this file")
    agent = commands.add_parser(
        "agents", help="print (or --write) the instructions that tell an agent when to use this tool"
    )
    agent.add_argument("agent", metavar="NAME", help=f"the agent: {', '.join(agents.AGENTS)}")
    agent.add_argument("--write", action="store_true", help="add them, as a marked section, where the agent reads")
    agent.add_argument(
        "--path", action="append", help=f"project root to write into (default: $OT_CWD or the cwd). {ONE_PROJECT}"
    )
    commands.add_parser("pack-path", help="print the pack file to list in OneTool's tools_dir")
    return parser


def _flags(parser: argparse.ArgumentParser, *described: parameters.Parameter) -> None:
    """One flag per parameter, as raw text: the library checks and converts it (``--mode Lexical`` works)."""
    for p in described:
        if p.type == "switch":  # --rerank / --no-rerank; neither: the default
            parser.add_argument(p.flag, action=argparse.BooleanOptionalAction, default=None, help=p.doc)
        elif p.type == "paths":  # --path A --path B: a workspace
            parser.add_argument(p.flag, action="append", help=p.doc)
        elif p is parameters.PATH:  # one rule for --path: repeated, it is a list; here, of one folder
            parser.add_argument(p.flag, action="append", help=f"{p.doc} {ONE_PROJECT}")
        else:
            parser.add_argument(p.flag, help=p.doc)


def _workspace_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace", metavar="FILE", help="a JSON or YAML file of workspaces, {name: [project roots]} or a list "
        "of roots: --path @NAME searches one; a list, or a file of one workspace, is the default path",
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed by argparse
        return int(exc.code or 0)
    if args.command == "pack-path":
        print(Path(__file__).with_name("pack.py"))
        return 0
    if args.command == "agents":
        with advice.on_command_line():
            return _agents(args)
    # Messages name flags, and a first read shows itself on stderr; the MCP server's calls, answered inside this
    # call, name parameters and tell their progress to the client that asked for it.
    serving = args.command == "mcp"
    speaking = nullcontext() if serving else advice.on_command_line()
    watched = nullcontext() if serving else progress.watching(progress.on_stderr)
    try:
        with _spans_shown(args), speaking, watched:
            result = _run(args)
    except OneToolCodeError as exc:
        print(formatting.render_error(str(exc), "text"), file=sys.stderr)
        return exc.exit_code
    if result is None:
        return 0
    try:
        print(formatting.as_text(result), flush=True)  # as the budget measured it
    except BrokenPipeError:
        # The reader stopped reading (``| head``): the rest is not wanted, and that is no error. Python would
        # report the broken pipe again when it flushes stdout at exit, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


@contextmanager
def _spans_shown(args: argparse.Namespace) -> Iterator[None]:
    """Send the log spans where the flags say, a file (``mcp --log-file``) or stderr (``--verbose``), and
    put the logger back after."""
    log_file = getattr(args, "log_file", None)
    if log_file:
        try:
            handler: logging.Handler = logging.FileHandler(Path(log_file).expanduser(), encoding="utf-8")
        except OSError as exc:
            raise OneToolCodeError(f"cannot open the log file {log_file}: {exc.strerror}") from exc
    elif args.verbose:
        handler = logging.StreamHandler(sys.stderr)
    else:
        yield
        return
    logger = logging.getLogger(LOGGER_NAME)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
        logger.setLevel(level)


def _run(args: argparse.Namespace) -> Any:
    """The command's answer, or None for the MCP server (it answered over stdio)."""
    embedding = {p.name: getattr(args, p.name) for p in parameters.EMBEDDING}
    place = {"path": _paths(args), "db": args.db}
    cache = False if getattr(args, "no_cache", False) else None
    if args.command == "status":
        return api.run_status(**place, format=args.format, **embedding, cache=cache)
    if args.command == "index":
        return _index(args, embedding)
    if args.command == "publish":
        return _publish(args, embedding)
    if args.command == "mcp":
        from onetool_code import mcp_server  # the MCP SDK takes a second to import: only this command pays

        mcp_server.serve(**place, **embedding, cache=cache, workspaces=_named(args))
        return None
    if args.command == "search" and args.like is not None:
        return api.run_related(**_like(args), **embedding, cache=cache)
    if args.command == "search":
        if args.query is None:
            raise BadInputError("search needs a query, or --like FILE:LINE")
        return api.run_search(**_given(args, parameters.SEARCH), **embedding, cache=cache)
    if args.command == "usages":
        return api.run_usages(**_given(args, parameters.USAGES), **embedding, cache=cache)
    return api.run_batch(**_given(args, parameters.SEARCH_BATCH), **embedding, cache=cache)


def _given(args: argparse.Namespace, described: Sequence[parameters.Parameter]) -> dict[str, Any]:
    """A tool's arguments from its flags (and positional query), by the parameters' description."""
    return {p.name: _paths(args) if p is parameters.PATHS else getattr(args, p.name) for p in described}


def _paths(args: argparse.Namespace) -> Any:
    """``--path`` as given, each ``@NAME`` a workspace of the ``--workspace`` file; without ``--path``, the
    file's default workspace."""
    file = getattr(args, "workspace", None)
    if not file:
        return args.path
    named, default = settings.workspace_file(file)
    if args.path:
        return settings.named_paths(args.path, named)
    if default is None:
        raise BadInputError(f"{file} names several workspaces: choose one with --path @NAME ({', '.join(named)})")
    return default


def _named(args: argparse.Namespace) -> settings.Workspaces:
    """The named workspaces of the ``--workspace`` file (none without one): the MCP server's calls name them."""
    file = getattr(args, "workspace", None)
    return settings.workspace_file(file)[0] if file else {}


def _like(args: argparse.Namespace) -> dict[str, Any]:
    """``search --like FILE:LINE``: related's arguments; the flags that only a query's search has are refused."""
    if args.query is not None:
        raise BadInputError("give a query or --like FILE:LINE, not both")
    for flag, value in (("--mode", args.mode), ("--rerank", args.rerank)):
        if value is not None:
            raise BadInputError(f"{flag} does not apply to --like: it ranks by the stored vector of the chunk")
    file, colon, line = args.like.rpartition(":")
    if not colon or not file:
        raise BadInputError(f"--like takes FILE:LINE (src/app.py:42), got {args.like!r}")
    given = {p.name: getattr(args, p.name) for p in parameters.RELATED if p.name not in ("file", "line")}
    return {"file": file, "line": line, **given, "path": settings.one(args.path, {}, "search --like")}


def _agents(args: argparse.Namespace) -> int:
    """Print an agent's instructions, or write them into the project; an error is one line on stderr."""
    try:
        if args.write:
            print(agents.write(args.agent, settings.one(args.path, {}, "agents --write")))
        else:
            print(agents.instructions(args.agent), end="")
    except OneToolCodeError as exc:
        print(formatting.render_error(str(exc), "text"), file=sys.stderr)
        return exc.exit_code
    return 0


def _index(args: argparse.Namespace, embedding: dict[str, str | None]) -> str:
    from onetool_code.indexer import build_index

    root = args.project or settings.one(args.path, {}, "index")
    resolved = settings.resolve(path=root, db=args.db, **embedding)
    summary = build_index(resolved, embeddings=not args.no_embeddings, drop_hnsw=args.drop_hnsw)
    return summary.describe()


def _publish(args: argparse.Namespace, embedding: dict[str, str | None]) -> str:
    """Export the index (a consistent copy and its snapshot) and upload it as one version; progress on stderr."""
    from onetool_code import index, published

    resolved = settings.resolve(path=settings.one(args.path, {}, "publish"), db=args.db, **embedding)
    with tempfile.TemporaryDirectory(prefix="onetool-code-publish-") as folder:
        facts = index.export(resolved, Path(folder))
        done = published.publish(
            args.url,
            Path(folder),
            facts,
            resolved.project_root,
            args.keep,
            settings.store_environment(),
            lambda told: print(told, file=sys.stderr),
        )
    made = done.manifest
    pruned = f"; removed {len(done.pruned)} older version(s)" if done.pruned else ""
    return (
        f"published version {made.version} of {made.project} to {args.url}: {made.files:,} files, "
        f"{made.chunks:,} chunks, {made.size / 1e6:,.1f} MB in {len(made.items)} objects{pruned}"
    )


def main_entry() -> None:
    sys.exit(main())
