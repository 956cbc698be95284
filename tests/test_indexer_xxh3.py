"""Our XXH3-64 against vectors made by the ``xxhash`` package (the one ChunkHound 6.1.0 uses for content_hash).

The vectors were computed with ``xxhash.xxh3_64(data).hexdigest()`` (xxhash 3.x, libxxhash 0.8) for
``data = bytes((i * 31 + 7) % 251 for i in range(n))``; the lengths hit every code path of the algorithm
(0, 1-3, 4-8, 9-16, 17-128, 129-240, long) and the 1 KiB block and 64-byte stripe boundaries.
"""

from __future__ import annotations

import pytest

from onetool_code.indexer.xxh3 import xxh3_64_hexdigest

VECTORS = {
    0: "2d06800538d394c2",
    1: "4c5cca45d0f4811f",
    2: "a7e250c97710ff27",
    3: "15f7093b173d005c",
    4: "dca012f95811b6b9",
    5: "b290cafc7b254345",
    8: "dec6a9a43575982e",
    9: "15e553b97e27735d",
    15: "66026768a0fe1a85",
    16: "a7683b861e585aa6",
    17: "637c1aa907698945",
    32: "fb0a38fb3af32306",
    33: "dbd8ff66fdf7b97e",
    64: "a1688ef0a48a39d4",
    65: "67dc5b5cae64c652",
    96: "d1a35000054a80d5",
    97: "d628cd723fed4570",
    127: "207564f9ca6034f8",
    128: "6d0f64c82ddaad27",
    129: "eaf3fc97c05f44f3",
    130: "8a4ba0eafeb35386",
    200: "f4b54cdc82f20685",
    239: "1e645342febb13c1",
    240: "22f28cbbfaf0447f",
    241: "07525dbc14902c7f",
    255: "3e64256196c9377b",
    256: "a49b06aa88ab05e1",
    1023: "fe4f1eaedb87b59b",
    1024: "e2898655db7bc9ee",
    1025: "134c652ba3d6fb9e",
    1087: "1016e0c0479524e1",
    1088: "33aefff80de9aa91",
    1089: "a30244a8fe55279a",
    2048: "63a78a59658d80f4",
    5000: "82c9e6e5b7476dc8",
    65536: "804c62b879e03431",
    100003: "e449a420f68908db",
    1048577: "984c81cf9b480bec",
}


def pattern(n: int) -> bytes:
    return bytes((i * 31 + 7) % 251 for i in range(n))


@pytest.mark.parametrize(("length", "digest"), sorted(VECTORS.items()))
def test_matches_xxhash(length, digest):
    assert xxh3_64_hexdigest(pattern(length)) == digest


def test_text_inputs():
    assert xxh3_64_hexdigest(b"hello world") == "d447b1ea40e6988b"
    assert xxh3_64_hexdigest('def f():\n    return "café"\n'.encode()) == "360ca9e94f2b3981"
