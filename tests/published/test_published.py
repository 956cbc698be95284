"""Indexes published to a real object store (SeaweedFS on 127.0.0.1, one server for the session) and searched
from a cache that starts empty: the same answers as the local index, and every trust rule of issue 34."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import obstore
import pytest
from conftest import SAMPLE, build_index, disagreeing, read_compact
from obstore.store import S3Store

import onetool_code
from onetool_code import api, cli, index, request, settings
from onetool_code.published import manifest
from onetool_code.search import engine

QUERY = "parse configuration file"


@pytest.fixture
def store(seaweedfs, monkeypatch):
    """A prefix of this test's own in the session's store (one bucket: each new one costs SeaweedFS volumes), the
    user's credentials in the environment."""
    for name, value in seaweedfs.environment().items():
        monkeypatch.setenv(name, value)
    return f"s3://indexes/t{secrets.token_hex(6)}/sample"


def _client(url: str) -> S3Store:
    return S3Store.from_url(url, client_options={"allow_http": True})


def _publish(capsys, url: str, root, *extra: str) -> str:
    assert cli.main(["publish", url, "--path", str(root), *extra]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _search(path, **options):
    answer = onetool_code.search(query=QUERY, path=str(path), format="compact", **options)
    return read_compact(answer) if isinstance(answer, str) else answer


def _answers(path, base_url: str) -> list:
    """Each mode's ranking: files, ranges, kinds and scores (what is shown of a hit differs: a published index's
    hits show the stored code, with a note that the file is not on this machine, and a matched line's preview
    has no file line number)."""
    return [
        [e if isinstance(e, str) else e[:4] for e in answer]
        for answer in (
            _search(path, base_url=base_url, mode=mode, content="always")["results"]
            for mode in ("semantic", "lexical", "hybrid")
        )
    ]


def _versions(url: str) -> list[str]:
    keys = [item["path"] for batch in obstore.list(_client(url), "versions/") for item in batch]
    return sorted({k.split("/")[1] for k in keys if k.endswith("/manifest.json")})


def _ranked(path, base_url: str, **given) -> list:
    """Each mode's ranked hits, before shaping: the index's answer."""
    resolved = settings.resolve(path=str(path), base_url=base_url, **given)
    answers = []
    for mode in ("semantic", "lexical", "hybrid", "regex"):
        req = request.parse(queries="config" if mode == "regex" else QUERY, limit=20, mode=mode)
        answers.append(
            [(h.file_path, h.start_line, h.end_line, h.score, h.code) for h in engine.run(resolved, req).hits]
        )
    return answers


def test_published_index_answers_as_the_local_one(capsys, store, sample_index, tmp_path, monkeypatch):
    out = _publish(capsys, store, sample_index.root)
    assert "published version" in out
    local, shown = _ranked(sample_index.root, sample_index.base_url), _answers(sample_index.root, sample_index.base_url)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "empty-machine"))
    index.reset()
    remote = _ranked(store, sample_index.base_url)
    assert remote == local
    assert all(remote)
    # Shown without a checkout: semantic and lexical pages as the local ones (hybrid merges hits by the file's
    # definitions, which only a checkout has).
    assert _answers(store, sample_index.base_url)[:2] == shown[:2]
    # With a checkout of the project here (db names the store): every page exactly as the local index's.
    checkout = onetool_code.search(query=QUERY, path=str(sample_index.root), db=store, base_url=sample_index.base_url)
    local_page = onetool_code.search(query=QUERY, path=str(sample_index.root), base_url=sample_index.base_url)
    assert checkout == local_page and "not on this machine" not in checkout
    # The command line reads it too, through --path.
    assert cli.main(["search", QUERY, "--path", store, "--base-url", sample_index.base_url, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]


def test_the_first_search_reads_the_shipped_snapshot_not_the_file(
    capsys, store, sample_index, tmp_path, monkeypatch, spans
):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    _search(store, base_url=sample_index.base_url)
    said = " ".join(r.getMessage() for r in spans)
    assert "was adopted" in said
    assert "snapshot of" not in said or "made (" not in said  # no snapshot was made from the file


def test_hits_say_the_file_is_not_on_this_machine(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    text = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url, expand=3)
    assert "not on this machine" in text
    # The indexed code is shown all the same.
    first = _search(sample_index.root, base_url=sample_index.base_url, content="always")["results"]
    assert any(isinstance(e, list) and len(e) > 4 and e[4] for e in first)


def test_a_version_is_visible_only_once_its_manifest_is(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ONETOOL_CODE_REFRESH", "0")
    first = onetool_code.status(path=store, format="json")
    # A publisher that died after its objects and before its manifest: objects of a newer version, no manifest.
    client = _client(store)
    later = "29991231T000000000000Z-abcdef"
    obstore.put(client, f"versions/{later}/chunks.db", b"half a version")
    assert onetool_code.status(path=store, format="json")["project"] == first["project"]
    assert later not in json.dumps(onetool_code.status(path=store, format="json"))


def test_keep_prunes_old_versions(capsys, store, sample_index):
    for _ in range(3):
        _publish(capsys, store, sample_index.root)
    assert len(_versions(store)) == 3
    out = _publish(capsys, store, sample_index.root, "--keep", "2")
    assert "removed 2 older version" in out
    kept = _versions(store)
    assert len(kept) == 2
    latest = json.loads(bytes(obstore.get(_client(store), "manifest.json").bytes()))
    assert latest["version"] == kept[-1]


def _tampered(url: str, change) -> None:
    """The newest manifest rewritten by ``change`` (a store whose writer is not to be trusted)."""
    client = _client(url)
    data = json.loads(bytes(obstore.get(client, "manifest.json").bytes()))
    change(data, client)
    obstore.put(client, "manifest.json", json.dumps(data).encode())


def _corrupted(url: str, ending: str) -> None:
    """One byte of the published object whose key ends so flipped: the same size, only the sha256 can tell."""
    client = _client(url)
    data = json.loads(bytes(obstore.get(client, "manifest.json").bytes()))
    key = next(i["key"] for i in data["items"] if i["key"].endswith(ending))
    body = bytearray(bytes(obstore.get(client, key).bytes()))
    body[len(body) // 2] ^= 0xFF
    obstore.put(client, key, bytes(body))


def test_a_corrupted_object_is_refused(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    _corrupted(store, "/files.json")  # of the shipped snapshot: fetched before any search
    answer = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url)
    assert answer.startswith("Error:") and "sha256" in answer


def test_the_index_file_is_fetched_only_when_a_search_needs_it(capsys, store, sample_index, tmp_path, monkeypatch):
    """The shipped snapshot answers without the index file (two thirds of a version's bytes); snapshots off, a
    search fetches it then, verified like any object."""
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    local = _search(sample_index.root, base_url=sample_index.base_url)["results"]
    assert _search(sample_index.root, db=store, base_url=sample_index.base_url)["results"] == local
    assert _search(store, base_url=sample_index.base_url)["results"]
    fetched = list((tmp_path / "cache" / "published").rglob("chunks.db"))
    assert not fetched and list((tmp_path / "cache" / "published").rglob("chunks.db.snapshot-*"))
    assert onetool_code.status(path=store, format="json")["chunks"] > 0
    assert _search(store, base_url=sample_index.base_url, cache=False)["results"]
    (db,) = (tmp_path / "cache" / "published").rglob("chunks.db")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == hashlib.sha256(sample_index.db.read_bytes()).hexdigest()
    assert _search(sample_index.root, db=store, base_url=sample_index.base_url)["results"] == local


def test_a_corrupted_index_file_is_refused_when_it_is_fetched(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    _corrupted(store, "/chunks.db")
    assert _search(store, base_url=sample_index.base_url)["results"]  # the snapshot needs no file
    answer = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url, cache=False)
    assert answer.startswith("Error:") and "sha256" in answer
    assert not list((tmp_path / "cache" / "published").rglob("chunks.db"))  # never put in place


def test_a_manifest_naming_an_object_outside_its_version_is_refused(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))

    def escape(data, client):
        data["items"][0]["key"] = f"versions/{data['version']}/../../../../.ssh/authorized_keys"

    _tampered(store, escape)
    answer = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url)
    assert answer.startswith("Error:") and "outside its version" in answer
    assert not list((tmp_path / "cache").rglob("authorized_keys"))


def test_a_newer_manifest_format_is_refused_with_a_message(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    _tampered(store, lambda data, client: data.update(format=manifest.FORMAT + 1))
    answer = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url)
    assert answer.startswith("Error:") and "upgrade onetool-code" in answer


def test_a_credential_is_never_printed(capsys, seaweedfs, store, sample_index, tmp_path, monkeypatch, spans):
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    secret = seaweedfs.secret_key
    # Every kind of failure: nothing published, a wrong secret, a store that cannot be reached, and a success.
    seen = [onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url)]
    _publish(capsys, store, sample_index.root)
    seen.append(onetool_code.status(path=store))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret + "-wrong")
    seen.append(onetool_code.search(query=QUERY, path=store.replace("sample", "other"), base_url=sample_index.base_url))
    seen.append(str(cli.main(["publish", store, "--path", str(sample_index.root)])))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    seen.append(onetool_code.search(query=QUERY, path=store.replace("sample", "third"), base_url=sample_index.base_url))
    captured = capsys.readouterr()
    seen += [captured.out, captured.err, *(r.getMessage() for r in spans)]
    assert any("refused access" in s or "cannot be reached" in s for s in seen)
    assert not [s for s in seen if secret in s]


def test_a_stopped_store_answers_from_the_cached_version_with_its_age(
    capsys, store, sample_index, tmp_path, monkeypatch
):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ONETOOL_CODE_REFRESH", "0")
    fresh = _search(store, base_url=sample_index.base_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there: a store that is down
    stale = _search(store, base_url=sample_index.base_url)
    assert stale["results"] == fresh["results"]
    assert "cannot be reached" in stale["notice"] and "published" in stale["notice"] and " ago" in stale["notice"]
    # The same note beside a checkout (db names the store), and in status.
    beside = _search(sample_index.root, db=store, base_url=sample_index.base_url)
    assert beside["results"] and "cannot be reached" in beside["notice"]
    told = onetool_code.status(path=store)
    assert "\nStore: " in told and "cannot be reached" in told


def test_status_names_the_store_version_and_commit(capsys, store, project, tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q"], cwd=project.root, check=True)
    subprocess.run(["git", "add", "src"], cwd=project.root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], cwd=project.root, check=True
    )
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project.root, capture_output=True, text=True, check=True
    ).stdout.strip()
    _publish(capsys, store, project.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    version = _versions(store)[-1]
    told = onetool_code.status(path=store)
    line = next(x for x in told.splitlines() if x.startswith("Published: "))
    assert store in line and version in line and commit[:12] in line and " ago" in line
    data = onetool_code.status(path=str(project.root), db=store, format="json")
    assert data["published"]["version"] == version and data["published"]["git"]["commit"] == commit
    assert data["project"] == str(project.root)  # the checkout, read from disk
    assert "published" not in onetool_code.status(path=str(project.root), format="json")


def test_a_repository_cannot_claim_to_be_a_published_index(project, tmp_path, monkeypatch):
    """The mark a fetched version carries counts only inside the cache: a repository holding one is a checkout
    whose files were deleted, not a published index with no checkout here."""
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    (project.root / ".onetool-code-published.json").write_text(
        json.dumps({"url": "s3://planted/x", "version": "1", "created": 0, "git": None})
    )
    shutil.rmtree(project.root / "src")
    answer = onetool_code.search(query=QUERY, path=str(project.root), base_url=project.base_url)
    assert "deleted since indexing" in answer and "not on this machine" not in answer
    assert "Published" not in onetool_code.status(path=str(project.root))


def test_no_cached_version_and_no_store_is_one_clear_error(store, tmp_path, monkeypatch):
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    answer = onetool_code.search(query=QUERY, path=store)
    assert answer.startswith("Error:") and "cannot be reached" in answer and "no version" in answer
    assert answer.count("\n") == 0


def test_plain_http_to_another_machine_is_refused(store, monkeypatch, tmp_path):
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://192.0.2.1:8333")
    answer = onetool_code.search(query=QUERY, path=store)
    assert answer.startswith("Error:") and "plain HTTP" in answer


def test_an_unchanged_version_is_never_downloaded_twice(capsys, store, sample_index, tmp_path, monkeypatch, spans):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ONETOOL_CODE_REFRESH", "0")  # every search asks the store
    for _ in range(3):
        _search(store, base_url=sample_index.base_url)
        index.reset()
    fetched = [r.getMessage() for r in spans if "fetched version" in r.getMessage()]
    assert len(fetched) == 1
    folders = [p for p in (tmp_path / "cache" / "published").glob("*/*") if p.is_dir()]
    assert len(folders) == 1


def test_a_new_version_is_picked_up_within_refresh(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ONETOOL_CODE_REFRESH", "3600")
    before = onetool_code.status(path=store, format="json")
    # A new version of another state of the project: a file gone from it.
    root = tmp_path / "v2" / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    (root / "src" / "bookshelf" / "errors.py").unlink()
    build_index(root, sample_index.base_url)
    _publish(capsys, store, root)
    assert onetool_code.status(path=store, format="json")["project"] == before["project"]  # within refresh
    # OneTool's tools.code.refresh comes before the environment's.
    host = settings.OneToolHost(get_secret=lambda _: None, tool_config={"refresh": 0})
    after = onetool_code.status(path=store, format="json", host=host)
    assert after["project"] != before["project"]
    assert after["files"] == before["files"] - 1
    bad = settings.OneToolHost(get_secret=lambda _: None, tool_config={"refresh": "soon"})
    refused = json.dumps(onetool_code.status(path=store, format="json", host=bad))
    assert "tools.code.refresh must be a whole number" in refused


def test_a_store_url_mixes_with_local_roots(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    answer = read_compact(
        api.search(query=QUERY, path=[store, str(sample_index.root)], base_url=sample_index.base_url, format="compact")
    )
    assert len({e.split(":")[0] for e in answer["results"] if isinstance(e, str)}) == 2


def test_a_file_url_is_a_shared_disk(capsys, sample_index, tmp_path, monkeypatch):
    url = f"file://{tmp_path / 'shared'}"
    _publish(capsys, url, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    assert _search(url, base_url=sample_index.base_url)["results"]


def test_a_version_whose_arrays_disagree_is_refused_by_name(capsys, sample_index, tmp_path, monkeypatch):
    """A publisher (buggy or hostile) whose manifest is true to every object's size and sha256, and whose
    snapshot's own record of its files' sizes is true too, but one of whose arrays holds one row (issue 38): the
    version is refused in one line naming it and what disagrees, never answered from, and its index file is not
    fetched in its stead."""
    shared = tmp_path / "shared"
    url = f"file://{shared}"
    _publish(capsys, url, sample_index.root)
    latest = json.loads((shared / manifest.LATEST).read_text())
    version = latest["version"]
    (shipped,) = (shared / "versions" / version).glob("chunks.db.snapshot-*")
    items = {item["key"]: item for item in latest["items"]}
    for path in (disagreeing(shipped, "vectors-0/codes.npy"), shipped / "snapshot.json"):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        items[str(path.relative_to(shared))].update(size=path.stat().st_size, sha256=digest)
    for key in (manifest.LATEST, f"versions/{version}/{manifest.LATEST}"):
        (shared / key).write_text(json.dumps(latest))
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):  # refused again at the next search, not answered from what the first one set aside
        answer = onetool_code.search(query=QUERY, path=url, base_url=sample_index.base_url)
        assert answer.startswith(f"Error: version {version} of {url} is refused"), answer
        assert "vectors-0/codes.npy is shaped (1, 1536), not (" in answer and len(answer.strip().splitlines()) == 1, (
            answer
        )
    assert not list((tmp_path / "cache" / "published").rglob("chunks.db"))


def test_publishing_leaves_nothing_in_the_temporary_folder(capsys, sample_index, tmp_path, monkeypatch):
    """The export's first read spills its arrays beside its folder: they are moved into the published snapshot
    or removed, never left behind (they were, one folder per publish)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _publish(capsys, f"file://{tmp_path / 'shared'}", sample_index.root)
    assert list(scratch.iterdir()) == []


def test_the_manifest_names_what_was_published(capsys, store, sample_index):
    _publish(capsys, store, sample_index.root)
    data = json.loads(bytes(obstore.get(_client(store), "manifest.json").bytes()))
    assert data["format"] == manifest.FORMAT and data["chunks"] > 0 and data["files"] > 0
    assert data["models"] and {"provider", "model", "dims", "count"} <= set(data["models"][0])
    db = next(i for i in data["items"] if i["key"].endswith("/chunks.db"))
    assert db["sha256"] == hashlib.sha256(sample_index.db.read_bytes()).hexdigest()


def test_a_long_lived_host_checks_in_the_background(capsys, store, sample_index, tmp_path, monkeypatch):
    """The MCP server's and the pack's way: a due check never holds a search up; the next search after it
    answers from the new version."""
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ONETOOL_CODE_REFRESH", "0")
    index.refresh_in_background()
    before = onetool_code.status(path=store, format="json")["project"]
    root = tmp_path / "v2" / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    (root / "src" / "bookshelf" / "errors.py").unlink()
    build_index(root, sample_index.base_url)
    _publish(capsys, store, root)
    assert onetool_code.status(path=store, format="json")["project"] == before  # the check runs meanwhile
    deadline = time.monotonic() + 30
    while onetool_code.status(path=store, format="json")["project"] == before:
        assert time.monotonic() < deadline, "the new version was never picked up"
        time.sleep(0.1)


def test_a_refused_new_version_leaves_the_cached_one_answering(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ONETOOL_CODE_REFRESH", "0")
    fresh = _search(store, base_url=sample_index.base_url)
    _tampered(store, lambda data, client: data.update(format=manifest.FORMAT + 1))
    stale = _search(store, base_url=sample_index.base_url)
    assert stale["results"] == fresh["results"]
    assert "upgrade onetool-code" in stale["notice"] and "answering from version" in stale["notice"]


def test_the_pack_and_a_workspace_take_a_store_url(capsys, store, sample_index, tmp_path, monkeypatch):
    from onetool_code import pack

    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", sample_index.base_url)
    assert pack.search(query=QUERY, path=store) == onetool_code.search(query=QUERY, path=store)
    assert "not on this machine" in pack.search(query=QUERY, path=store)
    # A workspace file naming the store beside a local root: the URL is kept as written, not made a path.
    workspaces = tmp_path / "workspaces.json"
    workspaces.write_text(json.dumps({"mixed": [store, str(sample_index.root)]}))
    assert cli.main(["search", QUERY, "--workspace", str(workspaces), "--path", "@mixed", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)["results"]
    assert len({r["repository"] for r in found}) == 2


def test_the_mcp_server_serves_a_store_url(capsys, store, sample_index, tmp_path, monkeypatch):
    from test_mcp_server import talk, text

    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))

    async def scenario(session):
        return await session.call_tool("search", {"query": QUERY})

    result = talk(tmp_path, ["--path", store, "--base-url", sample_index.base_url], scenario)
    assert not result.isError and "not on this machine" in text(result)


def test_keys_from_the_aws_credentials_file(capsys, seaweedfs, store, sample_index, tmp_path, monkeypatch):
    """No key in the environment: the AWS tools' shared credentials file, profile AWS_PROFILE, is read."""
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    credentials = tmp_path / "credentials"
    credentials.write_text(
        f"[default]\naws_access_key_id = nobody\naws_secret_access_key = wrong-secret-xyz\n\n"
        f"[ci]\naws_access_key_id = {seaweedfs.access_key}\naws_secret_access_key = {seaweedfs.secret_key}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    refused = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url)
    assert refused.startswith("Error:") and "wrong-secret-xyz" not in refused
    monkeypatch.setenv("AWS_PROFILE", "ci")
    assert _search(store, base_url=sample_index.base_url)["results"]


def test_a_killed_download_is_resumed_and_verified(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    latest = json.loads(bytes(obstore.get(_client(store), "manifest.json").bytes()))
    # The biggest object a search fetches (the index file and the float32 rows stay in the store while the shipped
    # snapshot serves).
    left = ("/chunks.db", "/matrix.npy")
    item = max((i for i in latest["items"] if not i["key"].endswith(left)), key=lambda i: i["size"])
    body = bytes(obstore.get(_client(store), item["key"]).bytes())
    # What a fetch killed halfway through it leaves: its first half, in the version's partial folder.
    from onetool_code.published.replica import folder
    from onetool_code.published.store import Location

    home = folder(Location.parse(store), settings.store_environment())
    name = item["key"].removeprefix(f"versions/{latest['version']}/")
    partial = home / f"{latest['version']}.partial" / latest["project"] / ".chunkhound" / "db" / name
    partial.parent.mkdir(parents=True)
    partial.write_bytes(body[: len(body) // 2])
    assert _search(store, base_url=sample_index.base_url)["results"]
    fetched = home / latest["version"] / latest["project"] / ".chunkhound" / "db" / name
    assert hashlib.sha256(fetched.read_bytes()).hexdigest() == item["sha256"]
    # A partial file that is not a prefix of the object is caught by its sha256, and fetched again whole next time.
    shutil.rmtree(home)
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"\0" * (len(body) // 2))
    answer = onetool_code.search(query=QUERY, path=store, base_url=sample_index.base_url)
    assert answer.startswith("Error:") and "sha256" in answer
    assert _search(store, base_url=sample_index.base_url)["results"]


READER = """
import json, sys, time
from pathlib import Path
import onetool_code
from onetool_code.published import replica

fetches = []
fetch = replica._fetch
replica._fetch = lambda store, found, home: (fetches.append(found.version), fetch(store, found, home))[1]
url, other, out, stop = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
with out.open("w") as log:
    while not stop.exists():
        status = onetool_code.status(path=url, format="json")
        found = onetool_code.search(query="config", path=[url, other], mode="lexical", format="json")
        record = {"at": time.time(), "status": status, "search": found, "fetches": list(fetches)}
        log.write(json.dumps(record) + "\\n")
        log.flush()
"""


def test_many_machines_at_once(capsys, seaweedfs, store, sample_index, tmp_path, monkeypatch):
    """Eight readers (eight machines: a cache each) search a workspace of two published repositories in a loop
    while the store goes down and comes back and a new version of one is published: every answer is from one
    whole version, the store's absence costs notes and never an error, each reader sees the new version within
    refresh plus one search, and no version is fetched twice."""
    from tooling.tcp_proxy import Proxy

    refresh = 0.5
    _publish(capsys, store, sample_index.root)
    other = store.replace("/sample", "/other")
    _publish(capsys, other, sample_index.root)
    root = tmp_path / "v2" / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    (root / "src" / "bookshelf" / "errors.py").unlink()
    build_index(root, sample_index.base_url)
    proxy = Proxy(int(seaweedfs.endpoint.rsplit(":", 1)[1]))
    stop = tmp_path / "stop"
    readers = []
    for n in range(8):
        env = {
            **os.environ, "AWS_ENDPOINT_URL": proxy.endpoint, "ONETOOL_CODE_REFRESH": str(refresh),
            "ONETOOL_CODE_CACHE_DIR": str(tmp_path / f"machine-{n}"),
        }  # fmt: skip
        log = tmp_path / f"reader-{n}.jsonl"
        readers.append(
            (log, subprocess.Popen([sys.executable, "-c", READER, store, other, str(log), str(stop)], env=env))
        )
    try:
        logs = [log for log, _ in readers]
        _until(lambda: all(len(_records(log)) >= 2 for log in logs), 180)
        proxy.stop()
        stopped = time.time()
        time.sleep(2 * refresh + 0.5)
        proxy.start()
        _publish(capsys, store, root)
        published_at = time.time()
        _until(lambda: all(_records(log)[-1]["status"]["files"] == 28 for log in logs), 120)
    finally:
        stop.touch()
        for _, process in readers:
            process.wait(30)
        proxy.stop()
    notes = 0
    for log in logs:
        records = _records(log)
        versions: dict[str, int] = {}
        for record in records:
            status, found = record["status"], record["search"]
            assert "error" not in status and "error" not in found, (status, found)
            assert versions.setdefault(status["project"], status["files"]) == status["files"]  # one whole version
            notes += "cannot be reached" in (found.get("notice") or "")
        assert sorted(versions.values()) == [28, 29]
        first_new = next(r for r in records if r["status"]["files"] == 28)
        slowest = max(b["at"] - a["at"] for a, b in itertools.pairwise(records))
        assert first_new["at"] - published_at <= refresh + 2 * slowest
        assert len(records[-1]["fetches"]) == len(set(records[-1]["fetches"])) == 3  # two of one, one of other
        assert all(len({r["repository"] for r in rec["search"]["results"]}) == 2 for rec in records)
    assert notes, "no reader said the store could not be reached while it was down"
    assert stopped < published_at


def _records(log) -> list[dict]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(line) for line in lines if line.endswith("}")]


def _until(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_repository_cannot_name_a_store(capsys, store, sample_index, project, tmp_path, monkeypatch):
    """A store is named only by the caller: a repository's ``.chunkhound.json`` naming one as its index is a path
    inside the repository like any other, and nothing is fetched."""
    _publish(capsys, store, sample_index.root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    (project.root / ".chunkhound.json").write_text(json.dumps({"database": {"path": store}}))
    answer = onetool_code.search(query=QUERY, path=str(project.root), base_url=sample_index.base_url)
    assert answer.startswith("Error: No index at") and str(project.root / "s3:") in answer
    assert not (cache / "published").exists()
