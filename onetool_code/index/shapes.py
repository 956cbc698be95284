"""Whether a snapshot's arrays describe the same rows, checked as it is loaded (``snapshot.load``).

Each of a snapshot's files is checked against its size as written, and a published version's against its
manifest's size and sha256; neither says that the arrays agree with one another. A folder whose arrays disagree
(written by a bug, or by a publisher whose manifest is true to its bytes but not to its counts) would fail its
searches midway with numpy's IndexError or ValueError, or answer wrongly; here it is refused whole, and the
message names the array that disagrees and the one it disagrees with. Only shapes and a few values are read:
every array is mapped, and a load reads none of its rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from onetool_code.index import quantised, vector_cache
from onetool_code.index.rows import ChunkRows
from onetool_code.index.vector_cache import VectorCache

# A vector set's arrays of one entry per vector (``vector_cache.ARRAYS`` less the lists of rows and the ids that
# count them); the codes first: float32 rows left in a published version's store are given their shape
# (``spill.matrix``).
_LISTS = ("chunk_ids", "nan_rows", "null_rows", "broken_rows")
_PER_VECTOR = ("codes", *(name for name in vector_cache.ARRAYS if name not in (*_LISTS, "codes")))


class Disagreement(ValueError):
    """Two arrays of one snapshot count different rows (or a vector set another width than it declares)."""


def same_rows(count: int, counted: str, arrays: dict[str, Any], widths: dict[str, int] | None = None) -> None:
    """Each array (named by its file in the snapshot's folder) holds ``count`` rows, as ``counted`` does: of one
    value each, or of ``widths[name]`` values."""
    for name, array in arrays.items():
        wanted = (count,) if widths is None or name not in widths else (count, widths[name])
        if tuple(array.shape) != wanted:
            raise Disagreement(f"{name} is shaped {tuple(array.shape)}, not {wanted}: {counted} has {count:,} rows")


def chunk_rows(chunks: ChunkRows, folder: str) -> int:
    """Every per-chunk array of a ``rows/`` folder as long as its chunk ids, and each text's ends as far as its
    bytes go; the rows' count."""
    count = int(chunks.chunk_ids.shape[0])
    texts = {name: getattr(chunks, name).parts[0] for name in ("symbols", "code")}
    arrays = {
        f"{folder}/{name}.npy": getattr(chunks, name) for name in ("start_lines", "end_lines", "order", "name_keys")
    }
    arrays[f"{folder}/file_codes.npy"] = chunks.attributes.file_codes
    arrays[f"{folder}/type_codes.npy"] = chunks.attributes.type_codes
    arrays |= {f"{folder}/{name}_ends.npy": ends for name, (_, ends) in texts.items()}
    same_rows(count, f"{folder}/chunk_ids.npy", arrays)
    for name, (blob, ends) in texts.items():
        if ends.shape[0] and int(ends[-1]) != blob.shape[0]:
            raise Disagreement(
                f"{folder}/{name}.npy holds {blob.shape[0]:,} bytes, not {int(ends[-1]):,} as its ends say"
            )
    return count


def vectors(cache: VectorCache, folder: str, dims: int) -> None:
    """Every per-vector array of a ``vectors-<i>/`` folder as long as its chunk ids, as wide as the snapshot
    declares the set (``dims``), and its NaN, NULL and broken rows among them."""
    if cache.embedding_set.dims != dims:
        raise Disagreement(
            f"{folder}/vectors.json declares {str(cache.embedding_set.dims)[:20]} dims, not {dims} as snapshot.json "
            "says"
        )
    count = int(cache.chunk_ids.shape[0])
    widths = {f"{folder}/{name}.npy": dims for name in ("matrix", "codes")}
    widths[f"{folder}/signs.npy"] = quantised.sign_bytes(dims)
    arrays = {f"{folder}/{name}.npy": getattr(cache, name) for name in _PER_VECTOR}
    arrays[f"{folder}/file_codes.npy"] = cache.attributes.file_codes
    arrays[f"{folder}/type_codes.npy"] = cache.attributes.type_codes
    same_rows(count, f"{folder}/chunk_ids.npy", arrays, widths)
    for name in ("nan_rows", "null_rows", "broken_rows"):
        held = getattr(cache, name)
        if held.ndim != 1 or (held.size and not 0 <= int(held.min()) <= int(held.max()) < count):
            raise Disagreement(f"{folder}/{name}.npy names rows that {folder}/chunk_ids.npy ({count:,} rows) lacks")


def lexical(folder: Path, count: int) -> None:
    """The lexical index's documents, one per chunk row (its document lengths and bm25s' count of documents), and
    bm25s' postings (a compressed sparse column matrix) as long as their column ends say."""
    same_rows(count, "rows/chunk_ids.npy", {"lexical/lengths.npy": np.load(folder / "lengths.npy", mmap_mode="r")})
    params = folder / "params.index.json"  # bm25s' own record (none for a snapshot without chunks)
    if not params.exists():
        return
    documents = json.loads(params.read_text(encoding="utf-8"))["num_docs"]
    if documents != count:
        raise Disagreement(
            f"lexical/params.index.json counts {str(documents)[:20]} documents, not {count:,} as rows/chunk_ids.npy "
            "says"
        )
    ends = np.load(folder / "indptr.csc.index.npy", mmap_mode="r")
    postings = int(ends[-1]) if ends.ndim == 1 and ends.size else -1
    if postings < 0 or int(ends[0]) != 0:
        raise Disagreement("lexical/indptr.csc.index.npy is no list of column ends from 0")
    arrays = {
        f"lexical/{name}.csc.index.npy": np.load(folder / f"{name}.csc.index.npy", mmap_mode="r")
        for name in ("data", "indices")
    }
    same_rows(postings, "lexical/indptr.csc.index.npy", arrays)
