"""Settings: every precedence chain of PRODUCT.md §1 and §3, read in one place."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import onetool_code
from onetool_code import settings
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.settings import OneToolHost


def test_project_root_defaults_to_ot_cwd_then_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert settings.project_root(None) == tmp_path.resolve()
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("OT_CWD", str(other))
    assert settings.project_root(None) == other.resolve()


def test_relative_path_resolves_against_ot_cwd(tmp_path, monkeypatch):
    (tmp_path / "repo" / "sub").mkdir(parents=True)
    monkeypatch.setenv("OT_CWD", str(tmp_path / "repo"))
    assert settings.project_root("sub") == (tmp_path / "repo" / "sub").resolve()


def test_tilde_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "proj").mkdir()
    assert settings.project_root("~/proj") == (tmp_path / "proj").resolve()


def test_missing_or_file_project_path_is_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="does not exist"):
        settings.project_root(str(tmp_path / "nope"))
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(BadInputError, match="not a directory"):
        settings.project_root(str(tmp_path / "f.txt"))


def test_default_index_is_chunkhounds(tmp_path):
    assert settings.index_path(tmp_path, None, {}) == tmp_path / ".chunkhound" / "db" / "chunks.db"


def test_legacy_and_old_onetool_locations_are_found(tmp_path):
    (tmp_path / ".chunkhound").mkdir()
    (tmp_path / ".chunkhound" / "chunks.db").write_bytes(b"")
    assert settings.index_path(tmp_path, None, {}) == tmp_path / ".chunkhound" / "chunks.db"
    (tmp_path / ".chunkhound" / "db").write_bytes(b"")  # the legacy file form
    assert settings.index_path(tmp_path, None, {}) == tmp_path / ".chunkhound" / "db"


def test_configured_database_path_follows_chunkhounds_rule(tmp_path, monkeypatch):
    assert settings.index_path(tmp_path, None, {"database": {"path": "idx"}}) == tmp_path / "idx" / "chunks.db"
    assert settings.index_path(tmp_path, None, {"database": {"path": "idx/my.duckdb"}}) == tmp_path / "idx/my.duckdb"
    monkeypatch.setenv("CHUNKHOUND_DATABASE__PATH", "/abs/dir")
    assert settings.index_path(tmp_path, None, {}) == Path("/abs/dir/chunks.db")
    # .chunkhound.json wins over the environment variable.
    assert settings.index_path(tmp_path, None, {"database": {"path": "idx"}}) == tmp_path / "idx" / "chunks.db"


def test_explicit_db_wins_and_may_name_a_directory(tmp_path):
    (tmp_path / "custom").mkdir()
    assert settings.index_path(tmp_path, "custom", {"database": {"path": "x"}}) == tmp_path / "custom" / "chunks.db"
    (tmp_path / "custom" / "file.db").write_bytes(b"")
    assert settings.index_path(tmp_path, "custom/file.db", {}) == tmp_path / "custom" / "file.db"


def test_embedding_settings_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__MODEL", "from-env")
    assert settings.resolve(path=str(tmp_path)).model == "from-env"
    (tmp_path / ".chunkhound.json").write_text(
        json.dumps({"embedding": {"model": "from-json", "base_url": "http://j"}})
    )
    assert settings.resolve(path=str(tmp_path)).model == "from-json"
    host = OneToolHost(get_secret=lambda name: None, tool_config={"model": "from-pack"})
    assert settings.resolve(path=str(tmp_path), host=host).model == "from-pack"
    resolved = settings.resolve(path=str(tmp_path), model="explicit", host=host)
    assert (resolved.model, resolved.base_url, resolved.provider) == ("explicit", "http://j", "openai")


def test_defaults(tmp_path):
    resolved = settings.resolve(path=str(tmp_path))
    assert (resolved.provider, resolved.model, resolved.base_url) == ("openai", "text-embedding-3-small", None)
    assert (resolved.limit, resolved.max_bytes, settings.api_key(resolved)) == (10, 5000, (None, "none"))


def key(tmp_path, **options):
    return settings.api_key(settings.resolve(path=str(tmp_path), **options))


def test_api_key_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert key(tmp_path) == ("sk-env", "OPENAI_API_KEY")
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__API_KEY", "sk-chunkhound-env")
    assert key(tmp_path)[0] == "sk-chunkhound-env"
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"api_key": "sk-json"}}))
    assert key(tmp_path) == ("sk-json", ".chunkhound.json")
    user = tmp_path / "xdg" / "onetool-code"
    user.mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (user / "secrets.yaml").write_text("OPENAI_API_KEY: sk-user\n")
    assert key(tmp_path)[0] == "sk-user"
    (tmp_path / "secrets.yaml").write_text("OPENAI_API_KEY: sk-project\n")
    assert key(tmp_path)[0] == "sk-project"
    named = tmp_path / "named.yaml"
    named.write_text("OPENAI_API_KEY: sk-named\n")
    monkeypatch.setenv("ONETOOL_CODE_SECRETS", str(named))
    assert key(tmp_path) == ("sk-named", str(named))
    host = OneToolHost(get_secret=lambda name: "sk-onetool" if name == "OPENAI_API_KEY" else None)
    assert key(tmp_path, host=host) == ("sk-onetool", "OneTool secrets")


def test_key_never_shows_in_repr(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"api_key": "sk-project-value"}}))
    resolved = settings.resolve(path=str(tmp_path))
    assert "sk-secret-value" not in repr(resolved) and "sk-project-value" not in repr(resolved)
    assert "sk-" not in repr(settings.api_key(resolved))


def test_broken_config_files_name_the_file_not_the_content(tmp_path, monkeypatch):
    named = tmp_path / "named.yaml"
    named.write_text("OPENAI_API_KEY: [sk-leaky\n")
    monkeypatch.setenv("ONETOOL_CODE_SECRETS", str(named))
    resolved = settings.resolve(path=str(tmp_path))  # nothing is read until a key is needed
    with pytest.raises(OneToolCodeError) as caught:
        settings.api_key(resolved)
    assert "named.yaml" in str(caught.value) and "sk-leaky" not in str(caught.value)
    named.write_text("- a\n- list\n")
    with pytest.raises(OneToolCodeError, match=r"named\.yaml: not a flat YAML mapping"):
        settings.api_key(resolved)
    named.unlink()
    with pytest.raises(OneToolCodeError, match=r"named\.yaml"):
        settings.api_key(resolved)
    monkeypatch.delenv("ONETOOL_CODE_SECRETS")
    (tmp_path / ".chunkhound.json").write_text("{not json")
    with pytest.raises(OneToolCodeError, match=r"\.chunkhound\.json"):
        settings.resolve(path=str(tmp_path))


def test_pack_settings_are_validated(tmp_path):
    host = OneToolHost(get_secret=lambda name: None, tool_config={"limit": "many"})
    with pytest.raises(OneToolCodeError, match=r"tools\.code\.limit"):
        settings.resolve(path=str(tmp_path), host=host)
    host = OneToolHost(get_secret=lambda name: None, tool_config={"limit": 25, "max_bytes": 8000, "db": "x.db"})
    resolved = settings.resolve(path=str(tmp_path), host=host)
    assert (resolved.limit, resolved.max_bytes, resolved.db_path) == (25, 8000, tmp_path.resolve() / "x.db")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": ["/tmp"]}, "path must be text, got list"),
        ({"db": 3}, "db must be text, got int"),
        ({"base_url": {"u": 1}}, "base_url must be text, got dict"),
        ({"cache": "false"}, "cache must be true or false, got 'false'"),
        ({"host": "x"}, "host must be OneTool's host"),
    ],
)
def test_settings_arguments_are_checked_for_type(tmp_path, options, message):
    with pytest.raises(BadInputError, match=message):
        settings.resolve(**{"path": str(tmp_path), **options})


def test_pack_cache_setting_is_a_boolean(tmp_path):
    host = OneToolHost(get_secret=lambda name: None, tool_config={"cache": "false"})
    with pytest.raises(OneToolCodeError, match=r"tools\.code\.cache must be true or false"):
        settings.resolve(path=str(tmp_path), host=host)
    host = OneToolHost(get_secret=lambda name: None, tool_config={"cache": False})
    assert settings.resolve(path=str(tmp_path), host=host).cache is False


@pytest.mark.parametrize(
    ("user", "env", "project_value", "expected"),
    [
        (None, None, None, 30.0),
        (None, None, 600, 30.0),  # a repository cannot make a stalling server wait longer
        (None, None, 5, 5.0),
        (10, None, 20, 10.0),
        (10, None, 3, 3.0),
        (None, "45", 120, 45.0),
        (None, "45", 12, 12.0),
        (7, "45", None, 7.0),
        (None, "forever", None, 30.0),
        (None, None, "soon", 30.0),
    ],
)
def test_the_timeout_is_the_users_and_a_project_may_only_lower_it(
    tmp_path, monkeypatch, user, env, project_value, expected
):
    if project_value is not None:
        (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"timeout": project_value}}))
    if env is not None:
        monkeypatch.setenv("CHUNKHOUND_EMBEDDING__TIMEOUT", env)
    host = OneToolHost(get_secret=lambda name: None, tool_config={} if user is None else {"timeout": user})
    assert settings.resolve(path=str(tmp_path), host=host).timeout == expected


def test_a_config_nested_too_deeply_is_a_clear_error_everywhere(tmp_path, capsys):
    """A repository's ``.chunkhound.json`` of 100,000 nested lists: one line naming the file, in every command."""
    from onetool_code import cli

    (tmp_path / ".chunkhound.json").write_text("[" * 100_000 + "]" * 100_000)
    message = f"Cannot read {tmp_path.resolve() / '.chunkhound.json'}: nested too deeply"
    with pytest.raises(OneToolCodeError, match=re.escape(message)):
        settings.resolve(path=str(tmp_path))
    assert onetool_code.status(path=str(tmp_path)) == f"Error: {message}"
    assert onetool_code.search(query="x", path=str(tmp_path), mode="lexical") == f"Error: {message}"
    for command in (["status"], ["search", "x"], ["index", "--no-embeddings"]):
        assert cli.main([*command, "--path", str(tmp_path)]) == 1
        assert capsys.readouterr().err == f"Error: {message}\n"


@pytest.mark.parametrize("kind", ["fifo", "huge", "symlink to a fifo"])
def test_a_config_that_is_no_small_regular_file_is_refused_without_blocking(tmp_path, kind):
    config = tmp_path / ".chunkhound.json"
    if kind == "huge":
        config.write_text(json.dumps({"embedding": {"model": "m"}, "pad": "x" * (2 << 20)}))
    else:
        fifo = tmp_path / "pipe" if kind.startswith("symlink") else config
        os.mkfifo(fifo)
        if fifo != config:
            config.symlink_to(fifo)
    reason = "larger than 1,048,576 bytes" if kind == "huge" else "not a regular file"
    with pytest.raises(
        OneToolCodeError, match=f"^Cannot read {re.escape(str(config.resolve().parent / config.name))}: {reason}$"
    ):
        settings.resolve(path=str(tmp_path))


@pytest.mark.parametrize("name", ["path", "db"])
def test_a_nul_in_a_path_is_bad_input_naming_it(tmp_path, name):
    options = {"path": str(tmp_path), name: f"{tmp_path}/a\x00b"}
    with pytest.raises(BadInputError, match=f"^{name} must not hold a NUL character$"):
        settings.resolve(**options)
    assert onetool_code.search(query="x", mode="lexical", **options) == f"Error: {name} must not hold a NUL character"


def test_a_nul_in_the_projects_database_path_is_a_clear_error(tmp_path):
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"database": {"path": "idx\u0000.db"}}))
    assert onetool_code.status(path=str(tmp_path)) == (
        "Error: database.path in .chunkhound.json (or CHUNKHOUND_DATABASE__PATH) holds a NUL"
    )
