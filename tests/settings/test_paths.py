"""What a call's ``path`` names, on every surface: a workspace by ``@name`` whatever its number of roots, one
folder searched once however it is spelled, and roots that cannot be used said in one line (issue 32, items 2,
5, 6, 7 and 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import test_workspace
from conftest import build_index
from test_mcp_server import talk, text
from test_workspace import _project

from onetool_code import api, cli, settings

ONE = "one"
repos = test_workspace.repos  # the three indexed projects, a fixture
LONG_NAME = "a" * 300  # a path component over the 255 bytes a file name may have


def _host(repos, workspaces: dict[str, list[str]]) -> settings.OneToolHost:
    return settings.OneToolHost(
        get_secret=lambda name: None, tool_config={"workspaces": workspaces, "base_url": repos.base_url}
    )


@pytest.fixture
def decoy(server, tmp_path, monkeypatch) -> Path:
    """The current directory holds an indexed folder called ``@one``, as a cloned repository can ship one."""
    planted = _project(tmp_path, f"@{ONE}", {"planted.py": "def RouteRequest():\n    return 'planted'\n"})
    build_index(planted, server.base_url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OT_CWD", raising=False)
    return planted


def test_a_one_root_workspace_is_its_root_for_every_tool(repos, decoy):
    """``@one`` is the configured root for search, batch, status, related and usages, never the planted folder;
    a list holding it is the same."""
    gateway = repos.paths[2]
    host = _host(repos, {ONE: [gateway]})
    plain = {"base_url": repos.base_url}
    calls = {
        api.search: {"query": "RouteRequest"},
        api.search_batch: {"queries": "route|rate limit"},
        api.status: {},
        api.related: {"file": "router/route.go", "line": 6},
        api.usages: {"name": "http"},
    }
    for run, options in calls.items():
        expected = run(**options, path=gateway, **plain)
        assert not expected.startswith("Error"), expected
        assert run(**options, path=f"@{ONE}", host=host) == expected, run.__name__
        assert run(**options, path=[f"@{ONE}"], host=host) == expected, run.__name__
        assert "planted" not in run(**options, path=f"@{ONE}", host=host)
    # The folder itself is still reachable, written as a folder.
    assert "planted.py" in api.search(query="RouteRequest", path=f"./@{ONE}", **plain)


def test_a_workspace_of_several_roots_is_refused_by_the_one_project_tools(repos):
    host = _host(repos, {"shop": repos.paths[:2]})
    answer = api.usages(name="render", path="@shop", host=host)
    assert answer == f"Error: usages works on one project, and path names 2: give one of {', '.join(repos.paths[:2])}"
    assert api.related(file="billing/tax.py", line=1, path="@shop", host=host).startswith(
        "Error: related works on one project, and path names 2: give one of "
    )


def test_the_mcp_servers_one_root_workspace_serves_related_and_usages(repos, decoy, tmp_path):
    """``mcp --workspace FILE``: a call's ``path="@one"`` is the file's root for the one-project tools too."""
    file = tmp_path / "workspaces.json"
    file.write_text(json.dumps({ONE: [repos.paths[2]], "shop": repos.paths[:2]}))

    async def scenario(session):
        related = await session.call_tool("related", {"file": "router/route.go", "line": 6, "path": f"@{ONE}"})
        usages = await session.call_tool("usages", {"name": "http", "path": f"@{ONE}"})
        return text(related), text(usages)

    related, usages = talk(
        tmp_path, ["--workspace", str(file), "--path", "@shop", "--base-url", repos.base_url], scenario
    )
    assert related == api.related(file="router/route.go", line=6, path=repos.paths[2], base_url=repos.base_url)
    assert usages == api.usages(name="http", path=repos.paths[2], base_url=repos.base_url)


def test_the_same_root_twice_is_searched_once(repos, tmp_path, capsys):
    """``api`` and ``api/``, or a link to it, are one repository: no hit shown twice as ``api:`` and ``api-2:``;
    a list left with one root answers as that root alone."""
    billing = repos.paths[0]
    link = tmp_path / "billing-link"
    link.symlink_to(billing)
    alone = api.search(query="charge_invoice", path=billing, base_url=repos.base_url, format="json")
    for spelled in ([billing, billing + "/"], [billing, str(link)], [billing, f"{billing}/../billing"]):
        assert api.search(query="charge_invoice", path=spelled, base_url=repos.base_url, format="json") == alone
    twice = api.search(
        query="charge_invoice", path=[billing, repos.paths[1], billing + "/"], base_url=repos.base_url, format="json"
    )
    assert {r["repository"] for r in twice["results"]} <= {"billing", "storefront"}
    host = _host(repos, {"shop": [billing, repos.paths[1], billing]})
    assert [s["repository"] for s in api.status(path="@shop", host=host, format="json")] == ["billing", "storefront"]
    args = ["search", "charge_invoice", "--base-url", repos.base_url, "--format", "json"]
    assert cli.main([*args, "--path", billing, "--path", billing + "/"]) == 0
    assert json.loads(capsys.readouterr().out) == alone


def _loop(tmp_path: Path) -> Path:
    loop = tmp_path / "loop"
    loop.symlink_to(loop.name)  # ln -s loop loop
    return loop


def test_a_root_that_cannot_be_used_is_one_line_in_the_library(repos, tmp_path):
    """A symlink loop or a name over 255 bytes: an ``Error:`` naming the root alone, a ``Note:`` naming it in a
    workspace; never an internal error."""
    loop = _loop(tmp_path)
    long = tmp_path / LONG_NAME
    for bad, reason in ((loop, "a symbolic link that loops"), (long, "File name too long")):
        expected = f"Error: Project path cannot be used: {bad} ({reason})"
        assert api.search(query="charge_invoice", path=str(bad), base_url=repos.base_url) == expected
        assert api.status(path=str(bad)) == expected
        assert api.usages(name="charge_invoice", path=str(bad)) == expected
        assert api.related(file="billing/tax.py", line=1, path=str(bad)) == expected
        answer = api.search(query="charge_invoice", path=[repos.paths[0], str(bad)], base_url=repos.base_url)
        assert answer.split("\n")[1] == f"Note: {bad.name}: not searched: Project path cannot be used: {bad} ({reason})"
        assert "billing:billing/invoices.py" in answer
        status = api.status(path=[repos.paths[0], str(bad)], format="json")
        assert status[1] == {"repository": bad.name, "error": expected.removeprefix("Error: ")}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OT_CWD"}
    return subprocess.run(
        [sys.executable, "-m", "onetool_code", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_root_that_cannot_be_used_is_one_line_on_the_command_line(repos, tmp_path):
    """Every command that takes a root, as a real process: one ``Error:`` line and exit 2 (bad usage), no traceback."""
    _loop(tmp_path)
    for bad in ("loop", LONG_NAME):
        shown = tmp_path / bad
        workspace_file = tmp_path / "ws.json"
        workspace_file.write_text(json.dumps([repos.paths[0], bad]))
        for args in (
            ["search", "retry", "--mode", "lexical", "--path", bad],
            ["status", "--path", bad],
            ["usages", "retry", "--path", bad],
            ["agents", "claude", "--write", "--path", bad],
            ["mcp", "--path", bad],
            ["mcp", "--workspace", str(workspace_file)],
        ):
            done = _run(*args, cwd=tmp_path)
            assert (done.returncode, done.stdout) == (2, ""), (args, done.stderr)  # bad usage
            assert done.stderr.startswith(f"Error: Project path cannot be used: {shown} ("), (args, done.stderr)
            assert done.stderr.count("\n") == 1, (args, done.stderr)
        workspace = _run(
            "search", "charge_invoice", "--workspace", str(workspace_file), "--base-url", repos.base_url, cwd=tmp_path
        )
        assert workspace.returncode == 0, workspace.stderr
        assert workspace.stdout.split("\n")[1].startswith(f"Note: {bad}: not searched: Project path cannot be used: ")


def test_a_nul_in_relateds_file_is_bad_input(repos):
    answer = api.related(file="billing/tax\x00.py", line=1, path=repos.paths[0])
    assert answer == "Error: file must not hold a NUL character"
    assert api.usages(name="tax\x00rate", path=repos.paths[0]) == "Error: name must not hold a NUL character"


def test_the_mcp_server_answers_a_root_that_cannot_be_used_in_one_line(repos, tmp_path):
    loop = _loop(tmp_path)

    async def scenario(session):
        search = await session.call_tool("search", {"query": "retry", "path": str(loop), "mode": "lexical"})
        related = await session.call_tool("related", {"file": "a\x00.py", "line": 1})
        return search, related

    search, related = talk(tmp_path, ["--path", repos.paths[0]], scenario)
    assert search.isError and text(search) == f"Error: Project path cannot be used: {loop} (a symbolic link that loops)"
    assert related.isError and text(related) == "Error: file must not hold a NUL character"


def test_an_index_path_that_cannot_be_used_is_one_line(repos, tmp_path):
    """The user's ``db`` or a repository's ``database.path`` over 255 bytes, or through a loop of links; a
    workspace file that is a loop."""
    loop = _loop(tmp_path)
    root = Path(repos.paths[0])
    for db in (LONG_NAME, f"{LONG_NAME}.db", f"{loop}/chunks.db"):
        answer = api.search(query="charge_invoice", path=str(root), db=db, mode="lexical")
        assert answer.startswith(f"Error: the index path cannot be used: {root / db} ("), answer
    hostile = _project(tmp_path, "hostile", {"a.py": "x = 1\n"}, {"database": {"path": LONG_NAME}})
    assert api.status(path=str(hostile)) == (
        f"Error: the index path cannot be used: {hostile / LONG_NAME} (File name too long)"
    )
    done = _run("search", "x", "--workspace", str(loop), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        f"Error: cannot read the workspace file {loop}: Symlink loop from '{loop}'\n",
    )


def test_a_repeated_path_is_one_rule_for_every_command(repos, tmp_path):
    """``--path`` twice: the workspace commands search both; the one-project commands take the same folder twice
    and refuse two, naming them; ``--help`` says so (issue 36, item 8)."""
    billing, storefront = repos.paths[0], repos.paths[1]
    for command, args in (
        ("usages", ["usages", "charge_invoice"]),
        ("search --like", ["search", "--like", "billing/tax.py:1"]),
        ("index", ["index", "--no-embeddings"]),
        ("agents --write", ["agents", "claude", "--write"]),
    ):
        two = _run(*args, "--path", billing, "--path", storefront, cwd=tmp_path)
        assert (two.returncode, two.stderr) == (
            2,
            f"Error: {command} works on one project, and --path names 2: give one of {billing}, {storefront}\n",
        )
        if args[0] in ("usages", "index"):
            helped = _run(args[0], "--help", cwd=tmp_path).stdout
            assert "Repeated, each must name the same folder" in " ".join(helped.split())
    once = _run("usages", "charge_invoice", "--path", billing, cwd=tmp_path)
    twice = _run("usages", "charge_invoice", "--path", billing, "--path", billing + "/", cwd=tmp_path)
    assert (twice.returncode, twice.stdout) == (0, once.stdout) and once.stdout
