"""A repository that wants the user's key: every way it can name a server of its own, tried through every entry
point (issue 24).

The user's key is in the environment and in the user's own secrets file, for both providers. The repository's
``.chunkhound.json`` names its server (a second local test server, which records every request's Authorization
header) as ``base_url``, as an absolute ``rerank_url``, as a relative one under its ``base_url``, with the
provider switched to VoyageAI, and behind a ``secrets.yaml`` that links to the user's own; and once the user names
an embeddings server of their own while the repository names only its reranker. The key may reach the user's
server only, and may appear in no answer, no error and no log line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE, Project, build_index, settled
from openai_server import serve
from test_mcp_server import SERVER, RawClient

import onetool_code
from onetool_code import pack

USER_KEY = "sk-user-9f8e7d6c5b4a"


@pytest.fixture(scope="module")
def collector():
    """The repository's server."""
    with serve() as running:
        yield running


@pytest.fixture(scope="module")
def voyage_index(server, tmp_path_factory) -> Project:
    """The sample project with VoyageAI vectors, so that a switch to that provider sends a request."""
    root = tmp_path_factory.mktemp("hostile-voyage") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    (root / ".chunkhound.json").write_text(
        json.dumps({"embedding": {"provider": "voyageai", "model": "voyage-3.5", "base_url": server.base_url}})
    )
    return Project(root, build_index(root, None), server.base_url)


def variants(collector, server) -> dict[str, tuple[dict, dict]]:
    """Each trick: the repository's ``embedding`` settings, and the user's environment beyond the key."""
    own = collector.base_url
    return {
        "base_url": ({"base_url": own}, {}),
        "absolute rerank_url": ({"base_url": own, "rerank_url": f"{own}/rerank"}, {}),
        "relative rerank_url": ({"base_url": own, "rerank_url": "/rerank"}, {}),
        "users relative rerank_url": ({"base_url": own}, {"CHUNKHOUND_EMBEDDING__RERANK_URL": "/rerank"}),
        "provider switch": ({"provider": "voyageai", "model": "voyage-3.5", "base_url": own}, {}),
        "symlinked secrets": ({"base_url": own}, {}),
        "users server, repository reranker": (
            {"rerank_url": f"{own}/rerank", "rerank_model": "r"},
            {"CHUNKHOUND_EMBEDDING__BASE_URL": server.base_url},
        ),
    }


def hostile(name: str, embedding: dict, source: Project, tmp_path: Path, user_secrets: Path) -> Path:
    root = tmp_path / name.replace(" ", "-")
    shutil.copytree(source.root, root)
    settled(root / source.db.relative_to(source.root))
    (root / ".chunkhound.json").write_text(json.dumps({"embedding": embedding}))
    if name == "symlinked secrets":
        (root / "secrets.yaml").symlink_to(user_secrets)
    return root


def mcp_answers(root: Path, log: Path, env: dict) -> list[str]:
    argv = [sys.executable, *SERVER, "--path", str(root), "--log-file", str(log)]
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        with RawClient(argv) as client:
            answers = [
                json.dumps(client.request("tools/call", {"name": tool, "arguments": arguments}))
                for tool, arguments in (
                    ("search", {"query": "retry backoff"}),
                    ("search", {"query": "retry backoff", "mode": "semantic"}),
                    ("search_batch", {"queries": ["retry", "cache"]}),
                    ("status", {}),
                )
            ]
            client.close()
        return [*answers, *map(bytes.decode, client.stdout), client.stderr.decode()]
    finally:
        os.environ.clear()
        os.environ.update(saved)


def cli_answers(root: Path, env: dict) -> list[str]:
    outputs = []
    for fmt in ("text", "json", "compact"):
        for mode in ("hybrid", "semantic"):
            done = subprocess.run(
                [sys.executable, "-m", "onetool_code", "search", "retry backoff", "--path", str(root), "--mode", mode,
                 "--format", fmt, "--verbose"],
                capture_output=True, text=True, timeout=120, env={**os.environ, **env},
            )  # fmt: skip
            outputs += [done.stdout, done.stderr]
    return outputs


@pytest.mark.parametrize(
    "name",
    [
        "base_url", "absolute rerank_url", "relative rerank_url", "users relative rerank_url", "provider switch",
        "symlinked secrets", "users server, repository reranker",
    ],
)  # fmt: skip
def test_the_users_key_reaches_no_server_but_the_users_and_no_output(
    name, sample_index, voyage_index, server, collector, tmp_path, monkeypatch, spans
):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "onetool-code"
    config.mkdir(parents=True, exist_ok=True)
    user_secrets = config / "secrets.yaml"
    user_secrets.write_text(f"OPENAI_API_KEY: {USER_KEY}\nVOYAGE_API_KEY: {USER_KEY}\n")
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    monkeypatch.setenv("VOYAGE_API_KEY", USER_KEY)
    outputs: list[str] = []
    embedding, env = variants(collector, server)[name]
    source = voyage_index if embedding.get("provider") == "voyageai" else sample_index
    root = hostile(name, embedding, source, tmp_path, user_secrets)
    before, users_before = len(collector.requests), len(server.requests)
    with monkeypatch.context() as scoped:
        for key, value in env.items():
            scoped.setenv(key, value)
        for call in (onetool_code.search, pack.search):
            outputs += [str(call(query="retry backoff", path=str(root), **options)) for options in (
                {}, {"mode": "semantic"}, {"format": "json"}, {"format": "compact", "mode": "semantic"},
            )]  # fmt: skip
        outputs.append(str(onetool_code.search_batch(queries="retry|cache", path=str(root))))
        outputs.append(str(pack.status(path=str(root))))
        outputs.append(str(pack.related(file="src/bookshelf/retry.py", line=40, path=str(root))))  # no request
        outputs.append(str(pack.usages(name="retry", path=str(root), format="json")))  # no request
    outputs += cli_answers(root, env)
    outputs += mcp_answers(root, tmp_path / f"{root.name}.log", env)
    outputs.append((tmp_path / f"{root.name}.log").read_text())
    asked = collector.requests[before:]
    assert asked, "the repository's server was never asked (the trick was not tried)"
    assert not [r for r in asked if USER_KEY in str(r.authorization)]
    if "CHUNKHOUND_EMBEDDING__BASE_URL" in env:  # the user named a server of their own: it, and it alone, gets the key
        assert [r for r in server.requests[users_before:] if USER_KEY in str(r.authorization)]
    outputs += [record.getMessage() for record in spans]
    leaked = [text for text in outputs if USER_KEY in text]
    assert not leaked, leaked[0][:500]
