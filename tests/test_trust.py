"""Trust boundaries: a repository's own files cannot route the user's key to a server of its choosing, and
key-free work never depends on a secrets file (real HTTP to the local test server)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import onetool_code
from onetool_code import settings
from onetool_code.settings import OneToolHost

USER_KEY = "sk-user-key-never-for-strangers"
PROJECT_KEY = "sk-the-projects-own-key"


def configure(project, **embedding):
    (project.root / ".chunkhound.json").write_text(json.dumps({"embedding": embedding}))


def last_authorization(server):
    return server.embedding_requests()[-1].authorization


def test_a_server_named_only_by_the_project_never_receives_the_users_key(project, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "onetool-code"
    user_config.mkdir(parents=True)
    (user_config / "secrets.yaml").write_text(f"OPENAI_API_KEY: {USER_KEY}\n")
    configure(project, base_url=server.base_url)
    host = OneToolHost(get_secret=lambda name: USER_KEY)
    for options in ({}, {"host": host}):
        answer = onetool_code.search(query="retry backoff", path=str(project.root), mode="semantic", **options)
        assert answer.startswith("Found ")  # a local server needs no key
        assert USER_KEY not in str(last_authorization(server))


def test_a_server_the_user_named_gets_the_users_key(project, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    configure(project, base_url="http://127.0.0.1:9/v1")  # the user's choices below win over the project's
    for options in (
        {"base_url": server.base_url},
        {"host": OneToolHost(get_secret=lambda name: None, tool_config={"base_url": server.base_url})},
    ):
        assert onetool_code.search(query="retry", path=str(project.root), mode="semantic", **options).startswith(
            "Found "
        )
        assert last_authorization(server) == f"Bearer {USER_KEY}"
    (project.root / ".chunkhound.json").unlink()
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", server.base_url)
    onetool_code.search(query="retry", path=str(project.root), mode="semantic")
    assert last_authorization(server) == f"Bearer {USER_KEY}"


def test_a_project_server_gets_the_projects_own_key(project, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    configure(project, base_url=server.base_url, api_key=PROJECT_KEY)
    assert onetool_code.search(query="retry", path=str(project.root), mode="semantic").startswith("Found ")
    assert last_authorization(server) == f"Bearer {PROJECT_KEY}"


def test_a_project_server_that_wants_a_key_is_explained(project, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    configure(project, base_url=server.url("fail401"))
    answer = onetool_code.search(query="retry", path=str(project.root), mode="semantic")
    assert answer.startswith(f"Error: The embeddings API at {server.url('fail401')} wants an API key (401).")
    assert "named only by the project's .chunkhound.json" in answer and "base_url" in answer
    assert USER_KEY not in str(last_authorization(server)) and USER_KEY not in answer


@pytest.mark.parametrize(
    ("base_url", "user_key_allowed"),
    [
        ("https://api.openai.com/v1", True),  # the provider's own endpoint: safe whoever names it
        ("http://api.openai.com/v1", False),  # not over TLS: anyone on the path reads the key
        ("https://api.openai.com.attacker.example/v1", False),
        ("https://collector.example/v1", False),
    ],
)
def test_which_project_urls_count_as_the_providers_own(tmp_path, monkeypatch, base_url, user_key_allowed):
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"base_url": base_url}}))
    key, _ = settings.api_key(settings.resolve(path=str(tmp_path)))
    assert (key == USER_KEY) is user_key_allowed


def test_a_project_secrets_file_is_a_project_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    (tmp_path / "secrets.yaml").write_text(f"OPENAI_API_KEY: {PROJECT_KEY}\n")
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"base_url": "http://10.9.9.9/v1"}}))
    assert settings.api_key(settings.resolve(path=str(tmp_path))) == (PROJECT_KEY, str(tmp_path / "secrets.yaml"))


@pytest.mark.parametrize("content", ["- name: a kubernetes list\n- kind: Service\n", "key: [unclosed\n", "\x00\xff"])
def test_key_free_work_ignores_an_unrelated_secrets_file(project, content, spans):
    (project.root / "secrets.yaml").write_bytes(content.encode("latin-1"))
    lexical = onetool_code.search(query="retry backoff", path=str(project.root), mode="lexical")
    assert lexical.startswith("Found ")
    assert onetool_code.status(path=str(project.root)).startswith("Project: ")
    from onetool_code.indexer import build_index

    summary = build_index(settings.resolve(path=str(project.root), db="fresh.db"), embeddings=False, progress=False)
    assert summary.chunks_written > 0


def test_a_skipped_secrets_file_is_noted_in_the_span(project, server, spans):
    (project.root / "secrets.yaml").write_text("- not\n- a mapping\n")
    answer = onetool_code.search(query="retry", path=str(project.root), base_url=server.base_url, mode="semantic")
    assert answer.startswith("Found ")
    record = json.loads(spans[-1].getMessage())
    assert any("secrets.yaml: not a flat YAML mapping" in note for note in record["notes"])
