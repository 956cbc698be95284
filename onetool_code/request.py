"""Turn the caller's raw arguments into one validated ``Request``; every message says what is accepted.

The ranges, choices and defaults are ``parameters.py``'s. Agents pass strings where numbers are expected
(``limit="5"``), so numeric strings are accepted; anything
else that is off is a ``BadInputError`` naming the parameter, the value and the valid range or choices.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from onetool_code import parameters, schema
from onetool_code.errors import BadInputError
from onetool_code.names import query_tokens
from onetool_code.parameters import Parameter

# ``str.isdigit`` accepts "²" and "٣", which ``int`` then rejects or reads as another number.
_ASCII_INTEGER = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class Request:
    queries: tuple[str, ...]
    batch: bool
    limit: int
    offset: int
    filters: schema.Filters
    expand: int | None
    mode: str
    content: str
    format: str
    max_bytes: int
    rerank: bool | None = None  # None: when a reranker is configured

    @property
    def depth(self) -> int:
        """How many hits of each ranked list to fetch, always from the top: a page is a slice of the whole list,
        and a duplicate (same path and lines) is recognised only by what ranks above it, earlier pages included.
        One extra hit tells a single search whether another page exists; a batch is fused, not paged."""
        return self.limit if self.batch else self.offset + self.limit + 1


class Defaults(Protocol):
    """What the user configured for a call's project (``settings.Settings``): its default page and byte budget."""

    limit: int
    max_bytes: int


def parse(
    defaults: Defaults | None = None,
    *,
    queries: Sequence[str] | str | None,
    batch: bool = False,
    limit: object = None,
    offset: object = None,
    language: object = None,
    chunk_type: object = None,
    include: object = None,
    exclude: object = None,
    expand: object = None,
    mode: object = None,
    content: object = None,
    format: object = None,
    max_bytes: object = None,
    rerank: object = None,
) -> Request:
    """The call's arguments, checked; what the caller left out is the user's default (``defaults``), else the
    tool's."""
    limit_default = defaults.limit if defaults else parameters.LIMIT.default
    bytes_default = defaults.max_bytes if defaults else parameters.MAX_BYTES.default
    return Request(
        queries=_batch_queries(queries) if batch else (_query(queries),),
        batch=batch,
        limit=limit_default if limit is None else _number(parameters.LIMIT, limit),
        offset=parameters.OFFSET.default if offset is None else _number(parameters.OFFSET, offset),
        filters=schema.Filters(
            languages=languages(language),
            chunk_types=chunk_types(chunk_type),
            include=_needles("include", include),
            exclude=_needles("exclude", exclude),
        ),
        expand=None if expand is None else _number(parameters.EXPAND, expand),
        mode=choice(parameters.MODE, mode),
        content=choice(parameters.CONTENT, content),
        format=output_format(format),
        max_bytes=bytes_default if max_bytes is None else _number(parameters.MAX_BYTES, max_bytes),
        rerank=_switch(parameters.RERANK, rerank),
    )


def check_words(request: Request) -> None:
    """A lexical query with nothing to search for is a mistake worth saying before anything is read."""
    if request.mode == "lexical":
        for query in request.queries:
            if not query_tokens(query):
                raise BadInputError(
                    f"query {query!r} has no word of two or more letters or digits to search for in lexical mode"
                )


def output_format(value: object) -> str:
    return choice(parameters.FORMAT, value)


def _query(value: object) -> str:
    if not isinstance(value, str):
        raise BadInputError(f"query must be text, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise BadInputError('query is empty: say what code you are looking for, e.g. query="parse config file"')
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: an undecodable byte on the command line, or bad JSON
        raise BadInputError(
            f"query is not valid text: character {exc.start + 1} is {exc.object[exc.start]!r} (an unpaired "
            "surrogate, e.g. from bytes that are not UTF-8)"
        ) from exc
    if len(text) > parameters.QUERY.high:
        raise BadInputError(f"query is {len(text):,} characters long; at most {parameters.QUERY.high:,} are accepted")
    return text


def place(file: object, line: object) -> tuple[str, int]:
    """``related``'s starting place: a file named as text, and a line in ``parameters.LINE``'s range."""
    return _text(parameters.FILE, file), _number(parameters.LINE, line)


def name(value: object) -> str:
    """``usages``' name, as text of ``parameters.NAME``'s length."""
    return _text(parameters.NAME, value)


def _text(parameter: Parameter, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadInputError(f"{parameter.name} must be non-empty text, got {value!r}")
    text = value.strip()
    if "\x00" in text:  # no file name or identifier holds one, and the system calls refuse it
        raise BadInputError(f"{parameter.name} must not hold a NUL character")
    assert parameter.high is not None
    if len(text) > parameter.high:
        raise BadInputError(
            f"{parameter.name} is {len(text):,} characters long; at most {parameter.high:,} are accepted"
        )
    return text


def _batch_queries(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        parts = value.split("|")
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise BadInputError(f"queries must be a |-separated string or a list of strings, got {type(value).__name__}")
    texts = [p for p in parts if not (isinstance(p, str) and not p.strip())]
    if not texts:
        raise BadInputError('queries is empty: give one or more queries, e.g. queries="auth logic|token refresh"')
    if len(texts) > parameters.QUERIES.high:
        raise BadInputError(f"{len(texts)} queries given; at most {parameters.QUERIES.high} per batch")
    return tuple(_query(t) for t in texts)


def _number(parameter: Parameter, value: object) -> int:
    low, high = parameter.low, parameter.high
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and _ASCII_INTEGER.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        number = None
    if number is None or not low <= number <= high:
        raise BadInputError(f"{parameter.name} must be a whole number from {low} to {high:,}, got {value!r}")
    return number


def _switch(parameter: Parameter, value: object) -> bool | None:
    """True or false; agents also pass "true"/"false"."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise BadInputError(f"{parameter.name} must be true or false; got {value!r}")


def choice(parameter: Parameter, value: object) -> str:
    if value is None:
        return parameter.default
    if not isinstance(value, str) or value.strip().lower() not in parameter.choices:
        raise BadInputError(f"{parameter.name} must be one of {', '.join(parameter.choices)}; got {value!r}")
    return value.strip().lower()


def _split(name: str, value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        value = "|".join(str(v) for v in value)
    if not isinstance(value, str):
        raise BadInputError(f"{name} must be a |-separated string, got {type(value).__name__}")
    return [part.strip() for part in value.split("|") if part.strip()]


def languages(value: object) -> tuple[str, ...]:
    """Canonical ChunkHound language names; aliases (py, ts, golang, c#...) accepted, case-insensitive."""
    out: list[str] = []
    for part in _split("language", value):
        name = schema.LANGUAGE_ALIASES.get(part.lower(), part.lower())
        if name not in schema.LANGUAGES:
            raise BadInputError(f"unknown language {part!r}; ChunkHound's languages are: {', '.join(schema.LANGUAGES)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def chunk_types(value: object) -> tuple[str, ...]:
    out: list[str] = []
    for part in _split("chunk_type", value):
        name = part.lower()
        if name not in schema.CHUNK_TYPES:
            raise BadInputError(f"unknown chunk_type {part!r}; valid chunk types: {', '.join(schema.CHUNK_TYPES)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def _needles(name: str, value: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.lower() for part in _split(name, value)))
