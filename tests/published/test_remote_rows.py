"""A published version's float32 rows left in the store at its first fetch: read by verified ranges until they are
fetched whole, with a local search's answers, and never a wrong answer from a changed or vanished store (a real
SeaweedFS, the session's, as in ``test_published.py``)."""

from __future__ import annotations

import json
import secrets
import shutil
import time

import obstore
import pytest
from obstore.store import S3Store

import onetool_code
from onetool_code import cli, index, published, request, settings
from onetool_code.published import rows
from onetool_code.search import engine

QUERIES = ("parse configuration file", "read settings from the environment", "search results ranking")


@pytest.fixture
def store(seaweedfs, monkeypatch):
    for name, value in seaweedfs.environment().items():
        monkeypatch.setenv(name, value)
    return f"s3://indexes/r{secrets.token_hex(6)}/sample"


def _client(url: str) -> S3Store:
    return S3Store.from_url(url, client_options={"allow_http": True})


def _publish(capsys, url: str, root) -> dict:
    assert cli.main(["publish", url, "--path", str(root)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return json.loads(bytes(obstore.get(_client(url), "manifest.json").bytes()))


def _semantic(path, base_url: str) -> list:
    """Each query's semantic page, before shaping: chunk ranges and scores, the index's own answer."""
    resolved = settings.resolve(path=str(path), base_url=base_url)
    return [
        [
            (h.file_path, h.start_line, h.end_line, h.score)
            for h in engine.run(resolved, request.parse(queries=q, limit=30, mode="semantic")).hits
        ]
        for q in QUERIES
    ]


def _rows_here(cache) -> list:
    return sorted(p.name for p in cache.glob("published/*/*/*/.chunkhound/db/*.snapshot-*/vectors-*/matrix.npy*"))


def test_rows_are_read_by_range_then_fetched_whole_with_the_local_answers(
    capsys, store, sample_index, tmp_path, monkeypatch
):
    latest = _publish(capsys, store, sample_index.root)
    matrix = next(i for i in latest["items"] if i["key"].endswith("/matrix.npy"))
    assert any(i["key"] == matrix["key"] + ".blocks" for i in latest["items"])  # listed, size and sha256 checked
    local = _semantic(sample_index.root, sample_index.base_url)
    cache = tmp_path / "empty-machine"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    index.reset()
    assert _semantic(store, sample_index.base_url) == local
    assert _rows_here(cache) == ["matrix.npy.blocks"]  # the rows were read from the store, not fetched
    # A long-lived host (or the next search process) fetches them whole, verified, in the background.
    published.refresh_in_background()
    try:
        assert _semantic(store, sample_index.base_url) == local
        deadline = time.monotonic() + 60
        while "matrix.npy" not in _rows_here(cache) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _rows_here(cache) == ["matrix.npy", "matrix.npy.blocks"]
        assert onetool_code.status(path=store, format="json")["published"]["rows_in_store"] is False
        # From here no range is read: with the store gone, the rows still answer (from the mapped file).
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        assert _semantic(store, sample_index.base_url) == local
        index.reset()
        assert _semantic(store, sample_index.base_url) == local
    finally:
        published.reset()


def test_a_block_that_does_not_match_its_digest_is_refused(capsys, store, sample_index, tmp_path, monkeypatch):
    latest = _publish(capsys, store, sample_index.root)
    client = _client(store)
    key = next(i["key"] for i in latest["items"] if i["key"].endswith("/matrix.npy"))
    body = bytearray(bytes(obstore.get(client, key).bytes()))
    for at in range(rows.BLOCK // 2, len(body), rows.BLOCK):  # one byte of every block: whichever rows are read
        body[at] ^= 0x01
    obstore.put(client, key, bytes(body))
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    answer = onetool_code.search(query=QUERIES[0], path=store, base_url=sample_index.base_url, mode="semantic")
    assert answer.startswith("Error") and "does not match its block digests" in answer and "refused" in answer
    assert "AKID" not in answer and "weed-secret" not in answer
    # The lexical search, which reads no vector, answers.
    assert not onetool_code.search(query=QUERIES[0], path=store, mode="lexical").startswith("Error")


def test_a_store_gone_before_the_rows_are_fetched_is_a_clear_error(capsys, store, sample_index, tmp_path, monkeypatch):
    _publish(capsys, store, sample_index.root)
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))
    fetched = _semantic(store, sample_index.base_url)
    assert all(fetched)
    index.reset()  # a new process: nothing of the rows held in memory
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there: the store is down
    answer = onetool_code.search(query=QUERIES[0], path=store, base_url=sample_index.base_url, mode="semantic")
    assert answer.startswith("Error") and "cannot be reached" in answer and "search again" in answer
    assert "weed-secret" not in answer
    # The default search answers by words, and says why.
    found = onetool_code.search(query=QUERIES[0], path=store, base_url=sample_index.base_url, format="json")
    assert found["results"], found
    assert found["notice"].startswith("answered by words only (lexical): the vectors of this published version")


def test_a_version_published_without_block_digests_is_fetched_whole(capsys, store, sample_index, tmp_path, monkeypatch):
    """What a publisher before the digests wrote: its rows are fetched with the rest, as before."""
    latest = _publish(capsys, store, sample_index.root)
    latest["items"] = [i for i in latest["items"] if not i["key"].endswith(".blocks")]
    obstore.put(_client(store), "manifest.json", json.dumps(latest).encode())
    local = _semantic(sample_index.root, sample_index.base_url)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    index.reset()
    assert _semantic(store, sample_index.base_url) == local
    assert _rows_here(cache) == ["matrix.npy"]


def test_a_fetch_of_the_rows_cut_short_is_resumed_and_verified(capsys, store, sample_index, tmp_path, monkeypatch):
    latest = _publish(capsys, store, sample_index.root)
    item = next(i for i in latest["items"] if i["key"].endswith("/matrix.npy"))
    body = bytes(obstore.get(_client(store), item["key"]).bytes())
    cache = tmp_path / "cache"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    local = _semantic(sample_index.root, sample_index.base_url)
    assert _semantic(store, sample_index.base_url) == local
    # What a search process's exit left of the background fetch: a prefix cut inside a block, and the record of
    # what of it was on disk.
    (blocks,) = cache.glob("published/*/*/*/.chunkhound/db/*.snapshot-*/vectors-*/matrix.npy.blocks")
    blocks.with_name("matrix.npy.fetching").write_bytes(body[: len(body) // 2 + 7])
    blocks.with_name("matrix.npy.fetching.done").write_text(str(len(body) // 2 + 7))
    published.refresh_in_background()
    try:
        _semantic(store, sample_index.base_url)
        deadline = time.monotonic() + 60
        while not blocks.with_name("matrix.npy").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert blocks.with_name("matrix.npy").read_bytes() == body
        assert not blocks.with_name("matrix.npy.fetching").exists()
        assert not blocks.with_name("matrix.npy.fetching.done").exists()
    finally:
        published.reset()
    index.reset()
    assert _semantic(store, sample_index.base_url) == local


def test_rows_that_do_not_fit_the_disk_stay_in_the_store(capsys, store, sample_index, tmp_path, monkeypatch, spans):
    """A disk cannot be filled for real here without risk to the machine: its answer is replaced (the one mock)."""
    _publish(capsys, store, sample_index.root)
    local = _semantic(sample_index.root, sample_index.base_url)
    cache = tmp_path / "small-disk"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    index.reset()
    assert _semantic(store, sample_index.base_url) == local
    usage = shutil.disk_usage
    monkeypatch.setattr(rows.shutil, "disk_usage", lambda path: usage(path)._replace(free=0))
    published.refresh_in_background()
    try:
        for _ in range(3):
            assert _semantic(store, sample_index.base_url) == local
            time.sleep(0.2)
        assert "results" in onetool_code.search(
            query=QUERIES[0], path=store, base_url=sample_index.base_url, mode="semantic", format="json"
        )
    finally:
        published.reset()
    assert _rows_here(cache) == ["matrix.npy.blocks"]
    assert "float32 rows are read from the store by range" in onetool_code.status(path=store)
    assert onetool_code.status(path=store, format="json")["published"]["rows_in_store"] is True
    said = " ".join(r.getMessage() for r in spans)
    assert "stay in the store" in said and "do not fit the disk" in said, said


def test_an_edited_checkout_over_rows_left_in_the_store_searches_by_words_offline(
    capsys, store, project, tmp_path, monkeypatch
):
    """The checkout laid over a published version asks the rows of no chunk of its own from the store: with the
    store unreachable, a search by words still answers, the edit found."""
    _publish(capsys, store, project.root)
    cache = tmp_path / "offline-machine"
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(cache))
    index.reset()
    assert onetool_code.search(query="backoff_delays", path=str(project.root), db=store, mode="lexical")
    assert _rows_here(cache) == ["matrix.npy.blocks"]
    (project.root / "src/bookshelf/shelving.py").write_text("def weigh_parcels(parcels):\n    return len(parcels)\n")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    found = onetool_code.search(query="weigh_parcels", path=str(project.root), db=store, mode="lexical", format="json")
    assert found["results"][0]["file_path"] == "src/bookshelf/shelving.py", found
