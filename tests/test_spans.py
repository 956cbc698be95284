"""Logging: one span record per call through standard logging; FAILED spans say why; never stdout, never keys."""

from __future__ import annotations

import json

import onetool_code


def records(spans):
    return [json.loads(r.getMessage()) for r in spans]


def test_one_success_record_per_search(spans, sample_index, capsys):
    onetool_code.search(query="retry backoff", path=str(sample_index.root), mode="lexical", exclude="test")
    (record,) = records(spans)
    assert record["span"] == "code.search" and record["status"] == "SUCCESS"
    assert record["query"] == "retry backoff" and record["project"] == str(sample_index.root)
    assert record["resultCount"] > 0 and record["limit"] == 10 and record["filters"] == "exclude=test"
    assert isinstance(record["duration"], float)
    assert capsys.readouterr() == ("", "")


def test_batch_and_status_spans(spans, sample_index):
    onetool_code.search_batch(queries="a cache|rate limit", path=str(sample_index.root), mode="lexical")
    onetool_code.status(path=str(sample_index.root))
    batch, status = records(spans)
    assert (batch["span"], batch["queryCount"], status["span"]) == ("code.search_batch", 2, "code.status")
    assert batch["resultCount"] > 0 and status["files"] > 0


def test_failed_span_carries_the_error(spans, tmp_path):
    onetool_code.search(query="x", path=str(tmp_path))
    (record,) = records(spans)
    assert record["status"] == "FAILED" and record["errorType"] == "NotIndexedError"
    assert record["errorMessage"].startswith("Project not indexed.")
    assert "traceback" not in record


def test_long_values_are_cut(spans, tmp_path):
    onetool_code.search(query="q" * 500, path=str(tmp_path))
    assert len(records(spans)[0]["query"]) == 100


def test_the_key_never_reaches_logs_or_output(spans, sample_index, monkeypatch, capsys, server):
    key = "sk-test-very-secret-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    answers = [
        onetool_code.search(query="retry with backoff", path=str(sample_index.root), base_url=server.base_url),
        onetool_code.search(query="retry with backoff", path=str(sample_index.root), base_url=server.url("fail401")),
        onetool_code.status(path=str(sample_index.root)),
    ]
    assert "rejected the API key (401)" in answers[1]
    seen = "\n".join(map(str, answers)) + "".join(r.getMessage() for r in spans) + "".join(capsys.readouterr())
    assert key not in seen
    assert server.embedding_requests()[-1].authorization == f"Bearer {key}"  # it was really sent, to the server


def test_unexpected_exceptions_are_answered_and_logged_with_traceback(spans, sample_index, mocker):
    # A bug cannot be produced for real on purpose: a mock stands in for one inside the engine.
    mocker.patch("onetool_code.api.rank", side_effect=ZeroDivisionError("boom"))
    answer = onetool_code.search(query="x", path=str(sample_index.root), mode="lexical")
    assert answer == "Error: internal error (ZeroDivisionError): boom"
    (record,) = records(spans)
    assert record["errorType"] == "ZeroDivisionError" and "Traceback" in record["traceback"]
    spans.clear()  # the autouse check would (rightly) fail on this deliberate traceback
