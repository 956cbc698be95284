"""Read-only semantic and lexical search over ChunkHound's code indexes: library, OneTool pack and CLI."""

from onetool_code.api import related, search, search_batch, status, usages

__all__ = ["related", "search", "search_batch", "status", "usages"]
