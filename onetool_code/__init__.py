"""Read-only semantic and lexical search over ChunkHound's code indexes: library, OneTool pack and CLI."""

from onetool_code.api import search, search_batch, status

__all__ = ["search", "search_batch", "status"]
