"""The subset of ``.gitignore`` syntax the walker needs, compiled to regular expressions.

Supported: blank lines and ``#`` comments, ``\\#``/``\\!`` escapes, trailing-space trimming, ``!`` negation
(the last matching rule wins), ``dir/`` (directories only), anchoring (a ``/`` at the start or in the middle
ties a pattern to its file's directory; otherwise it matches a name at any depth), ``*``, ``?``, ``[...]`` and
``**`` (leading ``**/``, trailing ``/**``, inner ``/**/``). Rules of nested ``.gitignore`` files apply below their
directory, after (so above) their parents'. Not supported: git's global excludes file and the index (tracked
files that match a pattern are ignored here, as ChunkHound's own matcher does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One pattern line: where it applies (``base``, ``""`` or ``"dir/"``) and what it matches."""

    base: str
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


@dataclass(frozen=True)
class IgnoreRules:
    """An ordered, immutable rule list: ``with_lines`` returns a new one, so a walker can stack it per directory."""

    rules: tuple[Rule, ...] = ()

    def with_lines(self, base: str, lines: Iterable[str]) -> IgnoreRules:
        """These rules plus those of one ignore file in directory ``base`` (relative, ``""`` for the root)."""
        prefix = f"{base.strip('/')}/" if base.strip("/") else ""
        added = tuple(rule for line in lines if (rule := parse_line(prefix, line)) is not None)
        return IgnoreRules(self.rules + added) if added else self

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether ``rel_path`` (relative to the root, forward slashes) is ignored; the last matching rule decides."""
        result = False
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if not rel_path.startswith(rule.base):
                continue
            if rule.regex.fullmatch(rel_path[len(rule.base) :]):
                result = not rule.negate
        return result


def parse_line(base: str, line: str) -> Rule | None:
    """The rule of one ignore-file line, or None for blank lines and comments."""
    text = line.rstrip("\n").rstrip("\r")
    text = _trim_trailing_spaces(text)
    if not text or text.startswith("#"):
        return None
    negate = text.startswith("!")
    if negate or text.startswith(("\\!", "\\#")):
        text = text[1:]
    dir_only = text.endswith("/") and not text.endswith("\\/")
    text = text.rstrip("/") if dir_only else text
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    body = _translate(text)
    regex = body if anchored or text.startswith("**/") else f"(?:.*/)?{body}"
    return Rule(base=base, regex=re.compile(regex, re.DOTALL), negate=negate, dir_only=dir_only)


def _trim_trailing_spaces(text: str) -> str:
    """Git drops trailing spaces unless the last one is escaped with a backslash."""
    stripped = text.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(text):
        return stripped[:-1] + " "
    return stripped


def _translate(glob: str) -> str:
    """A glob (already stripped of its anchoring slash) as a regular expression body."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                at_start = i == 0 or glob[i - 1] == "/"
                after = i + 2
                if at_start and after < n and glob[after] == "/":
                    out.append("(?:.*/)?")  # "**/" matches zero or more directories
                    i = after + 1
                    continue
                if at_start and after == n:
                    out.append(".*")  # trailing "/**" matches everything inside
                    i = after
                    continue
                out.append("[^/]*")  # "**" elsewhere is an ordinary "*"
                i = after
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = _class_end(glob, i)
            if end < 0:
                out.append(re.escape(c))
            else:
                inner = glob[i + 1 : end]
                if inner.startswith(("!", "^")):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _class_end(glob: str, start: int) -> int:
    """Index of the ``]`` closing the bracket expression at ``start``, or -1 when it is not closed."""
    i = start + 1
    if i < len(glob) and glob[i] in "!^":
        i += 1
    if i < len(glob) and glob[i] == "]":
        i += 1
    while i < len(glob):
        if glob[i] == "]":
            return i
        i += 1
    return -1
