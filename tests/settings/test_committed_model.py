"""The model an index is searched with when nothing names one: ChunkHound 6.1's rule (issue 26).

ChunkHound commits an index to one (provider, model, dims) in ``chunks.db.embedding.json``; with no record, the
vector set with the most vectors is the index's. A search that names no model uses that, so an index built with
a local model answers semantic search without the user repeating the model's name.
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SAMPLE, build_index

import onetool_code

MODEL = "local-e5"  # not the provider's default (text-embedding-3-small)


@pytest.fixture(scope="module")
def built(server, tmp_path_factory):
    """The sample project indexed with ``MODEL``, then its settings forgotten: only the index knows the model."""
    root = tmp_path_factory.mktemp("committed") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    config = root / ".chunkhound.json"
    config.write_text(json.dumps({"embedding": {"model": MODEL, "base_url": server.base_url}}))
    db = build_index(root, server.base_url)
    config.write_text(json.dumps({"embedding": {"base_url": server.base_url}}))
    return root, db


@pytest.fixture
def project(built, tmp_path):
    root, db = built
    copy = tmp_path / "project"
    shutil.copytree(root, copy)
    return copy, copy / db.relative_to(root)


def record(db):
    return db.with_name(db.name + ".embedding.json")


def semantic(root, **options):
    """The json answer's results; its error, when there is one, as the answer itself."""
    answer = onetool_code.search(query="retry with backoff", path=str(root), mode="semantic", format="json", **options)
    return answer.get("results", answer)


def models_asked(server, since):
    return [r.body["model"] for r in server.embedding_requests()[since:]]


def test_the_indexs_record_names_the_model_when_nothing_else_does(project, server):
    root, db = project
    assert json.loads(record(db).read_text())["model"] == MODEL
    before = len(server.embedding_requests())
    hits = semantic(root)
    assert isinstance(hits, list) and hits == semantic(root, model=MODEL), hits  # as if the user had named it
    assert models_asked(server, before) == [MODEL, MODEL]
    status = onetool_code.status(path=str(root), format="json")
    assert status["configured_model"] == f"openai/{MODEL}"
    assert status["configured_model_present"] is True
    assert status["configured_model_named_by"] == "the index's record chunks.db.embedding.json"
    text = onetool_code.status(path=str(root))
    assert f"Configured model: openai/{MODEL} (present; named by the index's record chunks.db.embedding.json)" in text


def test_without_a_record_the_largest_vector_set_is_the_indexs(project, server):
    root, db = project
    record(db).unlink()
    before = len(server.embedding_requests())
    assert semantic(root)
    assert models_asked(server, before) == [MODEL]
    status = onetool_code.status(path=str(root), format="json")
    assert (status["configured_model"], status["configured_model_named_by"]) == (
        f"openai/{MODEL}",
        "the index's largest vector set",
    )


@pytest.mark.parametrize(
    "damage",
    [
        "not json",
        json.dumps({"version": 2, "provider": "openai", "model": "x", "dims": 1536}),
        json.dumps({"version": 1, "provider": "ollama", "model": "x", "dims": 1536}),
        json.dumps({"version": 1, "provider": "openai", "model": "x", "dims": "1536"}),
        "fifo",
    ],
)
def test_a_record_that_is_not_chunkhounds_counts_as_none(project, server, damage):
    """The repository wrote it: what cannot be read as ChunkHound's record is left to the largest-set rule."""
    import os

    root, db = project
    record(db).unlink()
    if damage == "fifo":
        os.mkfifo(record(db))
    else:
        record(db).write_text(damage)
    before = len(server.embedding_requests())
    assert semantic(root)
    assert models_asked(server, before) == [MODEL]


def test_a_model_the_user_names_wins_over_the_index(project, server, monkeypatch):
    root, _ = project
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__MODEL", "text-embedding-3-small")
    answer = semantic(root)
    assert answer["error"].startswith(
        "The index holds no vectors for openai/text-embedding-3-small. It holds: openai/local-e5, 1536 dims"
    ), answer
    assert onetool_code.status(path=str(root), format="json")["configured_model_present"] is False


def test_vector_sets_are_matched_on_dims_too(project, server):
    """One model can be stored at several dims: the record's dims must match the set's, not only its name."""
    root, db = project
    record(db).write_text(json.dumps({"version": 1, "provider": "openai", "model": MODEL, "dims": 256}))
    answer = semantic(root)
    assert answer["error"].startswith(f"The index holds no vectors for openai/{MODEL} at 256 dims."), answer
    hybrid = onetool_code.search(query="retry with backoff", path=str(root), format="json")
    assert hybrid["results"] and "answered by words only" in hybrid["notice"], hybrid


def test_a_record_naming_another_provider_than_the_user_names_is_not_followed(project, server, monkeypatch):
    root, db = project
    record(db).write_text(json.dumps({"version": 1, "provider": "voyageai", "model": "voyage-3.5", "dims": 1024}))
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__PROVIDER", "openai")
    before = len(server.embedding_requests())
    assert semantic(root)  # the user's provider, and the largest set of it
    assert models_asked(server, before) == [MODEL]
