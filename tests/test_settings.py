"""Settings: every precedence chain of PRODUCT.md §1 and §3, read in one place."""

from __future__ import annotations

import json

import pytest

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
    assert settings.index_path(tmp_path, None, {}) == settings.Path("/abs/dir/chunks.db")
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


def test_timeout_comes_from_onetool_then_chunkhounds_config(tmp_path):
    assert settings.resolve(path=str(tmp_path)).timeout == 30.0
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"timeout": 120}}))
    assert settings.resolve(path=str(tmp_path)).timeout == 120.0
    host = OneToolHost(get_secret=lambda name: None, tool_config={"timeout": 5})
    assert settings.resolve(path=str(tmp_path), host=host).timeout == 5.0
    (tmp_path / ".chunkhound.json").write_text(json.dumps({"embedding": {"timeout": "soon"}}))
    assert settings.resolve(path=str(tmp_path)).timeout == 30.0
