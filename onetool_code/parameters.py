"""Every parameter of the tools, described once (name, type, default, range, doc), and when an agent should call us.

The library's checks (``request.py``, ``settings``), the CLI's flags and the MCP server's input schemas are
made from these records. The pack's signatures and docstrings are written out in ``pack.py``, because OneTool
reads them from that file, and ``tests/test_parameters.py`` holds them (and the library's signatures) to these
records. Standard library only: the pack's light import must stay light.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Parameter:
    """One parameter as every entry point shows it.

    ``low``/``high`` bound an integer's value, a text's length in characters, or how many ``queries``.
    ``configurable``: the default is a setting that OneTool's ``tools.code`` may change, so signatures say
    None ("the configured default") and ``default`` is the value when nothing is configured.
    """

    name: str
    type: (
        str  # "text", "integer", "queries" (|-separated text or a list of texts), "paths" (a text or a list), "switch"
    )
    doc: str  # one line: the pack's Args entry, the CLI's help, the MCP schema's description
    default: Any = None
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    required: bool = False
    configurable: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def signature_default(self) -> Any:
        """The default a function signature shows (None stands for the configured default)."""
        return None if self.configurable else self.default


QUERY = Parameter(
    "query", "text", "What you are looking for, in words or identifiers (at most 2,000 characters).",
    low=1, high=2000, required=True,
)  # fmt: skip
QUERIES = Parameter(
    "queries", "queries", 'Up to 20 queries, |-separated ("auth logic|token refresh") or a list.',
    low=1, high=20, required=True,
)  # fmt: skip
PATH = Parameter(
    "path", "text", "Project root (default: OT_CWD, else the current directory; ~ and relative paths work)."
)
PATHS = Parameter(
    "path", "paths", "Project root, or a list of project roots searched as one workspace, each hit named by its "
    "repository (default: OT_CWD, else the current directory; ~ and relative paths work).",
)  # fmt: skip
DB = Parameter(
    "db", "text", "Index file or directory, relative to the project (default: ChunkHound's .chunkhound/db/chunks.db)."
)
LIMIT = Parameter(
    "limit", "integer", "Number of hits, 1-100 (default 10).",
    default=10, low=1, high=100, configurable=True,
)  # fmt: skip
OFFSET = Parameter(
    "offset", "integer", "Skip this many hits, 0-100,000: the next page (the answer names the next offset).",
    default=0, low=0, high=100_000,
)  # fmt: skip
LANGUAGE = Parameter(
    "language", "text", "Only these languages, |-separated (python|typescript|go; aliases like py, ts, rs work)."
)
CHUNK_TYPE = Parameter(
    "chunk_type", "text", "Only these chunk types, |-separated (function|method|class|interface|struct|comment|...)."
)
INCLUDE = Parameter(
    "include", "text", "Keep only paths containing one of these |-separated substrings (case-insensitive)."
)
EXCLUDE = Parameter(
    "exclude", "text", 'Drop paths containing any of these |-separated substrings (exclude="test|mock|fixture").'
)
EXPAND = Parameter(
    "expand", "integer", "Lines of context, 0-200, before and after each hit, read from the file; implies code.",
    low=0, high=200,
)  # fmt: skip
MODE = Parameter(
    "mode", "text",
    '"hybrid" (the default: meaning and words fused, the defining code first; falls back to words alone when it '
    'cannot embed), "semantic" (ChunkHound\'s own ranking), "lexical" (words and identifiers; needs no API key) '
    'or "regex" (query is a regular expression over the code).',
    default="hybrid", choices=("hybrid", "semantic", "lexical", "regex"),
)  # fmt: skip
RERANK = Parameter(
    "rerank", "switch", "Rerank the fused top with the reranker ChunkHound is configured with (default: when "
    "one is configured); false keeps the fused order.",
)  # fmt: skip
CONTENT = Parameter(
    "content", "text", '"auto" (code for 1-3 hits), "always" or "never".',
    default="auto", choices=("auto", "always", "never"),
)  # fmt: skip
FORMAT = Parameter(
    "format", "text", '"text" (the default), "json" (a dict of results with full field names) or "compact" '
    "(never bigger than text: a JSON line, hits as a file and its results as rows [start, end, what, score, "
    "preview lines?, {details}?], then those preview and code lines as they are, counted in the rows).",
    default="text", choices=("text", "json", "compact"),
)  # fmt: skip
MAX_BYTES = Parameter(
    "max_bytes", "integer", "Response budget in bytes, 500-1,000,000 (default 5,000).",
    default=5000, low=500, high=1_000_000, configurable=True,
)  # fmt: skip

# The user's settings: library arguments and command-line/server flags, never a tool call's. An agent that could
# pick base_url per call could send the user's API key to any server it names.
PROVIDER = Parameter("provider", "text", "Embedding provider recorded in the index (default: openai).")
MODEL = Parameter("model", "text", "Embedding model the index was built with (default: text-embedding-3-small).")
BASE_URL = Parameter("base_url", "text", "OpenAI-compatible API base URL (a local server needs no key).")
CACHE = Parameter(
    "cache", "switch", "Search from snapshots of the index kept in the user's cache directory, so that no search "
    "holds the index ChunkHound writes (default: true); false: every search reads the index file.",
    default=True, configurable=True,
)  # fmt: skip
EMBEDDING = (PROVIDER, MODEL, BASE_URL)

FILE = Parameter(
    "file", "text", "A file of the index, as answers show it (relative to the project root).", low=1, high=4096,
    required=True,
)  # fmt: skip
LINE = Parameter(
    "line", "integer", "A line of that file, 1-10,000,000: the smallest indexed chunk holding it is matched.",
    low=1, high=10_000_000, required=True,
)  # fmt: skip
NAME = Parameter(
    "name", "text", "A name, bare (bulk_create) or qualified as search reads it (QuerySet.bulk_create, "
    "timezone.now).", low=1, high=200, required=True,
)  # fmt: skip

# What a tool call may set, in the order the pack and the MCP server list them.
_FILTERS_AND_SHAPE = (LANGUAGE, CHUNK_TYPE, INCLUDE, EXCLUDE, EXPAND, MODE, RERANK, CONTENT, FORMAT, MAX_BYTES)
SEARCH = (QUERY, PATHS, DB, LIMIT, OFFSET, *_FILTERS_AND_SHAPE)
SEARCH_BATCH = (QUERIES, PATHS, DB, LIMIT, *_FILTERS_AND_SHAPE)
STATUS = (PATHS, DB)
RELATED = (
    FILE,
    LINE,
    PATH,
    DB,
    LIMIT,
    OFFSET,
    LANGUAGE,
    CHUNK_TYPE,
    INCLUDE,
    EXCLUDE,
    EXPAND,
    CONTENT,
    FORMAT,
    MAX_BYTES,
)
USAGES = (NAME, PATH, DB, LANGUAGE, INCLUDE, EXCLUDE, FORMAT, MAX_BYTES)
TOOLS = {
    "search": SEARCH, "search_batch": SEARCH_BATCH, "status": STATUS, "related": RELATED, "usages": USAGES,
}  # fmt: skip

# When an agent should call us rather than grep or glob: the MCP server's instructions, the top of ``--help`` and
# of the instruction files ``agents`` writes. Every byte is in every conversation of every agent that loads it.
WHEN = (
    "Search this project's code when you do not know the exact text: a behaviour or concept in words "
    '("where are tokens refreshed"), a name whose spelling or place you do not know, "where is X handled". '
    "For a string you already know exactly, grep is enough. Answers are file:line places to Read next; from "
    "one, related finds code like it and usages finds where a name is used."
)
