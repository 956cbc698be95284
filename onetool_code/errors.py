"""Our exception hierarchy: raised inside the package, turned into ``Error: ...`` text once, in ``api.py``.

    OneToolCodeError                 exit code 1
    ├── BadInputError                exit code 2: a parameter the caller can fix
    ├── NotIndexedError              no index file where one is expected
    ├── IndexLockedError             ChunkHound holds the index read-write right now
    ├── IndexUnreadableError         not a DuckDB file, not ChunkHound's schema, a directory, ...
    ├── ModelNotInIndexError         the index holds no vectors of the chosen provider/model
    ├── MissingKeyError              semantic search with no API key anywhere
    └── EmbeddingError               the embeddings request failed (key, rate limit, network, timeout)

Each message is written for the agent or person who reads it: what happened and what to do next.
"""

from __future__ import annotations


class OneToolCodeError(Exception):
    """Base class; ``str(error)`` is the whole user-facing message."""

    exit_code = 1


class BadInputError(OneToolCodeError):
    exit_code = 2


class NotIndexedError(OneToolCodeError):
    pass


class IndexLockedError(OneToolCodeError):
    pass


class IndexUnreadableError(OneToolCodeError):
    pass


class ModelNotInIndexError(OneToolCodeError):
    pass


class MissingKeyError(OneToolCodeError):
    pass


class EmbeddingError(OneToolCodeError):
    pass
