"""``.gitignore`` rules per directory, matched by ``pathspec`` (its gitignore patterns are git's own syntax:
negations, anchoring, ``dir/``, ``**``, bracket classes and escapes).

What ``pathspec`` leaves to its caller is where a rule file applies: git reads a nested ``.gitignore`` against
paths relative to its own directory, only below it, and a deeper file overrides its parents (within one file
the last matching line wins, which ``GitIgnoreSpec`` does). Not supported: git's global excludes file and the
index (tracked files that match a pattern are ignored here, as ChunkHound's own matcher does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pathspec


@dataclass(frozen=True)
class IgnoreRules:
    """An immutable stack of (directory, rules) levels: ``with_lines`` returns a new one, so a walker can push a
    level per directory and drop it on the way back up."""

    levels: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()

    def with_lines(self, base: str, lines: Iterable[str]) -> IgnoreRules:
        """These rules plus those of one ignore file in directory ``base`` (relative, ``""`` for the root)."""
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        if not spec.patterns:
            return self
        prefix = f"{base.strip('/')}/" if base.strip("/") else ""
        return IgnoreRules((*self.levels, (prefix, spec)))

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether ``rel_path`` (relative to the root, forward slashes) is ignored: the deepest level with a
        matching rule decides, as in git."""
        for prefix, spec in reversed(self.levels):
            if not rel_path.startswith(prefix):
                continue
            # A trailing slash is how pathspec tells a directory from a file (for ``dir/`` patterns).
            local = rel_path[len(prefix) :] + ("/" if is_dir else "")
            verdict = spec.check_file(local).include
            if verdict is not None:
                return verdict
        return False
