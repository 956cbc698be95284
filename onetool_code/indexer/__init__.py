"""The optional indexer: writes ChunkHound-compatible indexes (same DDL, paths, vocabularies, sidecars).

For tests, fixtures and small projects that have no ChunkHound. ``build_index`` is the whole public surface;
tree-sitter, DuckDB and the embeddings client are imported by the modules that use them.

    (the walk and the chunker live in ``project/``: the search chunks the checkout's changed files with them)
    writer.py      DuckDB snapshot, one-transaction write, sidecars
    build.py       orchestration, summary, span, progress
"""

from onetool_code.indexer.build import IndexSummary, build_index

__all__ = ["IndexSummary", "build_index"]
