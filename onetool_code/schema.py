"""Everything about ChunkHound's DuckDB file: table and column names, DDL, vocabularies and the SQL we run.

This is the only module that knows the schema (measured on ChunkHound 6.1.0). ``index/database.py`` runs these
statements read-only; the indexer creates tables from the same DDL. Values always travel as parameters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from onetool_code.names import PART_SUFFIX

DB_FILE_NAME = "chunks.db"
ROOT_SIDECAR_SUFFIX = ".root.json"
EMBEDDING_SIDECAR_SUFFIX = ".embedding.json"
# DuckDB writes uncommitted changes to ``<file>.wal``; a WAL left beside the file changes what a reader sees.
WAL_SUFFIX = ".wal"
# Every name ChunkHound 6.1.0 gives the file (and its WAL, renamed with it) while it compacts, when there may be
# no ``chunks.db``: any of them, recently written, makes a missing file a compaction (``index/database.py``).
# - Its native writer (``chunkhound-native``, the default since 6.0): the names are strings in the installed
#   ``chunkhound_native/chunkhound_native.abi3.so``, the steps in its ``src/db/duckdb_backend/compaction.rs``
#   ``run_attach_copy_compaction``: ``chunks.db.swap_intent`` written ("pre-swap"), ``chunks.db`` renamed to
#   ``chunks.db.old`` ("phase1"), the rebuild written to ``chunks.db.compact`` and renamed to ``chunks.db``
#   ("phase2"), then the intent and ``.old`` removed (``chunks.db.export_tmp``, a folder it only removes after a
#   failed compaction, is no swap).
# - Its Python provider (``providers/database/duckdb_provider.py`` ``_executor_compact_database``, PR #339, and
#   ``duckdb/connection_manager.py`` ``_recover_interrupted_compaction``): ``chunks.db`` renamed to
#   ``chunks.db.compact_backup``, the rebuild written to ``chunks.db.compact_new`` and renamed into place.
COMPACTION_SUFFIXES = (
    ".swap_intent", ".old", ".old.wal", ".compact", ".compact.wal",
    ".compact_backup", ".compact_backup.wal", ".compact_new", ".compact_new.wal",
)  # fmt: skip

EMBEDDING_TABLE = re.compile(r"^embeddings_(\d+)$")

REQUIRED_COLUMNS: dict[str, frozenset[str]] = {
    "files": frozenset({"id", "path", "language"}),
    "chunks": frozenset({"id", "file_id", "chunk_type", "symbol", "code", "start_line", "end_line"}),
}
EMBEDDING_COLUMNS = frozenset({"chunk_id", "provider", "model", "embedding"})

CHUNK_TYPES: tuple[str, ...] = (
    "function", "method", "class", "interface", "struct", "enum", "namespace", "constructor", "property",
    "field", "type_alias", "closure", "trait", "script", "object", "companion_object", "data_class",
    "extension_function", "program", "function_block", "action", "variable", "type", "macro", "comment",
    "docstring", "header_1", "header_2", "header_3", "header_4", "header_5", "header_6", "paragraph",
    "code_block", "table", "key_value", "array", "import", "embedded_sql", "block", "unknown",
)  # fmt: skip

LANGUAGES: tuple[str, ...] = (
    "python", "java", "csharp", "typescript", "javascript", "tsx", "jsx", "groovy", "kotlin", "go",
    "haskell", "rust", "zig", "bash", "makefile", "c", "cpp", "metal", "matlab", "hcl", "objc", "php", "vue",
    "svelte", "sql", "swift", "dart", "elixir", "lua", "powershell", "twincat", "html", "css", "scss", "jinja",
    "markdown", "json", "yaml", "toml", "text", "pdf", "unknown", "git_diff",
)  # fmt: skip

LANGUAGE_ALIASES: dict[str, str] = {
    "py": "python", "python3": "python", "ts": "typescript", "js": "javascript", "node": "javascript",
    "rs": "rust", "golang": "go", "c#": "csharp", "cs": "csharp", "c++": "cpp", "cxx": "cpp", "kt": "kotlin",
    "md": "markdown", "sh": "bash", "shell": "bash", "yml": "yaml", "objective-c": "objc",
    "make": "makefile", "txt": "text", "hs": "haskell", "ps1": "powershell", "tf": "hcl",
}  # fmt: skip

# ChunkHound's DDL, statement by statement, as it creates a fresh index.
SCHEMA_DDL: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
    "applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, description TEXT)",
    "CREATE SEQUENCE IF NOT EXISTS files_id_seq",
    "CREATE SEQUENCE IF NOT EXISTS chunks_id_seq",
    "CREATE SEQUENCE IF NOT EXISTS embeddings_id_seq",
    """CREATE TABLE IF NOT EXISTS files (
        id INTEGER PRIMARY KEY DEFAULT nextval('files_id_seq'),
        path TEXT UNIQUE NOT NULL,
        name TEXT NOT NULL,
        extension TEXT,
        size INTEGER,
        modified_time TIMESTAMP,
        content_hash TEXT,
        language TEXT,
        skip_reason TEXT,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
    )""",
    """CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY DEFAULT nextval('chunks_id_seq'),
        file_id INTEGER REFERENCES files(id),
        chunk_type TEXT NOT NULL,
        symbol TEXT,
        code TEXT NOT NULL,
        start_line INTEGER,
        end_line INTEGER,
        start_byte INTEGER,
        end_byte INTEGER,
        language TEXT,
        metadata TEXT,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
    )""",
    "CREATE INDEX IF NOT EXISTS idx_files_path ON files(path)",
    "CREATE INDEX IF NOT EXISTS idx_files_language ON files(language)",
    "CREATE INDEX IF NOT EXISTS idx_chunks_file_id ON chunks(file_id)",
    "CREATE INDEX IF NOT EXISTS idx_chunks_type ON chunks(chunk_type)",
    "CREATE INDEX IF NOT EXISTS idx_chunks_symbol ON chunks(symbol)",
)
SCHEMA_VERSION_ROW = (1, "Initial schema")


def embedding_table(dims: int) -> str:
    return f"embeddings_{int(dims)}"


def embedding_ddl(dims: int) -> tuple[str, ...]:
    """DDL of one ``embeddings_<dims>`` table and its plain indexes (the HNSW one needs vss: see the indexer)."""
    t = embedding_table(dims)
    return (
        f"""CREATE TABLE IF NOT EXISTS {t} (
        id INTEGER PRIMARY KEY DEFAULT nextval('embeddings_id_seq'),
        chunk_id INTEGER NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        embedding FLOAT[{int(dims)}],
        dims INTEGER NOT NULL DEFAULT {int(dims)},
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
    )""",
        f"CREATE INDEX IF NOT EXISTS idx_{t}_chunk_id ON {t}(chunk_id)",
        f"CREATE INDEX IF NOT EXISTS idx_{int(dims)}_provider_model ON {t}(provider, model)",
        f"CREATE UNIQUE INDEX IF NOT EXISTS idx_{int(dims)}_chunk_provider_model_unique "
        f"ON {t}(chunk_id, provider, model)",
    )


def hnsw_ddl(dims: int) -> str:
    t = embedding_table(dims)
    return f"CREATE INDEX IF NOT EXISTS idx_hnsw_{int(dims)} ON {t} USING HNSW (embedding) WITH (metric = 'cosine')"


def embedding_dims(table_names: Iterable[str]) -> list[int]:
    """The vector sizes of the ``embeddings_<digits>`` tables among ``table_names``, ascending."""
    return sorted(int(m.group(1)) for name in table_names if (m := EMBEDDING_TABLE.match(name)))


@dataclass(frozen=True)
class Filters:
    """Validated filters; each tuple empty when not given. Path needles are lowercase."""

    languages: tuple[str, ...] = ()
    chunk_types: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def keeps_file(self, language: str | None, lower_path: str) -> bool:
        """The file-level filters (language; include and exclude on the lowercased path), as ``filter_sql`` words
        them, for a file already read."""
        if self.languages and language not in self.languages:
            return False
        if self.include and not any(needle in lower_path for needle in self.include):
            return False
        return not any(needle in lower_path for needle in self.exclude)


def filter_sql(filters: Filters) -> tuple[str, list[object]]:
    """``AND ...`` conditions over ``f`` (files) and ``c`` (chunks), and their parameters.

    Path filters use ``contains(lower(path), ?)``: a plain substring test, so ``%``, ``_`` and quotes in a
    pattern are literal characters with no escaping to get wrong.
    """
    parts: list[str] = []
    params: list[object] = []
    if filters.languages:
        parts.append(f"f.language IN ({', '.join('?' for _ in filters.languages)})")
        params.extend(filters.languages)
    if filters.chunk_types:
        parts.append(f"c.chunk_type IN ({', '.join('?' for _ in filters.chunk_types)})")
        params.extend(filters.chunk_types)
    if filters.include:
        parts.append("(" + " OR ".join("contains(lower(f.path), ?)" for _ in filters.include) + ")")
        params.extend(filters.include)
    for needle in filters.exclude:
        parts.append("NOT contains(lower(f.path), ?)")
        params.append(needle)
    return "".join(f" AND {p}" for p in parts), params


HIT_COLUMNS = "c.id, c.symbol, c.code, c.chunk_type, c.start_line, c.end_line, f.path, f.language"
# ChunkHound leaves ties unordered; we break them by path, then start line, so pages are stable.
TIE_BREAK = "f.path, c.start_line, c.id"


def semantic_sql(dims: int, filters: Filters) -> tuple[str, list[object]]:
    """ChunkHound's exact semantic query (brute-force cosine, no vss) plus our filters and tie-breakers.

    Parameters, in order: the query vector, provider, model, the filter values, then LIMIT and OFFSET.
    """
    where, params = filter_sql(filters)
    t = embedding_table(dims)
    sql = (
        f"SELECT {HIT_COLUMNS}, array_cosine_similarity(e.embedding, ?::FLOAT[{int(dims)}]) AS similarity "
        f"FROM {t} e JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id "
        f"WHERE e.provider = ? AND e.model = ?{where} "
        f"ORDER BY similarity DESC, {TIE_BREAK} LIMIT ? OFFSET ?"
    )
    return sql, params


def regex_sql(filters: Filters) -> tuple[str, list[object]]:
    """ChunkHound's regex search (``regexp_matches`` over the chunk's code, in path and line order) plus our filters.

    Parameters, in order: the pattern, the filter values, then LIMIT.
    """
    where, params = filter_sql(filters)
    sql = (
        f"SELECT {HIT_COLUMNS}, 1.0 AS similarity FROM chunks c JOIN files f ON c.file_id = f.id "
        f"WHERE regexp_matches(c.code, ?){where} ORDER BY {TIE_BREAK} LIMIT ?"
    )
    return sql, params


def defining_sql(filters: Filters) -> tuple[str, list[object]]:
    """Chunks that define one of some lowercase names, in path and line order: named so, their ``_partN``
    suffixes removed, or holding a line that defines one (``names.definition_lines``, which RE2 reads too).

    Parameters, in order: the names (a list), the definition-line pattern, the filter values, then LIMIT.
    """
    where, params = filter_sql(filters)
    sql = (
        f"SELECT {HIT_COLUMNS}, 1.0 AS similarity FROM chunks c JOIN files f ON c.file_id = f.id "
        f"WHERE (lower(regexp_replace(c.symbol, '{PART_SUFFIX}$', '')) IN (SELECT unnest(?::VARCHAR[])) "
        f"OR regexp_matches(c.code, ?)){where} ORDER BY {TIE_BREAK} LIMIT ?"
    )
    return sql, params


# The chunks of one file holding one line, the smallest first (parameters: the path, the line twice): the place
# ``related`` starts from; ``rows.ChunkRows.holding`` answers the same from a snapshot.
CHUNKS_HOLDING_SQL = (
    "SELECT c.id FROM chunks c JOIN files f ON c.file_id = f.id WHERE f.path = ? AND c.start_line <= ? "
    "AND c.end_line >= ? ORDER BY c.end_line - c.start_line, c.start_line, c.id"
)
FILE_INDEXED_SQL = "SELECT count(*) FROM files WHERE path = ?"


def vector_of_sql(dims: int) -> str:
    """One chunk's stored vector of one provider/model (parameters: the chunk id, provider, model)."""
    return f"SELECT embedding FROM {embedding_table(dims)} WHERE chunk_id = ? AND provider = ? AND model = ?"


# The files rows of some paths (parameter: the paths), for deciding whether a hit's file changed since indexing.
# ``*`` because indexes written before ChunkHound added ``content_hash`` (or with no ``size``) lack columns;
# index.with_file_states reads what is there by name.
FILE_STATES_SQL = "SELECT * FROM files WHERE path IN (SELECT unnest(?::TEXT[]))"
FILE_SIZE_COLUMN = "size"
FILE_MTIME_COLUMN = "modified_time"
FILE_HASH_COLUMN = "content_hash"
MODELS_SQL = "SELECT provider, model, count(*) FROM {table} GROUP BY provider, model ORDER BY provider, model"
LANGUAGE_COUNTS_SQL = (
    "SELECT coalesce(f.language, 'unknown'), count(DISTINCT f.id), count(c.id) "
    "FROM files f LEFT JOIN chunks c ON c.file_id = f.id GROUP BY 1 ORDER BY 3 DESC, 1"
)
FILE_COUNT_SQL = "SELECT count(*) FROM files"
CHUNK_COUNT_SQL = "SELECT count(*) FROM chunks"
TABLE_COLUMNS_SQL = "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' AND database_name = current_database()"
# The ids as one list parameter, joined: at 50,000 chunks ``c.id IN (?, ?, ...)`` took 7.7 ms (DuckDB read every
# chunk's code before filtering), this join 1.5 ms (the small side's ids filter the scan).
CHUNKS_BY_ID_SQL = (
    f"SELECT {HIT_COLUMNS} FROM (SELECT unnest(?::INTEGER[]) AS wanted) w "
    "JOIN chunks c ON c.id = w.wanted JOIN files f ON c.file_id = f.id"
)

# A snapshot (index/snapshot.py) reads the whole index once per state of the file. Files come in ``ORDER BY path`` so
# that a file's position is DuckDB's own collation order for the tie-break; ``lower(path)`` is DuckDB's, as the
# filters use; with each file's chunk count, so that the snapshot also knows LANGUAGE_COUNTS_SQL's answer.
FILES_IN_PATH_ORDER_SQL = (
    "SELECT f.id, f.path, lower(f.path), f.language, count(c.id) FROM files f LEFT JOIN chunks c ON c.file_id = f.id "
    "GROUP BY f.id, f.path, f.language ORDER BY f.path"
)
FILE_ROWS_SQL = "SELECT * FROM files"  # read by name, as FILE_STATES_SQL
# Every chunk a search could show: the join keeps out chunks whose file row is gone, as every search query does.
CHUNK_ROWS_SQL = (
    "SELECT c.id, c.file_id, c.chunk_type, c.symbol, c.code, c.start_line, c.end_line "
    "FROM chunks c JOIN files f ON c.file_id = f.id ORDER BY c.id"
)
# A first read takes them a window of ids at a time (parameters: the window's first id and the one after it), so
# that neither DuckDB nor we hold a million chunks' code at once; the extent first (rows, lowest id, highest id).
CHUNK_EXTENT_SQL = "SELECT count(*), min(c.id), max(c.id) FROM chunks c JOIN files f ON c.file_id = f.id"
CHUNK_ROWS_WINDOW_SQL = (
    "SELECT c.id, c.file_id, c.chunk_type, c.symbol, c.code, c.start_line, c.end_line "
    "FROM chunks c JOIN files f ON c.file_id = f.id WHERE c.id >= ? AND c.id < ? ORDER BY c.id"
)
# A first read's bounds on DuckDB itself: its buffer pool (80% of the machine's memory by default) would otherwise
# keep every block it read, and it never spills to a folder of its own beside the index file.
FIRST_READ_LIMITS_SQL = ("SET memory_limit = '512MB'", "SET threads = 2", "SET temp_directory = ''")
# A refresh (index/snapshot.py) reads what changed since the last snapshot: every chunk's id, file and a digest of what a
# search shows of it (33 ms at 80,000 chunks; an UPDATE in place changes it), then the rows of the chunks it does
# not hold (parameter: their ids, joined as CHUNKS_BY_ID_SQL joins them).
CHUNK_IDS_SQL = (
    "SELECT c.id, c.file_id, hash(c.code, c.symbol, c.chunk_type, c.start_line, c.end_line) AS digest "
    "FROM chunks c JOIN files f ON c.file_id = f.id ORDER BY c.id"
)
CHUNK_ROWS_BY_ID_SQL = (
    "SELECT c.id, c.file_id, c.chunk_type, c.symbol, c.code, c.start_line, c.end_line "
    "FROM (SELECT unnest(?::BIGINT[]) AS wanted) w JOIN chunks c ON c.id = w.wanted "
    "JOIN files f ON c.file_id = f.id ORDER BY c.id"
)
# Every vector's id, its place in the table and its chunk, without the vector itself. DuckDB moves a row whose
# vector is updated (an UPDATE, or ChunkHound's upsert of a re-embedded chunk) to a new rowid, so a vector whose
# id and rowid are unchanged is unchanged; one that moved is compared by its digest (a compaction moves them all:
# 0.8 s at 80,000 vectors, once).
EMBEDDING_IDS_SQL = (
    "SELECT e.id, e.rowid AS place, e.chunk_id FROM {table} e JOIN chunks c ON e.chunk_id = c.id "
    "JOIN files f ON c.file_id = f.id WHERE e.provider = ? AND e.model = ?"
)
# The stored vectors of some embeddings.id values: a refresh digests those of moved rows (``unit_rows.digests``).
EMBEDDINGS_BY_ID_SQL = (
    "SELECT e.id, e.embedding FROM (SELECT unnest(?::BIGINT[]) AS wanted) w JOIN {table} e ON e.id = w.wanted"
)
# A provider/model's vectors, read in windows of rowids so that only one window of per-row arrays exists beside
# the growing matrix. The joins are the semantic query's own, so the cache holds exactly the rows ChunkHound's
# SQL would rank; the vectors themselves are read by a second query of the same window without them (joined to
# the chunks, DuckDB carries each 6 KB array through the hash join: 0.67 s a window of 16,384 against 0.29).
CACHE_VECTOR_EXTENT_SQL = (
    "SELECT count(*), coalesce(min(e.rowid), 0), coalesce(max(e.rowid), -1) "
    "FROM {table} e JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id "
    "WHERE e.provider = ? AND e.model = ?"
)
CACHE_VECTOR_ROWS_SQL = (
    "SELECT e.id, e.rowid AS place, e.chunk_id, c.file_id, c.chunk_type, c.start_line "
    "FROM {table} e JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id "
    "WHERE e.provider = ? AND e.model = ? AND e.rowid >= ? AND e.rowid < ?"
)
CACHE_VECTOR_VALUES_SQL = (
    "SELECT e.rowid AS place, e.embedding FROM {table} e "
    "WHERE e.provider = ? AND e.model = ? AND e.rowid >= ? AND e.rowid < ?"
)
# The vectors a refresh adds (parameter: their embeddings.id), with what the two above read of them.
CACHE_VECTORS_BY_ID_SQL = (
    "SELECT e.id, e.rowid AS place, e.chunk_id, c.file_id, c.chunk_type, c.start_line, "
    "e.embedding FROM (SELECT unnest(?::BIGINT[]) AS wanted) w JOIN {table} e ON e.id = w.wanted "
    "JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id ORDER BY e.id"
)


# -- Writing: the optional indexer (onetool_code.indexer) -----------------------------------------------------

# duckdb 2.x writes files that ChunkHound's duckdb 1.5 cannot open unless told otherwise; v0.10.2 is the storage
# version ChunkHound's own files carry (header version 64), readable by duckdb 0.10 through 2.x.
STORAGE_COMPATIBILITY = "v0.10.2"
VSS_INSTALLED_SQL = "SELECT installed FROM duckdb_extensions() WHERE extension_name = 'vss'"
VSS_LOAD_SQL = "LOAD vss"  # never INSTALL: that downloads
NO_PROGRESS_BAR_SQL = "SET enable_progress_bar = false"
HNSW_PERSISTENCE_SQL = "SET hnsw_enable_experimental_persistence = true"
HNSW_INDEXES_SQL = "SELECT table_name, index_name FROM duckdb_indexes() WHERE upper(sql) LIKE '%USING HNSW%'"
SCHEMA_VERSION_SQL = (
    "INSERT INTO schema_version (version, description) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM schema_version)"
)
# modified_time goes through to_timestamp(epoch) as ChunkHound writes it, and is read back the same way round.
STORED_FILES_SQL = "SELECT id, path, size, epoch(modified_time::TIMESTAMPTZ), content_hash FROM files"
NEXT_IDS_SQL = "SELECT nextval('{sequence}') FROM range(?)"
FILES_ID_SEQUENCE = "files_id_seq"
CHUNKS_ID_SEQUENCE = "chunks_id_seq"
# Bulk inserts read a registered view of numpy columns ({view}); each column is named like its target.
INSERT_FILES_SQL = (
    "INSERT INTO files (id, path, name, extension, size, modified_time, content_hash, language) "
    "SELECT id, path, name, extension, size, to_timestamp(mtime), content_hash, language FROM {view}"
)
TOUCH_FILE_SQL = (
    "UPDATE files SET size = ?, modified_time = to_timestamp(?), updated_at = CURRENT_TIMESTAMP WHERE id = ?"
)
# language is indexed, and DuckDB turns an update of an indexed column into delete + insert, which its
# foreign-key check rejects while the file's old chunks are deleted in the same transaction (measured on
# duckdb 2.0): so the language is only set where it differs (rows ChunkHound stored as skipped, language NULL).
UPDATE_FILE_SQL = (
    "UPDATE files SET size = ?, modified_time = to_timestamp(?), content_hash = ?, skip_reason = NULL, "
    "updated_at = CURRENT_TIMESTAMP WHERE id = ?"
)
UPDATE_FILE_LANGUAGE_SQL = "UPDATE files SET language = ? WHERE id = ? AND language IS DISTINCT FROM ?"
INSERT_CHUNKS_SQL = (
    "INSERT INTO chunks (id, file_id, chunk_type, symbol, code, start_line, end_line, start_byte, end_byte, "
    "language) SELECT id, file_id, chunk_type, symbol, code, start_line, end_line, start_byte, end_byte, "
    "language FROM {view}"
)
DELETE_CHUNKS_SQL = "DELETE FROM chunks WHERE file_id IN (SELECT unnest(?::INTEGER[]))"
# Deleting a file row in the transaction that deleted its chunks trips DuckDB's foreign-key check (measured on
# duckdb 2.0), so file rows go in a second transaction.
DELETE_FILES_SQL = "DELETE FROM files WHERE id IN (SELECT unnest(?::INTEGER[]))"


def drop_index_sql(name: str) -> str:
    """Drop an index by name (an HNSW index, which plain DuckDB can drop but not update)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"not an index name: {name!r}")
    return f"DROP INDEX IF EXISTS {name}"


def delete_embeddings_sql(dims: int) -> str:
    """Delete the vectors of the chunks of some files (parameter: the file ids)."""
    return (
        f"DELETE FROM {embedding_table(dims)} WHERE chunk_id IN "
        "(SELECT id FROM chunks WHERE file_id IN (SELECT unnest(?::INTEGER[])))"
    )


def insert_embeddings_sql(dims: int, view: str) -> str:
    """Insert vectors from a view with a ``chunk_id`` column and one float column per dimension (``c0``...).

    Built with ``array_value`` from columns because passing vectors as Python lists costs ~3 ms each.
    Parameters: provider, model.
    """
    columns = ", ".join(f"c{i}" for i in range(int(dims)))
    return (
        f"INSERT INTO {embedding_table(dims)} (chunk_id, provider, model, embedding, dims) "
        f"SELECT chunk_id, ?, ?, array_value({columns})::FLOAT[{int(dims)}], {int(dims)} FROM {view}"
    )


def unembedded_chunks_sql(dims_list: Sequence[int]) -> tuple[str, int]:
    """Chunks with no vector of a provider/model in any ``embeddings_<dims>`` table: (id, file_id, code).

    Returns the SQL and how many (provider, model) parameter pairs it takes.
    """
    missing = "".join(
        f" AND NOT EXISTS (SELECT 1 FROM {embedding_table(d)} e WHERE e.chunk_id = c.id "
        "AND e.provider = ? AND e.model = ?)"
        for d in dims_list
    )
    return f"SELECT c.id, c.file_id, c.code FROM chunks c WHERE TRUE{missing} ORDER BY c.id", len(dims_list)
