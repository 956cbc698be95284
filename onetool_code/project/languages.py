"""File name -> ChunkHound language name, and which files ChunkHound would index at all.

The table is ChunkHound 6.1.0's (``Language.from_file_extension``): the same files get the same ``files.language``
values, and a file it would not index (an unknown extension) is not indexed here either. PDF is known to
ChunkHound but needs a PDF parser: we skip it and say so. Structured config files (JSON, YAML, TOML) larger than
20 KB are skipped, as ChunkHound does (``config_file_size_threshold_kb``): they are data, not code.
"""

from __future__ import annotations

from pathlib import PurePath

CONFIG_LANGUAGES = frozenset({"json", "yaml", "toml"})
CONFIG_SIZE_LIMIT = 20 * 1024

# Languages ChunkHound knows but we cannot read as text.
UNSUPPORTED = frozenset({"pdf"})

_FILENAMES: dict[str, str] = {
    "makefile": "makefile",
    "gnumakefile": "makefile",
    "dockerfile": "text",
    "jenkinsfile": "text",
}

_EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".java": "java",
    ".cs": "csharp", ".csx": "csharp",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".tsx": "tsx", ".jsx": "jsx",
    ".groovy": "groovy", ".gvy": "groovy", ".gy": "groovy", ".gsh": "groovy",
    ".kt": "kotlin", ".kts": "kotlin",
    ".go": "go",
    ".hs": "haskell", ".lhs": "haskell", ".hs-boot": "haskell", ".hsig": "haskell", ".hsc": "haskell",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".fish": "bash",
    ".mk": "makefile", ".mak": "makefile", ".make": "makefile",
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown", ".mdx": "markdown",
    ".dart": "dart",
    ".hcl": "hcl", ".tf": "hcl", ".tfvars": "hcl",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".txt": "text", ".text": "text",
    ".pdf": "pdf",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".cxx": "cpp", ".cc": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".hh": "cpp",
    ".h++": "cpp",
    ".metal": "metal",
    ".rs": "rust",
    ".zig": "zig",
    ".m": "matlab",
    ".mm": "objc",
    ".php": "php", ".phtml": "php", ".php3": "php", ".php4": "php", ".php5": "php", ".phps": "php",
    ".vue": "vue",
    ".svelte": "svelte",
    ".sql": "sql",
    ".swift": "swift", ".swiftinterface": "swift",
    ".ex": "elixir", ".exs": "elixir",
    ".lua": "lua",
    ".ps1": "powershell", ".psm1": "powershell",
    ".scss": "scss",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".css": "css",
    ".sass": "text", ".haml": "text",
    ".jinja": "jinja", ".j2": "jinja", ".njk": "jinja",
    ".tcpou": "twincat",
    ".proto": "text", ".graphql": "text", ".gql": "text", ".xml": "text",
    ".ini": "text", ".properties": "text", ".conf": "text", ".cfg": "text",
}  # fmt: skip


def language_for(path: PurePath) -> str | None:
    """ChunkHound's language name for a file, or None when ChunkHound would not index it."""
    return language_named(path.name)


def language_named(name: str) -> str | None:
    """``language_for`` of a file's name: a walk meets thousands, and a path object each cost more than the rest."""
    lower = name.lower()
    if lower in _FILENAMES:
        return _FILENAMES[lower]
    dot = lower.rfind(".")
    return _EXTENSIONS.get(lower[dot:]) if 0 < dot < len(lower) - 1 else None


def extension_of(path: PurePath) -> str | None:
    """``files.extension``: the suffix without its dot, lowercase; None when there is none (``Makefile``)."""
    return path.suffix[1:].lower() or None
