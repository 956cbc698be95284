"""Parameter validation: bad values give one clear message naming the parameter and what is accepted."""

from __future__ import annotations

import pytest

from onetool_code import request
from onetool_code.errors import BadInputError


def parse(**overrides):
    args = {
        "queries": "find config",
        "batch": False,
        "limit": None,
        "offset": None,
        "language": None,
        "chunk_type": None,
        "include": None,
        "exclude": None,
        "expand": None,
        "mode": None,
        "content": None,
        "format": None,
        "max_bytes": None,
    }
    args.update(overrides)
    return request.parse(**args)


def test_defaults():
    req = parse()
    assert (req.queries, req.limit, req.offset, req.mode, req.content, req.format, req.max_bytes) == (
        ("find config",), 10, 0, "hybrid", "auto", "text", 5000,
    )  # fmt: skip


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_empty_query(query):
    with pytest.raises(BadInputError, match="query is empty"):
        parse(queries=query)


def test_huge_query():
    with pytest.raises(BadInputError, match="2,001 characters long; at most 2,000"):
        parse(queries="x" * 2001)
    assert parse(queries="x" * 2000).queries == ("x" * 2000,)


@pytest.mark.parametrize("limit", [0, 101, "ten", -1, 2.5, True])
def test_bad_limits(limit):
    with pytest.raises(BadInputError, match=r"limit must be a whole number from 1 to 100, got"):
        parse(limit=limit)


def test_numeric_strings_are_accepted():
    assert parse(limit="5", offset="20", expand="3", max_bytes="8000").limit == 5


def test_unknown_chunk_type_lists_the_valid_ones():
    with pytest.raises(BadInputError) as caught:
        parse(chunk_type="function|widget")
    assert "unknown chunk_type 'widget'" in str(caught.value) and "method" in str(caught.value)


def test_chunk_types_and_languages_are_case_insensitive_with_aliases():
    req = parse(chunk_type="Function|METHOD", language="py|TS|golang|c#")
    assert req.filters.chunk_types == ("function", "method")
    assert req.filters.languages == ("python", "typescript", "go", "csharp")


def test_unknown_language():
    with pytest.raises(BadInputError, match="unknown language 'klingon'"):
        parse(language="klingon")


def test_path_patterns_are_lowercased_and_blank_parts_dropped():
    req = parse(include="Src| |Web", exclude="TEST|mock|")
    assert (req.filters.include, req.filters.exclude) == (("src", "web"), ("test", "mock"))


@pytest.mark.parametrize(("name", "value"), [("mode", "fuzzy"), ("content", "some"), ("format", "xml")])
def test_bad_choices(name, value):
    with pytest.raises(BadInputError, match=f"{name} must be one of"):
        parse(**{name: value})


def test_expand_and_max_bytes_ranges():
    with pytest.raises(BadInputError, match="expand must be a whole number from 0 to 200"):
        parse(expand=201)
    with pytest.raises(BadInputError, match="max_bytes must be a whole number from 500"):
        parse(max_bytes=10)


def test_batch_queries_from_string_or_list():
    assert parse(batch=True, queries="a b| |c d|").queries == ("a b", "c d")
    assert parse(batch=True, queries=["x y", "  ", "z w"]).queries == ("x y", "z w")
    with pytest.raises(BadInputError, match="queries is empty"):
        parse(batch=True, queries=" | ")
    with pytest.raises(BadInputError, match="21 queries given; at most 20"):
        parse(batch=True, queries="|".join(f"q{i}" for i in range(21)))


@pytest.mark.parametrize(
    ("name", "value"), [("limit", "²"), ("expand", "³"), ("offset", "¹"), ("limit", "٣"), ("limit", "1.5")]
)
def test_numbers_are_ascii_digits_only(name, value):
    with pytest.raises(BadInputError, match=rf"{name} must be a whole number"):
        parse(**{name: value})


@pytest.mark.parametrize("query", ["find \udce9 config", "\ud800"])
def test_a_query_must_be_valid_text(query):
    with pytest.raises(BadInputError, match="query is not valid text"):
        parse(queries=query)
    with pytest.raises(BadInputError, match="query is not valid text"):
        parse(queries=["fine", query], batch=True)


@pytest.mark.parametrize(("name", "value"), [("mode", ["semantic"]), ("format", 1), ("content", True)])
def test_choices_must_be_text(name, value):
    with pytest.raises(BadInputError, match=rf"{name} must be one of"):
        parse(**{name: value})


def test_every_language_alias_names_a_language_of_the_index_vocabulary():
    from onetool_code import schema

    assert set(schema.LANGUAGE_ALIASES.values()) <= set(schema.LANGUAGES)
