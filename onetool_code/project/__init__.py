"""The project's files on disk now, read as ChunkHound read them, and what a hit is in them today.

- ``source``: files read only inside the project root, each once per call, with ChunkHound's line numbers.
- ``definitions``: the definitions inside a piece of code, named at query time (tree-sitter, imported lazily).
- ``placement``: where each hit is in its file now, decided as ChunkHound decides whether a file changed.
- ``walk`` (``ignore``, ``languages``): the files an index would hold, by ChunkHound's rules and ``.gitignore``.
- ``drift`` (``watch``): how far the checkout is from its index, watched in a long-lived process (inotify).
- ``chunker`` (``chunks``, ``syntax``, ``markdown``, ``text``): a file's bytes cut into chunks as ChunkHound cuts them.
"""
