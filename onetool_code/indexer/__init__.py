"""The optional indexer: writes ChunkHound-compatible indexes (same DDL, paths, vocabularies, sidecars).

For tests, fixtures and small projects that have no ChunkHound. ``build_index`` is the whole public surface;
tree-sitter, DuckDB and the embeddings client are imported by the modules that use them.

    walk.py        files to index: ignore rules, languages, sizes, binary/generated checks
    ignore.py      .gitignore rules per directory (pathspec)
    languages.py   file name -> ChunkHound language name
    chunker.py     bytes -> chunks (syntax.py: per-language node tables; markdown.py, text.py: no grammar)
    chunks.py      the chunk record and ChunkHound's size budget (``_partN`` splitting)
    writer.py      DuckDB snapshot, one-transaction write, sidecars
    build.py       orchestration, summary, span, progress
"""

from onetool_code.indexer.build import IndexSummary, build_index

__all__ = ["IndexSummary", "build_index"]
