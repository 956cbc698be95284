"""End to end through the real OneTool 2.2.2: an MCP stdio server with our pack, driven by the mcp client."""

from __future__ import annotations

from pathlib import Path

import pytest
from tooling.onetool_env import ensure_onetool

import onetool_code

pytestmark = pytest.mark.onetool

REPO = Path(__file__).resolve().parent.parent
PACK_FILE = REPO / "onetool_code" / "pack.py"
KEY = "sk-e2e-test-key-do-not-log"


@pytest.fixture(scope="module")
def onetool_env():
    return ensure_onetool(REPO)


@pytest.fixture(scope="module")
def agent(onetool_env, sample_index, tmp_path_factory):
    """An agent's view: OneTool with our pack, the key in secrets.yaml, OT_CWD at the indexed project."""
    config_dir = tmp_path_factory.mktemp("onetool")
    with onetool_env.serve(
        config_dir,
        tools_dir=[PACK_FILE],
        secrets={"OPENAI_API_KEY": KEY},
        tool_config={"base_url": sample_index.base_url, "limit": 8},
        env={"OT_CWD": str(sample_index.root)},
    ) as client:
        yield client


def test_tools_list_shows_run(agent):
    assert [tool["name"] for tool in agent.list_tools()] == ["run"]


def test_status(agent, sample_index):
    body = agent.run("code.status()").body
    assert body.startswith(f"Project: {sample_index.root}\nIndex: {sample_index.db} (")
    assert "In use by ChunkHound: no" in body


def test_search_is_inline_and_exactly_the_librarys_answer(agent, sample_index, server, monkeypatch):
    result = agent.run('code.search(query="retry with exponential backoff")')
    assert "<external-content-" in result.text and '"handle"' not in result.text
    assert server.embedding_requests()[-1].authorization == f"Bearer {KEY}"  # the key came from OneTool
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    expected = onetool_code.search(
        query="retry with exponential backoff", path=str(sample_index.root), base_url=sample_index.base_url, limit=8
    )
    assert result.body == expected
    assert len(result.body.encode()) <= 5000 and "Found " in result.body


def test_keyword_prefixes_and_batch(agent):
    assert agent.run('code.search(q="rate limiter", lim=2)').body.startswith("Found ")
    body = agent.run('code.search_batch(queries="rate limiter|cache eviction")').body
    assert body.startswith("Found ") and "for 2 queries" in body.splitlines()[0]


def test_related_and_usages_are_the_librarys_answers_with_no_embeddings_request(agent, sample_index, server):
    before = len(server.embedding_requests())
    related = agent.run('code.related(file="src/bookshelf/retry.py", line=40, limit=3)').body
    usages = agent.run('code.usages(name="backoff_delays")').body
    root = str(sample_index.root)
    assert related == onetool_code.related(file="src/bookshelf/retry.py", line=40, limit=3, path=root)
    assert related.startswith("Found ") and "for: like src/bookshelf/retry.py:40" in related.splitlines()[0]
    assert usages == onetool_code.usages(name="backoff_delays", path=root)
    assert usages.startswith("1 use of backoff_delays in 1 file")
    assert len(server.embedding_requests()) == before
    info = agent.run('ot.tool_info(name="code.usages")').body
    assert "Where a name is used" in info


def test_bad_arguments_come_back_as_error_text(agent):
    assert agent.run('code.search(query="x", limit=0)').body == (
        "Error: limit must be a whole number from 1 to 100, got 0"
    )
    assert agent.run('code.search(query="x", chunk_type="widget")').body.startswith("Error: unknown chunk_type")


def test_spans_reach_onetools_log_and_the_key_does_not(agent):
    agent.run('code.search(query="cache", mode="lexical")')
    log = agent.log_text()
    # OneTool re-renders the record in its own layout: "code.search | duration=... | query=cache | ...".
    (line,) = [line for line in log.splitlines() if "code.search |" in line and "query=cache" in line]
    assert "mode=lexical" in line and "resultCount=" in line and "status=SUCCESS" in line
    assert KEY not in log


def test_help_shows_our_docstrings(agent):
    assert "Search the project's code by meaning" in agent.run('ot.help(query="code.search")').body
    info = agent.run('ot.tool_info(name="code.search")').body
    assert "exclude" in info and "Search the project's code by meaning" in info


def test_without_a_key_the_agent_is_told_what_to_do(onetool_env, sample_index, tmp_path):
    with onetool_env.serve(tmp_path, tools_dir=[PACK_FILE], env={"OT_CWD": str(sample_index.root)}) as client:
        default = client.run('code.search(query="retry with backoff")').body
        semantic = client.run('code.search(query="retry", mode="semantic")').body
    assert default.splitlines()[1] == (
        "Note: answered by words only (lexical): no API key for the embeddings (OPENAI_API_KEY)"
    )
    assert semantic.startswith(
        "Error: OPENAI_API_KEY not configured in secrets.yaml (required for code search embeddings)."
    )


def test_a_repository_cannot_route_onetools_secret_to_its_server(onetool_env, sample_index, tmp_path):
    """Issue 24 through the real OneTool: the key lives in OneTool's secrets, the relative ``rerank_url`` in
    ``tools.code``, and the repository's ``.chunkhound.json`` names its own server as ``base_url``."""
    import json
    import shutil

    from openai_server import serve

    root = tmp_path / "hostile"
    shutil.copytree(sample_index.root, root)
    with serve() as collector:
        (root / ".chunkhound.json").write_text(json.dumps({"embedding": {"base_url": collector.base_url}}))
        with onetool_env.serve(
            tmp_path / "config",
            tools_dir=[PACK_FILE],
            secrets={"OPENAI_API_KEY": KEY},
            tool_config={"rerank_url": "/rerank"},
            env={"OT_CWD": str(root)},
        ) as client:
            answers = [client.run(call).body for call in ('code.search(query="retry")', "code.status()")]
            log = client.log_text()
    assert collector.requests, "the repository's server was never asked"
    assert all(KEY not in str(r.authorization) for r in collector.requests)
    assert answers[0].startswith("Found ") and all(KEY not in text for text in (*answers, log))
