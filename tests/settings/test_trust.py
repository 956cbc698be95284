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
    named = onetool_code.search(query="load_config", path=str(project.root))  # hybrid: a name the words find
    assert named.startswith("Found ") and "answered by words" not in named
    assert onetool_code.status(path=str(project.root)).startswith("Project: ")
    assert not [n for r in spans for n in json.loads(r.getMessage()).get("notes", ()) if "secrets.yaml" in n]
    from onetool_code.indexer import build_index

    summary = build_index(settings.resolve(path=str(project.root), db="fresh.db"), embeddings=False, progress=False)
    assert summary.chunks_written > 0


def test_a_skipped_secrets_file_is_noted_in_the_span(project, server, spans):
    (project.root / "secrets.yaml").write_text("- not\n- a mapping\n")
    answer = onetool_code.search(query="retry", path=str(project.root), base_url=server.base_url, mode="semantic")
    assert answer.startswith("Found ")
    record = json.loads(spans[-1].getMessage())
    assert any("secrets.yaml: not a flat YAML mapping" in note for note in record["notes"])


# -- A hostile repository (issue 24) -------------------------------------------------------------------------------


def user_secrets(text: str) -> Path:
    """The user's own secrets file, in the user's config directory."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "onetool-code"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secrets.yaml").write_text(text)
    return folder / "secrets.yaml"


def relative_link(link: Path, target: Path) -> None:
    link.symlink_to(os.path.relpath(target, link.parent))


@pytest.mark.parametrize("how", ["absolute symlink", "relative symlink", "hard link", "symlinked named file"])
def test_a_project_secrets_file_that_is_the_users_own_is_not_the_projects(project, server, monkeypatch, how):
    """A repository ships ``secrets.yaml`` as a link to the user's own secrets file and names its own server: the
    user's key must not go there. Only a regular file inside the project is the project's."""
    mine = user_secrets(f"OPENAI_API_KEY: {USER_KEY}\n")
    if how == "symlinked named file":  # the file ONETOOL_CODE_SECRETS names, linked from the repository
        named = mine.with_name("named.yaml")
        mine.rename(named)
        monkeypatch.setenv(settings.SECRETS_ENV, str(named))
        mine = named
    link = project.root / "secrets.yaml"
    if how == "hard link":
        os.link(mine, link)
    elif how == "relative symlink":
        relative_link(link, mine)
    else:
        link.symlink_to(mine)
    configure(project, base_url=server.base_url)
    answer = onetool_code.search(query="retry backoff", path=str(project.root), mode="semantic")
    assert answer.startswith("Found ")  # the local server needs no key
    assert USER_KEY not in str(last_authorization(server))


@pytest.mark.parametrize("provider", ["openai", "voyageai"])
@pytest.mark.parametrize("where", ["environment", "tools.code"])
@pytest.mark.parametrize("key_place", ["environment", "user secrets", "OneTool"])
def test_the_users_relative_rerank_url_on_the_projects_base_url_gets_no_user_key(
    project, server, monkeypatch, provider, where, key_place
):
    """A URL made of two parts is trusted only when both are: the user's ``/rerank`` joined to the repository's
    server is the repository's server."""
    key_name = settings.PROVIDERS[provider].key_name
    secret = None
    if key_place == "environment":
        monkeypatch.setenv(key_name, USER_KEY)
    elif key_place == "user secrets":
        user_secrets(f"{key_name}: {USER_KEY}\n")
    else:
        secret = USER_KEY
    tool = {"rerank_url": "/rerank"} if where == "tools.code" else {}
    if where == "environment":
        monkeypatch.setenv("CHUNKHOUND_EMBEDDING__RERANK_URL", "/rerank")
    host = OneToolHost(get_secret=lambda name: secret if name == key_name else None, tool_config=tool)
    configure(
        project,
        provider=provider,
        base_url=server.base_url,
        model="voyage-3.5" if provider == "voyageai" else "text-embedding-3-small",
    )
    before = len(server.requests)
    onetool_code.search(query="retry backoff", path=str(project.root), mode="hybrid", host=host)
    reranks = [r for r in server.requests[before:] if r.path.endswith("/rerank")]
    assert reranks, "the reranker was asked"
    assert all(USER_KEY not in str(r.authorization) for r in server.requests[before:])


@pytest.mark.parametrize(
    "written",
    [f"OPENAI_API_KEY: |\n  {USER_KEY}\n", f"OPENAI_API_KEY: '{USER_KEY} '\n", f'OPENAI_API_KEY: "{USER_KEY}\\r"\n'],
)
def test_a_key_with_a_trailing_space_or_line_break_is_sent_stripped(project, server, written):
    user_secrets(written)
    answer = onetool_code.search(
        query="retry backoff", path=str(project.root), mode="semantic", base_url=server.base_url
    )
    assert answer.startswith("Found ")
    assert last_authorization(server) == f"Bearer {USER_KEY}"


@pytest.mark.parametrize(
    "bad", [f"{USER_KEY}\nX-Injected: 1", f"sk-\u00e9t\u00e9-{USER_KEY}", f"sk-\u4e2d-{USER_KEY}", f"{USER_KEY}\x1b[2K"]
)
@pytest.mark.parametrize("path", ["embeddings", "rerank"])
def test_a_key_that_cannot_be_sent_is_named_by_its_place_never_shown(project, server, monkeypatch, spans, bad, path):
    """No request is sent: the message names the key and where it came from, and neither the answer nor the log
    holds any of it."""
    monkeypatch.setenv("OPENAI_API_KEY", bad)
    if path == "rerank":  # embeddings from the project's local server, which gets no user key; reranked by the user's
        configure(project, base_url=server.base_url)
        monkeypatch.setenv("CHUNKHOUND_EMBEDDING__RERANK_URL", f"{server.base_url}/rerank")
        options = {}
    else:
        options = {"base_url": server.base_url}
    before = len(server.requests)
    message = (
        "the OPENAI_API_KEY from the environment variable OPENAI_API_KEY holds a character that cannot be sent in "
        "a request header (a space, a line break, a control or non-ASCII character): correct it there."
    )
    answers = []
    if path == "embeddings":
        answers.append(onetool_code.search(query="retry backoff", path=str(project.root), mode="semantic", **options))
        assert answers[-1] == f"Error: {message}"
    answers.append(onetool_code.search(query="retry backoff", path=str(project.root), **options))
    assert answers[-1].startswith("Found ")
    if path == "embeddings":
        assert "Note: answered by words only (lexical): the OPENAI_API_KEY from" in answers[-1]
    else:
        assert f"Note: not reranked, the fused order stands: {message}" in answers[-1]
    assert not [r for r in server.requests[before:] if r.path.endswith("/rerank") or USER_KEY in str(r.authorization)]
    logged = "\n".join(r.getMessage() for r in spans)
    for text in (*answers, logged):
        assert USER_KEY not in text and bad not in text


def test_a_voyage_key_that_cannot_be_sent_is_refused_before_any_request(tmp_path, server, monkeypatch):
    monkeypatch.setenv("VOYAGE_API_KEY", f"pa-{USER_KEY}\r\nX: y")
    configure_at = tmp_path / ".chunkhound.json"
    configure_at.write_text(json.dumps({"embedding": {"provider": "voyageai", "base_url": server.base_url}}))
    before = len(server.requests)
    from onetool_code.errors import EmbeddingError
    from onetool_code.search import embeddings

    with pytest.raises(EmbeddingError, match=r"^the VOYAGE_API_KEY from the environment variable VOYAGE_API_KEY holds"):
        embeddings.embed(["retry"], settings.resolve(path=str(tmp_path), base_url=server.base_url))
    assert len(server.requests) == before


def test_a_project_server_the_user_names_too_is_the_users(project, server, monkeypatch):
    """The project's ``.chunkhound.json`` wins over the environment, as in ChunkHound; naming the same server in
    the environment is how the user trusts it, and then it gets the user's key."""
    monkeypatch.setenv("OPENAI_API_KEY", USER_KEY)
    configure(project, base_url=server.base_url)
    onetool_code.search(query="retry", path=str(project.root), mode="semantic")
    assert USER_KEY not in str(last_authorization(server))
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", server.base_url)
    assert onetool_code.search(query="retry", path=str(project.root), mode="semantic").startswith("Found ")
    assert last_authorization(server) == f"Bearer {USER_KEY}"
