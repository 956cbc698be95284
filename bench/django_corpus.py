"""Django 5.1.4 (its source release: the framework, its tests and docs) indexed by the real ChunkHound 6.1.0,
with the dense 1536-dim test vectors of ``hybrid_speed.dense_server``: the big real repository of the live
refresh bench (``refresh.py``) and the scale relevance bench.

Why Django's source release: it is what a user clones (tests included, where most same-named code lives), and
ChunkHound cuts it into about 80,000 chunks, the size at which the issues were measured.

Run from the repository root (about 15 minutes the first time on 2 cores; prints the project root when done)::

    .venv-test/bin/python bench/django_corpus.py

The vectors are the test server's, not a real model's: rankings that depend on meaning are judged accordingly.
``--vectors code`` builds a second copy whose chunks a model of code embedded (nomic-embed-code's static token
vectors, ``bench/code_vectors.py``: 768 dims, about 3 minutes once), for ``relevance.py --vectors code``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# The dense test server answers from many threads, each with OpenBLAS's own pool: past its thread limit it crashes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import code_vectors  # noqa: E402
import hybrid_speed  # noqa: E402
from tooling.chunkhound_env import ensure_chunkhound  # noqa: E402

ARCHIVE = "Django-5.1.4.tar.gz"
SHA256 = "de450c09e91879fa5a307f696e57c851955c910a438a35e6b4c895e86bedc82a"
VERSION = 1  # bump when the recipe changes, so an old index is never trusted


def cache_dir() -> Path:
    return hybrid_speed.cache_dir().with_name("django")


def fetch(cache: Path) -> Path:
    """The pinned source release, through pip, its hash checked."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / ARCHIVE
    if not archive.exists():
        args = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", "."]
        subprocess.run([*args, "django==5.1.4"], cwd=downloads, check=True, capture_output=True)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{archive}: SHA-256 {digest}, pinned {SHA256}; delete it to fetch it again")
    return archive


def ensure(vectors: str = "test") -> Path:
    """The indexed project root (built if missing), its chunks embedded by the dense test server or (``code``)
    by ``code_vectors``."""
    cache = cache_dir()
    root = cache / (f"django-{VERSION}" if vectors == "test" else f"django-{vectors}-{VERSION}")
    marker = root.with_name(root.name + ".complete")
    if marker.exists():
        return root
    archive = fetch(cache)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) >= 2 and not parts[1].endswith(".egg-info"):
                member.name = str(Path(*parts[1:]))
                members.append(member)
        tar.extractall(root, members=members, filter="data")
    started = time.perf_counter()
    if vectors == "code":
        config = cache / "code-vectors.chunkhound.json"  # outside the project: nothing is written into it
        config.write_text(json.dumps({"embedding": code_vectors.CHUNKHOUND_EMBEDDING}) + "\n")
        with code_vectors.server() as url:
            args = ["--config", str(config)]
            ensure_chunkhound().index(root, url, code_vectors.MODEL, extra_args=args, timeout=6 * 3600)
    else:
        with hybrid_speed.dense_server() as server:
            ensure_chunkhound().index(root, server.base_url, timeout=6 * 3600)
    marker.write_text(f"{time.perf_counter() - started:.0f} s\n")
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", choices=("test", "code"), default="test", help="what embeds the chunks")
    print(ensure(parser.parse_args().vectors))
