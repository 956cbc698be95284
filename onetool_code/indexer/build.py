"""One index build: walk, decide what changed, chunk, embed, write in one transaction, summarise.

The order is chosen for safety: everything slow or fallible (reading files, chunking, the embeddings API) happens
before the index is opened for writing, so a failure or a kill leaves the previous index as it was, and the
write lock that shuts ChunkHound and readers out is held only for the short write itself.

Change detection is ChunkHound's: a file whose size and modification time match the index (within 10 ms) is
not read; otherwise its xxh3-64 hash decides, and a file whose content is unchanged only gets its size and
mtime refreshed. So a second run over an unchanged project opens the index read-only and writes nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from onetool_code import advice
from onetool_code.errors import BadInputError, MissingKeyError
from onetool_code.indexer import writer
from onetool_code.progress import Progress
from onetool_code.project.chunker import chunk_file
from onetool_code.project.walk import MAX_FILE_SIZE, SourceFile, read_file, walk
from onetool_code.search.embeddings import embed, missing_key
from onetool_code.settings import Settings
from onetool_code.spans import span

# ChunkHound's tolerance when comparing stored and current mtimes (indexing.mtime_epsilon_seconds).
MTIME_EPSILON = 0.01
# Texts per embeddings request: well under OpenAI's 2,048 inputs and 300k tokens (chunks stay under ~6k tokens,
# most under 500).
EMBED_BATCH = 100


@dataclass(frozen=True)
class IndexSummary:
    """What one build did. Files: ``seen`` = ``indexed`` (new or changed) + ``unchanged`` + ``skipped``."""

    project_root: Path
    db_path: Path
    files_seen: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    files_skipped: int
    skipped_reasons: tuple[tuple[str, int], ...]
    chunks_written: int
    chunks_total: int
    embeddings_written: int
    provider: str | None
    model: str | None
    dims: int | None
    hnsw: bool
    seconds: float

    @property
    def files_total(self) -> int:
        """Files in the index after the build."""
        return self.files_indexed + self.files_unchanged

    def describe(self) -> str:
        """One line for a person: counts, vectors, where the index is."""
        skipped = f"{self.files_skipped:,} skipped"
        if self.skipped_reasons:
            skipped += " (" + ", ".join(f"{count:,} {reason}" for reason, count in self.skipped_reasons) + ")"
        vectors = f"{self.embeddings_written:,} embeddings written"
        if self.dims is not None:
            vectors += f" ({self.provider}/{self.model}, {self.dims} dims"
            vectors += ", HNSW index)" if self.hnsw else ", no HNSW index: vss extension not installed)"
        return (
            f"Indexed {self.files_total:,} files into {self.db_path} ({self.files_indexed:,} new or changed, "
            f"{self.files_unchanged:,} unchanged, {self.files_removed:,} removed, {skipped}); "
            f"{self.chunks_written:,} chunks written, {self.chunks_total:,} in the index; {vectors}; "
            f"{self.seconds:.1f} s"
        )


def build_index(
    settings: Settings,
    *,
    embeddings: bool = True,
    progress: bool | None = None,
    max_file_size: int = MAX_FILE_SIZE,
    batch_size: int = EMBED_BATCH,
    drop_hnsw: bool = False,
) -> IndexSummary:
    """Build or update the ChunkHound-compatible index of ``settings.project_root`` at ``settings.db_path``.

    Args:
        settings: the project root, index path, and embedding provider/model/base_url/key.
        embeddings: False stores chunks only (lexical search works; semantic search needs vectors).
        progress: a progress bar on stderr; None shows it only when stderr is a terminal.
        max_file_size: files larger than this many bytes are skipped (ChunkHound's default: 10 MiB).
        batch_size: texts per embeddings request.
        drop_hnsw: when the index has an HNSW index (ChunkHound makes one) and the vss extension is not
            installed, drop that index instead of refusing to update (searches are exact without it, and
            ChunkHound re-creates it when it next opens the file).

    Returns:
        The counts of what was done (``describe()`` for one line).

    Raises:
        BadInputError: the project path is missing or not a directory.
        IndexLockedError: ChunkHound (or a reader) holds the index right now.
        IndexUnreadableError: the index path is not a ChunkHound index.
        OneToolCodeError: the index belongs to another project, or has an HNSW index that cannot be updated here.
        MissingKeyError, EmbeddingError: the embeddings could not be computed (nothing was written).
    """
    root = settings.project_root
    with span("code.index.build", path=str(root)) as current:
        bar = Progress(progress)
        try:
            summary = _Build(settings, embeddings, bar, max_file_size, batch_size, drop_hnsw).run()
        finally:
            bar.close()
        current.add(fileCount=summary.files_total, chunkCount=summary.chunks_total)
    return summary


class _Build:
    def __init__(
        self, settings: Settings, embeddings: bool, bar: Progress, max_file_size: int, batch: int, drop_hnsw: bool
    ) -> None:
        self.settings = settings
        self.root = settings.project_root
        db_path = settings.db_path
        self.db_path = db_path if db_path.is_absolute() else self.root / db_path
        self.embeddings = embeddings
        self.bar = bar
        self.max_file_size = max_file_size
        self.batch = max(1, batch)
        self.drop_hnsw = drop_hnsw
        self.started = time.perf_counter()
        self.skipped: Counter[str] = Counter()

    def run(self) -> IndexSummary:
        if not self.root.exists():
            raise BadInputError(f"Project path does not exist: {self.root}")
        if not self.root.is_dir():
            raise BadInputError(f"Project path is not a directory: {self.root}")
        settings = self.settings
        writer.check_root(self.root, self.db_path)
        snapshot = writer.read_snapshot(
            self.root, self.db_path, provider=settings.provider, model=settings.model, embeddings=self.embeddings
        )
        found = walk(self.root, exclude=self._own_files(), max_file_size=self.max_file_size)
        self.skipped.update(found.skipped)
        plan, unchanged = self._plan(found.files, snapshot)
        kept = self._kept_without_vectors(plan, snapshot)
        vss = False
        drop: list[str] = []
        if not plan.is_empty() or kept or not snapshot.exists:
            # Before the embeddings are paid for, and before any write: can this index be written at all?
            vss = writer.vss_available()
            writer.check_writable(self.root, self.db_path, snapshot, vss, self.drop_hnsw)
            drop = [] if vss else [index_name for _, index_name in snapshot.hnsw_indexes]
        dims = self._embed(plan, kept)
        chunks_written = len(plan.new_chunks())
        if plan.is_empty() and snapshot.exists:
            chunk_total, hnsw = snapshot.chunk_count, bool(snapshot.hnsw_indexes)
        else:
            self.bar.start("writing", 1)
            result = writer.write(
                self.db_path, plan, provider=settings.provider, model=settings.model, vss=vss, drop=drop
            )
            self.bar.advance()
            chunk_total, hnsw = result.chunk_total, result.hnsw
        if dims is None and self.embeddings:
            dims = snapshot.model_dims
        writer.write_sidecars(self.root, self.db_path, (settings.provider, settings.model, dims) if dims else None)
        written = sum(len(v) for v in (plan.new_vectors, plan.old_vectors) if v is not None)
        return IndexSummary(
            project_root=self.root,
            db_path=self.db_path,
            files_seen=len(plan.added) + len(plan.changed) + unchanged + sum(self.skipped.values()),
            files_indexed=len(plan.added) + len(plan.changed),
            files_unchanged=unchanged,
            files_removed=len(plan.removed),
            files_skipped=sum(self.skipped.values()),
            skipped_reasons=tuple(sorted(self.skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
            chunks_written=chunks_written,
            chunks_total=chunk_total,
            embeddings_written=written,
            provider=settings.provider if dims else None,
            model=settings.model if dims else None,
            dims=dims,
            hnsw=hnsw and dims is not None,
            seconds=round(time.perf_counter() - self.started, 3),
        )

    def _own_files(self) -> frozenset[Path]:
        """The index file and what lives beside it: never index those (a ``db`` may sit inside the project)."""
        db = self.db_path
        return frozenset({db, db.with_name(db.name + ".wal"), writer.root_sidecar(db), writer.embedding_sidecar(db)})

    def _plan(self, files: list[SourceFile], snapshot: writer.Snapshot) -> tuple[writer.Plan, int]:
        """What to add, re-chunk, refresh and remove; plus the number of unchanged files."""
        plan = writer.Plan()
        unchanged = 0
        present: set[str] = set()
        self.bar.start("chunking", len(files))
        for source in files:
            stored = snapshot.files.get(source.rel)
            if stored is not None and stored.size == source.size and _same_mtime(stored.mtime, source.mtime):
                present.add(source.rel)
                unchanged += 1
                self.bar.advance()
                continue
            data = read_file(source)
            if isinstance(data, str):
                self.skipped[data] += 1
                self.bar.advance()
                continue
            present.add(source.rel)
            digest = xxhash.xxh3_64_hexdigest(data)  # ChunkHound's content_hash
            if stored is not None and stored.content_hash == digest:
                plan.touched.append((stored.id, source.size, source.mtime))
                unchanged += 1
            else:
                chunks = tuple(chunk_file(data, source.language))
                content = writer.FileContent(source.rel, source.size, source.mtime, digest, source.language, chunks)
                if stored is None:
                    plan.added.append(content)
                else:
                    plan.changed.append((stored.id, content))
            self.bar.advance()
        plan.removed = sorted(f.id for rel, f in snapshot.files.items() if rel not in present)
        return plan, unchanged

    def _kept_without_vectors(self, plan: writer.Plan, snapshot: writer.Snapshot) -> list[tuple[int, str]]:
        """(chunk id, code) of chunks that stay and have no vector of the configured model yet (an index built
        without embeddings, or with another model)."""
        if not self.embeddings:
            return []
        rewritten = set(plan.removed) | {file_id for file_id, _ in plan.changed}
        return [(chunk_id, code) for chunk_id, file_id, code in snapshot.unembedded if file_id not in rewritten]

    def _embed(self, plan: writer.Plan, kept: list[tuple[int, str]]) -> int | None:
        """Vectors for the new chunks and the ``kept`` ones; their size, or None when none were made."""
        if not self.embeddings:
            return None
        new_texts = [chunk.code for chunk in plan.new_chunks()]
        texts = new_texts + [code for _, code in kept]
        if not texts:
            return None
        self.bar.start("embedding", len(texts))
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch):
            batch = texts[start : start + self.batch]
            try:
                parts.append(embed(batch, self.settings, batch_size=self.batch))
            except MissingKeyError:  # a search's advice (words need no key) is the indexer's flag here
                instead = f"an index without them, enough to search by words, needs none: {advice.index_command(self.root, embeddings=False)}"
                raise MissingKeyError(missing_key(self.settings, instead)) from None
            self.bar.advance(len(batch))
        vectors = np.vstack(parts)
        plan.new_vectors = vectors[: len(new_texts)]
        plan.old_chunk_ids = [chunk_id for chunk_id, _ in kept]
        plan.old_vectors = vectors[len(new_texts) :]
        return int(vectors.shape[1])


def _same_mtime(stored: float | None, current: float) -> bool:
    return stored is not None and abs(stored - current) <= MTIME_EPSILON
