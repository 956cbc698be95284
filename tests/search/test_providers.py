"""Every embedding setup ChunkHound 6.1.0 offers (issue 19): VoyageAI as its README recommends it, output
dimensions cut by the API or here, and the rerankers of ``embedding.rerank_*`` in each of their REST shapes.

Everything talks to the local test server (``openai_server.py``) over real HTTP: it speaks VoyageAI's embeddings
API and the Cohere, Voyage and TEI rerank shapes, and records every request with its Authorization header.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import conftest
import numpy as np
import pytest
from conftest import SAMPLE, Project, build_index
from openai_server import features, vector_for

import onetool_code
from onetool_code import settings
from onetool_code.errors import EmbeddingError, MissingKeyError, OneToolCodeError
from onetool_code.search import embeddings

QUERY = "retry with exponential backoff"


def configure(root: Path, **embedding: object) -> None:
    (root / ".chunkhound.json").write_text(json.dumps({"embedding": embedding}))


@pytest.fixture(scope="module")
def voyage_project(server, tmp_path_factory) -> Project:
    """The sample project configured as ChunkHound's README recommends, pointed at the local server, indexed."""
    root = tmp_path_factory.mktemp("voyage") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    configure(root, provider="voyageai", model="voyage-3.5", api_key="pa-project-key", base_url=server.base_url)
    return Project(root, build_index(root, None), server.base_url)


def search(root: Path, **options: object) -> dict:
    answer = onetool_code.search(query=QUERY, path=str(root), format="json", **options)
    assert "results" in answer, answer
    return answer


# -- VoyageAI embeddings ------------------------------------------------------------------------------------------


def test_voyage_requests_are_shaped_as_chunkhound_sends_them(voyage_project, server):
    before = len(server.requests)
    answer = search(voyage_project.root, mode="semantic")
    assert answer["results"]
    (sent,) = server.requests[before:]
    assert sent.path == "/v1/embeddings" and sent.authorization == "Bearer pa-project-key"
    assert sent.body == {
        "input": [QUERY],
        "model": "voyage-3.5",
        "input_type": "document",  # ChunkHound embeds a search query as a document too
        "truncation": True,
        "encoding_format": "base64",
    }


def test_a_voyage_index_holds_its_1024_dims_and_hybrid_needs_no_fallback(voyage_project):
    status = onetool_code.status(path=str(voyage_project.root), format="json")
    assert [(e["provider"], e["model"], e["dims"]) for e in status["embeddings"]] == [("voyageai", "voyage-3.5", 1024)]
    assert status["configured_model_present"] is True
    assert "notice" not in search(voyage_project.root)


def test_one_providers_key_never_stands_in_for_anothers(tmp_path, monkeypatch):
    configure(tmp_path, provider="voyageai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-only")
    resolved = settings.resolve(path=str(tmp_path))
    assert settings.api_key(resolved) == (None, "none")
    with pytest.raises(MissingKeyError, match="VOYAGE_API_KEY"):
        embeddings.embed(["x"], resolved)
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-user")
    assert settings.api_key(settings.resolve(path=str(tmp_path))) == ("pa-user", "VOYAGE_API_KEY")
    configure(tmp_path, provider="openai")
    assert settings.api_key(settings.resolve(path=str(tmp_path))) == ("sk-openai-only", "OPENAI_API_KEY")


def test_a_voyage_server_named_only_by_the_project_gets_no_user_key(tmp_path, monkeypatch, server):
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-user")
    configure(tmp_path, provider="voyageai", base_url=server.base_url)
    assert settings.api_key(settings.resolve(path=str(tmp_path))) == (None, "none")
    configure(tmp_path, provider="voyageai", base_url="https://api.voyageai.com/v1")  # its own API: the key goes
    assert settings.api_key(settings.resolve(path=str(tmp_path)))[0] == "pa-user"


@pytest.mark.parametrize(("truncation", "asked"), [(False, 256), (True, None)])
def test_output_dims_are_asked_of_the_api_or_cut_here(tmp_path, server, truncation, asked):
    configure(
        tmp_path, provider="voyageai", base_url=server.base_url, output_dims=256, client_side_truncation=truncation
    )
    before = len(server.requests)
    vectors = embeddings.embed(["parse the config file"], settings.resolve(path=str(tmp_path)))
    assert vectors.shape == (1, 256) and np.isclose(np.linalg.norm(vectors[0]), 1.0)
    assert server.requests[before].body.get("output_dimension") == asked
    if truncation:  # the model's full 1,024 dims, cut to the first 256 and scaled back to unit length
        full = embeddings.embed(["parse the config file"], settings.resolve(path=str(tmp_path), provider="voyageai"))
        cut = full[0, :256] / np.linalg.norm(full[0, :256])
        assert np.allclose(vectors[0], cut, atol=1e-7)


def test_openai_output_dims_go_as_its_dimensions_parameter(tmp_path, server):
    configure(tmp_path, base_url=server.base_url, output_dims=512)
    before = len(server.requests)
    assert embeddings.embed(["x y"], settings.resolve(path=str(tmp_path))).shape == (1, 512)
    assert server.requests[before].body["dimensions"] == 512


@pytest.mark.parametrize(
    ("route", "message"),
    [
        ("fail401", "rejected the API key (401). Check VOYAGE_API_KEY"),
        ("fail500", "answered HTTP 500"),
        ("fail429", "rate limiting requests (429), still after 2 retries"),
        ("garbage", "not an embeddings list"),
        ("nan", "sent vectors holding NaN or Infinity, or only zeros"),  # base64 float32 NaNs
        ("huge", "sent more than 4,194,304 bytes for 1 vector, more than vectors can take"),
    ],
)
def test_voyage_failures_are_named_and_hybrid_falls_back_to_words(voyage_project, server, route, message, monkeypatch):
    monkeypatch.setattr(embeddings, "BACKOFF_SECONDS", (0.01, 0.01))
    broken = settings.resolve(path=str(voyage_project.root), base_url=server.url(route))
    with pytest.raises(EmbeddingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        embeddings.embed([QUERY], broken)
    answer = search(voyage_project.root, base_url=server.url(route))
    assert answer["results"] and answer["notice"].startswith("answered by words only (lexical)")


# -- Queries typed for an asymmetric model -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def e5_project(server, tmp_path_factory) -> Project:
    """The sample indexed through an asymmetric model's server: our indexer, like ChunkHound, sends no
    ``input_type``, so every chunk is embedded as a passage."""
    root = tmp_path_factory.mktemp("e5") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    configure(root, base_url=server.url("e5"))
    return Project(root, build_index(root, None), server.url("e5"))


def _scores_by(db: Path, query_vector: np.ndarray) -> dict[tuple[str, int, int], float]:
    """Each chunk's cosine with ``query_vector``, from the vectors the index stores."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT f.path, c.start_line, c.end_line, e.embedding FROM chunks c JOIN files f ON f.id = c.file_id "
            "JOIN embeddings_1536 e ON e.chunk_id = c.id"
        ).fetchall()
    return {(path, start, end): float(np.dot(query_vector, np.asarray(vector))) for path, start, end, vector in rows}


@pytest.mark.parametrize("typed", [None, "query"])
def test_queries_are_embedded_as_the_user_types_them(e5_project, server, monkeypatch, typed):
    if typed:
        monkeypatch.setenv("ONETOOL_CODE_QUERY_INPUT_TYPE", typed)
    before = len(server.requests)
    answer = search(e5_project.root, mode="semantic", limit=5)
    (sent,) = server.requests[before:]
    assert sent.body.get("input_type") == typed  # unset: nothing, as ChunkHound sends a query
    expected = _scores_by(e5_project.db, vector_for(("query: " if typed else "passage: ") + QUERY))
    other = _scores_by(e5_project.db, vector_for(("passage: " if typed else "query: ") + QUERY))
    for hit in answer["results"]:  # a result may join neighbouring chunks: it scores as the best of them

        def best(scores: dict[tuple[str, int, int], float], hit: dict = hit) -> float:
            path, start, end = hit["file_path"], hit["start_line"], hit["end_line"]
            return max(v for (p, s, e), v in scores.items() if p == path and start <= s and e <= end)

        assert hit["score"] == pytest.approx(best(expected), abs=5e-4)  # shown to three places
        assert abs(hit["score"] - best(other)) > 0.01


def test_status_says_how_queries_are_typed(e5_project, monkeypatch):
    assert onetool_code.status(path=str(e5_project.root), format="json")["query_input_type"] is None
    monkeypatch.setenv("ONETOOL_CODE_QUERY_INPUT_TYPE", "query")
    assert onetool_code.status(path=str(e5_project.root), format="json")["query_input_type"] == "query"
    text = onetool_code.status(path=str(e5_project.root))
    assert "Configured model: openai/text-embedding-3-small (present; named by the index's record" in text
    assert "chunks.db.embedding.json; queries sent as input_type query)\n" in text


def test_a_voyage_query_typed_as_a_query_goes_so(voyage_project, server, monkeypatch):
    monkeypatch.setenv("ONETOOL_CODE_QUERY_INPUT_TYPE", "query")
    before = len(server.requests)
    search(voyage_project.root, mode="semantic")
    (sent,) = server.requests[before:]
    assert sent.body["input_type"] == "query"


def test_only_the_user_types_queries(tmp_path, monkeypatch):
    configure(tmp_path, query_input_type="query")  # a repository's files never choose how queries are sent
    assert settings.resolve(path=str(tmp_path)).query_input_type is None
    host = settings.OneToolHost(get_secret=lambda _: None, tool_config={"query_input_type": "search_query"})
    monkeypatch.setenv("ONETOOL_CODE_QUERY_INPUT_TYPE", "query")
    assert settings.resolve(path=str(tmp_path), host=host).query_input_type == "search_query"  # OneTool's first
    assert settings.resolve(path=str(tmp_path)).query_input_type == "query"
    for bad in ("query: ", "a b", "x" * 40):
        monkeypatch.setenv("ONETOOL_CODE_QUERY_INPUT_TYPE", bad)
        with pytest.raises(OneToolCodeError, match="ONETOOL_CODE_QUERY_INPUT_TYPE must be a word such as query"):
            settings.resolve(path=str(tmp_path))


# -- Rerankers ----------------------------------------------------------------------------------------------------


def rerank_project(project: Project, server, **rerank: object) -> Path:
    configure(project.root, base_url=server.base_url, **rerank)
    return project.root


@pytest.mark.parametrize(
    ("fmt", "model", "sent_keys", "limit_key"),
    [
        ("cohere", "rerank-v3.5", {"model", "query", "documents", "top_n"}, "top_n"),
        ("voyage", "rerank-2.5", {"model", "query", "documents", "top_k"}, "top_k"),
        ("tei", None, {"query", "texts"}, None),
        ("auto", "rerank-v3.5", {"model", "query", "documents", "top_n"}, "top_n"),
        ("auto", None, {"query", "texts"}, None),
    ],
)
def test_each_rerank_format_reorders_the_fused_top(project, server, fmt, model, sent_keys, limit_key):
    root = rerank_project(
        project,
        server,
        rerank_url=f"{server.base_url}/rerank",
        rerank_format=fmt,
        **({"rerank_model": model} if model else {}),
    )
    fused = conftest.ranked(root, None, QUERY, mode="hybrid", limit=30)  # reranked: the configured default
    before = len(server.rerank_requests())
    reranked = search(root, limit=10, content="never")
    (sent,) = server.rerank_requests()[before:]
    assert set(sent.body) == sent_keys
    documents = sent.body.get("documents", sent.body.get("texts"))
    if limit_key:
        assert sent.body[limit_key] == len(documents) == 30
    assert "notice" not in reranked
    # The fused top 30, in the server's order, each scored by it (the share of the query's features it holds).
    wanted = set(features(QUERY))
    expected = sorted(
        ((len(wanted & set(features(h.code))) / len(wanted), h.key) for h in fused.hits), key=lambda e: -e[0]
    )
    assert [(h.score, h.key) for h in fused.hits] == expected
    plain = conftest.ranked(root, None, QUERY, mode="hybrid", limit=30, rerank=False)
    assert {h.key for h in plain.hits} == {h.key for h in fused.hits} and plain.hits != fused.hits


def test_a_batch_reranks_each_querys_fused_list(project, server):
    root = rerank_project(project, server, rerank_url=f"{server.base_url}/rerank", rerank_format="tei")
    before = len(server.rerank_requests())
    answer = onetool_code.search_batch(queries=[QUERY, "parse configuration file"], path=str(root), format="json")
    assert answer["results"] and "notice" not in answer
    assert [r.body["query"] for r in server.rerank_requests()[before:]] == [QUERY, "parse configuration file"]


def test_a_failing_reranker_costs_a_note_not_an_error(project, server):
    root = rerank_project(project, server, rerank_url=server.url("fail500") + "/rerank", rerank_format="tei")
    answer = search(root)
    assert answer["results"] and answer["notice"].startswith("not reranked, the fused order stands:")
    assert "HTTP 500" in answer["notice"]


def test_a_reranker_scoring_nan_costs_a_note_and_no_score_is_nan(project, server):
    root = rerank_project(project, server, rerank_url=server.url("nan") + "/rerank", rerank_format="tei")
    answer = search(root)
    assert answer["notice"] == (
        f"not reranked, the fused order stands: {server.url('nan')}/rerank sent an answer that is not a ranking"
    )
    assert answer["results"] and all(isinstance(r["score"], float) for r in answer["results"])


def test_a_reranker_answering_too_much_is_read_up_to_its_bound(project, server):
    root = rerank_project(project, server, rerank_url=server.url("huge") + "/rerank", rerank_format="tei")
    assert search(root)["notice"] == (
        f"not reranked, the fused order stands: {server.url('huge')}/rerank sent more than 4,194,304 bytes, more "
        "than a ranking of 30 takes"
    )


def test_rerank_false_sends_nothing_and_true_without_a_reranker_says_so(project, server):
    root = rerank_project(project, server, rerank_url=f"{server.base_url}/rerank", rerank_format="tei")
    before = len(server.rerank_requests())
    search(root, rerank=False)
    assert len(server.rerank_requests()) == before
    configure(root, base_url=server.base_url)
    assert onetool_code.search(query=QUERY, path=str(root), rerank=True).startswith("Error: no reranker is configured")
    assert onetool_code.search(query=QUERY, path=str(root), rerank="maybe").startswith("Error: rerank must be")


def test_voyage_reranks_through_its_own_api_unless_a_server_is_named(tmp_path, server):
    configure(tmp_path, provider="voyageai")
    own = settings.resolve(path=str(tmp_path)).reranker
    assert own is not None and (own.format, own.model, own.url) == (
        "voyage",
        "rerank-2.5",
        "https://api.voyageai.com/v1/rerank",
    )
    configure(tmp_path, provider="voyageai", base_url=server.base_url)
    assert settings.resolve(path=str(tmp_path)).reranker is None  # as ChunkHound: no SDK rerank on a custom server
    configure(tmp_path, rerank_url="rerank", rerank_format="cohere")  # relative, no base_url; cohere needs a model
    assert settings.resolve(path=str(tmp_path)).reranker.problem == "a relative rerank_url needs base_url"


def test_status_shows_the_reranker(project, server):
    root = rerank_project(project, server, rerank_url="rerank", rerank_format="cohere", rerank_model="rerank-v3.5")
    text = onetool_code.status(path=str(root))
    assert f"Reranker: cohere rerank-v3.5 at {server.base_url}/rerank" in text
    assert onetool_code.status(path=str(root), format="json")["reranker"].startswith("cohere rerank-v3.5")


def test_a_reranker_named_only_by_the_project_gets_no_user_key(project, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-secret")
    root = rerank_project(project, server, rerank_url=f"{server.base_url}/rerank", rerank_format="tei")
    before = len(server.requests)
    search(root)
    assert all("sk-user-secret" not in (r.authorization or "") for r in server.requests[before:])


def test_azure_is_refused_before_any_request(project, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user")
    configure(project.root, azure_endpoint="https://example.openai.azure.com", api_key="azure-key")
    before = len(server.requests)
    answer = search(project.root)
    assert answer["results"] and "Azure OpenAI (embedding.azure_endpoint) is not supported" in answer["notice"]
    assert len(server.requests) == before
