"""The embeddings request: one per call, bounded retries, and every failure a clear message (real HTTP)."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
import sys
import time
import types

import pytest
from conftest import read_compact

import onetool_code
from onetool_code import settings
from onetool_code.errors import EmbeddingError
from onetool_code.search import embeddings
from onetool_code.settings import OneToolHost


def search(project, base_url, **kwargs):
    """A semantic search: the mode that answers with the embeddings error (hybrid falls back instead)."""
    kwargs.setdefault("mode", "semantic")
    return onetool_code.search(query="retry backoff", path=str(project.root), base_url=base_url, **kwargs)


def count(server, route):
    return sum(1 for r in server.embedding_requests() if r.path.startswith(f"/{route}/"))


def test_rejected_key(sample_index, server):
    answer = search(sample_index, server.url("fail401"))
    assert answer == (
        f"Error: The embeddings API at {server.url('fail401')} rejected the API key (401). Check OPENAI_API_KEY (none)."
    )


def test_rate_limit_is_retried_twice_then_explained(sample_index, server):
    before = count(server, "fail429")
    answer = search(sample_index, server.url("fail429"))
    assert answer.startswith(f"Error: The embeddings API at {server.url('fail429')} is rate limiting requests (429)")
    assert count(server, "fail429") - before == 3


def test_server_error_is_retried_twice_then_explained(sample_index, server):
    before = count(server, "fail500")
    answer = search(sample_index, server.url("fail500"))
    assert answer == (
        f"Error: The embeddings API at {server.url('fail500')} answered HTTP 500: The server had an error."
    )
    assert count(server, "fail500") - before == 3


def test_a_passing_server_error_is_retried_and_the_search_succeeds(sample_index, server):
    answer = search(sample_index, server.url("flaky500"), limit=3)
    assert answer.startswith("Found ")


def test_timeout(sample_index, server):
    server.slow_seconds = 3.0
    host = OneToolHost(get_secret=lambda name: None, tool_config={"timeout": 1, "base_url": server.url("slow")})
    answer = onetool_code.search(query="retry", path=str(sample_index.root), host=host, mode="semantic")
    assert answer == f"Error: The embeddings API at {server.url('slow')} did not answer within 1 s (tried 1 time)."


def test_a_hung_server_costs_the_timeout_not_three_of_them(sample_index, server):
    """The timeout is the budget of the whole request, retries included."""
    server.slow_seconds = 20.0  # accepts the connection, answers far too late
    host = OneToolHost(get_secret=lambda name: None, tool_config={"timeout": 2, "base_url": server.url("slow")})
    started = time.perf_counter()
    answer = onetool_code.search(query="retry", path=str(sample_index.root), host=host, mode="semantic")
    elapsed = time.perf_counter() - started
    assert answer.startswith(f"Error: The embeddings API at {server.url('slow')} did not answer within 2 s")
    assert elapsed < 2 + 3
    server.slow_seconds = 3.0


def test_one_client_per_server_and_key(sample_index, server, monkeypatch):
    embeddings._clients.close_all()
    for _ in range(3):
        search(sample_index, server.base_url)
    assert len(embeddings._clients.slots()) == 1
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__API_KEY", "sk-another-key")
    search(sample_index, server.base_url)
    search(sample_index, server.url("flaky500"))
    assert len(embeddings._clients.slots()) == 3
    assert all("sk-another-key" not in str(slot) for slot in embeddings._clients.slots())


def test_unreachable_server(sample_index):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    answer = search(sample_index, f"http://127.0.0.1:{port}/v1")
    assert answer.startswith(f"Error: Cannot reach the embeddings API at http://127.0.0.1:{port}/v1")


NOT_FINITE = "The embeddings API at {url} sent vectors holding NaN or Infinity, or only zeros: its model is broken"
TOO_LARGE = "The embeddings API at {url} sent more than 4,194,304 bytes for 1 vector, more than vectors can take"
# The CLI in a process that reports its peak resident memory (KiB, Linux) on its last line of stderr.
PEAK = (
    "import resource, sys\n"
    "from onetool_code import cli\n"
    "code = cli.main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def searched_in_a_process(project, base_url):
    """(exit code, stdout, stderr's lines, peak resident KiB) of a CLI semantic search."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "search", "retry backoff", "--path", str(project.root), "--mode", "semantic",
         "--base-url", base_url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    *lines, peak = done.stderr.splitlines()
    return done.returncode, done.stdout, lines, int(peak)


def test_an_answer_is_read_up_to_a_bound_that_fits_the_request(sample_index, server):
    """A 200 MB answer was read whole, 1.4 GB resident, before it was found not to be an embeddings list: a
    query's is read up to 4 MiB, then refused, and the process holds no more than a search does."""
    code, out, _, baseline = searched_in_a_process(sample_index, server.base_url)  # makes the snapshot too
    assert code == 0 and out.startswith("Found ")
    url = server.url("huge")
    code, out, err, peak = searched_in_a_process(sample_index, url)
    assert (code, out, err) == (1, "", [f"Error: {TOO_LARGE.format(url=url)}. Check that it is an embeddings API."])
    assert peak < baseline + 32 * 1024, (peak, baseline)


def test_the_bound_holds_the_decoded_answer_not_the_bytes_on_the_wire(sample_index, server):
    """200 MB of gzipped spaces take a few hundred KB on the wire, under any bound: the decoded bytes count."""
    assert search(sample_index, server.url("gzip-bomb")) == (
        f"Error: {TOO_LARGE.format(url=server.url('gzip-bomb'))}. Check that it is an embeddings API."
    )


def test_a_repositorys_server_is_held_to_the_same_bound(project, server):
    (project.root / ".chunkhound.json").write_text(
        json.dumps({"embedding": {"provider": "openai", "base_url": server.url("huge")}})
    )
    answer = onetool_code.search(query="retry backoff", path=str(project.root), mode="semantic")
    assert answer == f"Error: {TOO_LARGE.format(url=server.url('huge'))}. Check that it is an embeddings API."
    assert embeddings.answer_limit(1) == 4 << 20 and embeddings.answer_limit(100) == 100 * embeddings.VECTOR_BYTES


@pytest.mark.parametrize("route", ["nan", "infinity", "zeros"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_vectors_that_are_not_finite_are_refused_not_ranked(sample_index, server, route, fmt):
    """A server answering NaN (or Infinity, or zeros: no cosine either) gave an answer in path order, every score
    ``(nan)``, and ``--format json`` printed a bare ``NaN``: such vectors are an error, like vectors of the wrong
    size."""
    url = server.url(route)
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", "search", "retry backoff", "--path", str(sample_index.root),
         "--mode", "semantic", "--base-url", url, "--format", fmt],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    message = NOT_FINITE.format(url=url) + '. Check the server; mode="lexical" searches without it.'
    assert done.stderr == "Error: " + message.replace('mode="lexical"', "--mode lexical") + "\n"  # flags there
    assert search(sample_index, url, format=fmt) == ({"error": message} if fmt == "json" else f"Error: {message}")


def test_response_that_is_not_embeddings(sample_index, server):
    answer = search(sample_index, server.url("garbage"))
    assert answer.startswith("Error: The embeddings API at ") and "not an embeddings list" in answer


@pytest.mark.parametrize("route", ["fail401", "fail429", "garbage"])
def test_failures_leave_the_index_untouched(sample_index, server, route):
    before = sample_index.digest()
    search(sample_index, server.url(route))
    assert sample_index.digest() == before


@pytest.mark.parametrize(
    ("route", "reason"),
    [
        ("fail401", "The embeddings API at {url} rejected the API key (401)"),
        ("fail500", "The embeddings API at {url} answered HTTP 500: The server had an error"),
        ("garbage", "The embeddings API at {url} sent a response that is not an embeddings list"),
        ("nan", NOT_FINITE),
        ("infinity", NOT_FINITE),
        ("zeros", NOT_FINITE),
        ("huge", TOO_LARGE),
    ],
)
def test_hybrid_answers_by_words_when_the_api_fails(sample_index, server, route, reason, spans):
    answer = search(sample_index, server.url(route), mode="hybrid", limit=3)
    lines = answer.splitlines()
    assert lines[0] == "Found 3 results for: retry backoff"
    assert lines[1] == f"Note: answered by words only (lexical): {reason.format(url=server.url(route))}"
    assert any(line.startswith("1. ") for line in lines[2:4])  # after the file's path line when grouped
    assert any("hybrid fell back to lexical" in n for n in json.loads(spans[-1].getMessage())["notes"])
    compact = read_compact(search(sample_index, server.url(route), mode="hybrid", limit=3, format="compact"))
    assert compact["notice"] == lines[1].removeprefix("Note: ") and compact["count"] == 3


def test_hybrid_answers_by_words_when_the_api_times_out(sample_index, server):
    host = OneToolHost(get_secret=lambda name: None, tool_config={"timeout": 1, "base_url": server.url("slow")})
    answer = onetool_code.search(query="retry backoff", path=str(sample_index.root), host=host, limit=2)
    assert answer.splitlines()[1] == (
        f"Note: answered by words only (lexical): The embeddings API at {server.url('slow')} did not answer "
        "within 1 s (tried 1 time)"
    )


@pytest.mark.parametrize(("provider", "client"), [("openai", "openai"), ("voyageai", "httpx")])
def test_the_client_is_imported_in_the_background_while_the_caller_goes_on(tmp_path, provider, client):
    """A fresh process (the command line) imports the provider's client on another thread, once."""
    script = f"""
import sys, threading
from onetool_code import settings
from onetool_code.search import embeddings
started = []
start = threading.Thread.start
threading.Thread.start = lambda thread: (started.append(thread), start(thread))[1]
assert {client!r} not in sys.modules
chosen = settings.resolve(path={str(tmp_path)!r}, provider={provider!r}, base_url="http://127.0.0.1:9/v1")
embeddings.warm_up(chosen)
(importer,) = started
assert importer.name == "onetool-code import"
importer.join(60)
assert {client!r} in sys.modules
embeddings.warm_up(chosen)  # imported: no second thread
assert started == [importer]
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


# -- A server that stalls (issue 24) --------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["trickle", "trickle-headers"])
@pytest.mark.parametrize("provider", ["openai", "voyageai"])
def test_a_trickling_server_is_cut_off_at_the_timeout(sample_index, server, route, provider, tmp_path):
    """Bytes that keep coming never reset the clock: the timeout bounds the whole request, retries included."""
    root = sample_index.root
    if provider == "voyageai":  # a project of its own: only its settings say voyageai (no index needed to embed)
        root = tmp_path
        (root / ".chunkhound.json").write_text(json.dumps({"embedding": {"provider": "voyageai"}}))
    resolved = settings.resolve(path=str(root), base_url=server.url(route))
    resolved = dataclasses.replace(resolved, timeout=2.0)
    started = time.perf_counter()
    with pytest.raises(
        EmbeddingError, match=rf"^The embeddings API at {re.escape(server.url(route))} did not answer within 2 s"
    ):
        embeddings.embed(["retry backoff"], resolved)
    assert time.perf_counter() - started < 2 + 1


def test_a_trickling_search_falls_back_to_words_within_its_bound(sample_index, server):
    host = OneToolHost(get_secret=lambda name: None, tool_config={"timeout": 2, "base_url": server.url("trickle")})
    started = time.perf_counter()
    answer = onetool_code.search(query="retry backoff", path=str(sample_index.root), host=host, limit=2)
    assert time.perf_counter() - started < 2 + 1.5
    assert answer.splitlines()[1] == (
        f"Note: answered by words only (lexical): The embeddings API at {server.url('trickle')} did not answer "
        "within 2 s (tried 1 time)"
    )


def test_a_trickling_reranker_shares_the_searchs_bound(project, server):
    """Embeddings and reranking together stay within the one timeout of a search."""
    (project.root / ".chunkhound.json").write_text(
        json.dumps(
            {
                "embedding": {
                    "base_url": server.base_url,
                    "rerank_url": server.url("trickle").removesuffix("/v1") + "/v1/rerank",
                }
            }
        )
    )
    host = OneToolHost(get_secret=lambda name: None, tool_config={"timeout": 2})
    started = time.perf_counter()
    answer = onetool_code.search(query="retry backoff", path=str(project.root), host=host, limit=2)
    assert time.perf_counter() - started < 2 + 1.5
    assert "Note: not reranked, the fused order stands: " in answer and "did not answer within" in answer


def test_a_refused_connection_is_not_retried(sample_index, monkeypatch):
    """Nothing listens there: asking again cannot help, and hybrid answers by words at once (no backoff waited)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waited = []
    # Only this module's clock: another test's server thread may still be sleeping between the bytes it trickles.
    monkeypatch.setattr(embeddings, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=waited.append))
    answer = search(sample_index, f"http://127.0.0.1:{port}/v1", mode="hybrid", limit=2)
    assert (
        f"Note: answered by words only (lexical): Cannot reach the embeddings API at http://127.0.0.1:{port}/v1"
        in answer
    )
    assert "Connection refused" in answer and waited == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1", "does not parse (Invalid IPv6 URL)"),
        ("http://[::1]:99999/v1", "does not parse (Port out of range 0-65535)"),
        ("http://127.0.0.1\x00.collector.example/v1", "holds a space or a control character"),
        ("localhost:8000/v1", "is not an http:// or https:// URL with a host"),
    ],
)
@pytest.mark.parametrize("place", ["argument", "environment", "project"])
def test_a_base_url_that_is_no_url_is_an_embeddings_failure(project, url, problem, place, monkeypatch, capsys):
    """Semantic says so in one line; hybrid answers by words with it as the note; the command line too."""
    base_url = None
    if place == "argument":
        base_url = url
        where = "the call's arguments"
    elif place == "environment":
        if "\x00" in url:
            pytest.skip("the environment cannot hold a NUL")
        monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", url)
        where = "the environment variable CHUNKHOUND_EMBEDDING__BASE_URL"
    else:
        (project.root / ".chunkhound.json").write_text(json.dumps({"embedding": {"base_url": url}}))
        where = "the project's .chunkhound.json"
    reason = f"embedding.base_url {url!r} (from {where}) {problem}"
    semantic = search(project, base_url)
    assert semantic == f"Error: {reason}."
    hybrid = search(project, base_url, mode="hybrid", limit=2)
    assert hybrid.splitlines()[1] == f"Note: answered by words only (lexical): {reason}"
    if "\x00" not in url:
        from onetool_code import cli

        flags = ["--base-url", url] if place == "argument" else []
        assert cli.main(["search", "retry backoff", "--path", str(project.root), "--mode", "semantic", *flags]) == 1
        assert capsys.readouterr().err == f"Error: {reason}.\n"


@pytest.mark.parametrize("url", ["http://[::1/rerank", "http://127.0.0.1\x00.collector.example/rerank"])
def test_a_rerank_url_that_is_no_url_costs_a_note(project, server, url):
    (project.root / ".chunkhound.json").write_text(
        json.dumps({"embedding": {"base_url": server.base_url, "rerank_url": url}})
    )
    answer = search(project, None, mode="hybrid", limit=2)
    assert answer.startswith("Found 2 results") and "Note: not reranked: rerank_url " in answer
    assert "\x00" not in answer


def test_a_stopped_server_is_known_in_a_millisecond_before_any_client_is_imported(server, monkeypatch):
    """A fresh process imports its HTTP client for half a second; one TCP connection says at once whether anything
    listens. Through a proxy the server is not dialled, so nothing is said."""
    from onetool_code.search import transport

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        stopped = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    deadline = time.monotonic() + 5
    assert transport.unreachable(stopped, deadline) == "Connection refused"
    assert transport.unreachable(server.base_url, deadline) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert transport.unreachable(stopped, deadline) is None
