"""Our exception hierarchy: raised inside the package, turned into ``Error: ...`` text once, in ``api.py``.

    OneToolCodeError                 exit code 1
    ├── BadInputError                exit code 2: a parameter the caller can fix
    ├── NotIndexedError              no index file where one is expected
    ├── IndexLockedError             ChunkHound holds the index read-write right now
    ├── IndexUnreadableError         not a DuckDB file, not ChunkHound's schema, a directory, ...
    │   ├── CopyError                no consistent private copy of a held index could be taken
    │   ├── SupersededError          a snapshot was replaced while a search used it (searched again)
    │   └── DamagedError             a snapshot's files are not what was written (made again)
    ├── ModelNotInIndexError         the index holds no vectors of the chosen provider/model
    ├── MissingKeyError              semantic search with no API key anywhere
    ├── EmbeddingError               the embeddings request failed (key, rate limit, network, timeout)
    └── RerankError                  the reranker failed (the fused order stands, with a notice)

Outside the tree, ``Stalled`` and ``TooLarge`` never leave the package: a request past its deadline, an answer
past its bound, each turned into an ``EmbeddingError`` or a ``RerankError`` by its caller.

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


class CopyError(IndexUnreadableError):
    """No consistent copy could be taken (no room, or the file kept changing); the message says which."""


class SupersededError(IndexUnreadableError):
    """A newer snapshot was published, and this one's folder removed, while a search was using it."""


class DamagedError(IndexUnreadableError):
    """A published snapshot's files are not what was written (a file lost or cut short): it was set aside, and
    the next search makes it again."""


class ModelNotInIndexError(OneToolCodeError):
    pass


class MissingKeyError(OneToolCodeError):
    pass


class EmbeddingError(OneToolCodeError):
    pass


class Stalled(Exception):
    """The request did not finish by its deadline (raised in the waiting thread; the request is left behind)."""


class TooLarge(Exception):
    """An answer held more than ``limit`` bytes; it was not read further (``transport.read_bounded``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} bytes")
        self.limit = limit


class RerankError(OneToolCodeError):
    """The reranker could not reorder the hits (the search goes on without it)."""
