"""One description of the parameters: the library, the pack, the CLI and the checks all agree with it."""

from __future__ import annotations

import inspect
import re

import pytest

import onetool_code
from onetool_code import api, cli, pack, parameters
from onetool_code.parameters import Parameter

ANNOTATIONS = {
    "text": "str",
    "integer": "int",
    "queries": "str | list[str]",
    "paths": "str | list[str]",
    "switch": "bool",
}
LIBRARY = {
    api.run_search: (*parameters.SEARCH, *parameters.EMBEDDING, parameters.CACHE),
    api.run_batch: (*parameters.SEARCH_BATCH, *parameters.EMBEDDING, parameters.CACHE),
    api.run_status: (*parameters.STATUS, parameters.FORMAT, *parameters.EMBEDDING, parameters.CACHE),
    api.run_related: (*parameters.RELATED, *parameters.EMBEDDING, parameters.CACHE),
    api.run_usages: (*parameters.USAGES, *parameters.EMBEDDING, parameters.CACHE),
}


def args_section(doc: str) -> dict[str, str]:
    """A Google-style docstring's ``Args:`` entries, each with its continuation lines joined."""
    entries: dict[str, str] = {}
    lines = doc.split("\nArgs:\n")[1].split("\n\n")[0].splitlines()
    for line in lines:
        entry = re.fullmatch(r"    (\w+): (.*)", line)
        if entry:
            entries[entry[1]] = entry[2]
        else:
            name = list(entries)[-1]
            entries[name] += " " + line.strip()
    return entries


@pytest.mark.parametrize("name", pack.__all__)
def test_the_pack_signatures_and_args_are_the_description(name):
    function = getattr(pack, name)
    described = parameters.TOOLS[name]
    signature = inspect.signature(function).parameters
    assert list(signature) == [p.name for p in described]
    for p in described:
        expected_default = inspect.Parameter.empty if p.required else p.signature_default
        assert signature[p.name].default == expected_default, p.name
        annotation = ANNOTATIONS[p.type] + ("" if p.required or p.signature_default is not None else " | None")
        assert signature[p.name].annotation == annotation, p.name
    assert args_section(inspect.getdoc(function)) == {p.name: p.doc for p in described}


@pytest.mark.parametrize("function", list(LIBRARY), ids=lambda f: f.__name__)
def test_the_library_signatures_are_the_description(function):
    signature = inspect.signature(function).parameters
    described = LIBRARY[function]
    assert list(signature) == [p.name for p in described] + ["host"]
    for p in described:
        expected_default = inspect.Parameter.empty if p.required else p.signature_default
        assert signature[p.name].default == expected_default, p.name


@pytest.mark.parametrize(("command", "described"), [
    ("search", (*parameters.SEARCH, *parameters.EMBEDDING)),
    ("batch", (*parameters.SEARCH_BATCH, *parameters.EMBEDDING)),
    ("status", (*parameters.STATUS, parameters.FORMAT, *parameters.EMBEDDING)),
    ("mcp", (*parameters.STATUS, *parameters.EMBEDDING)),
    ("usages", (*parameters.USAGES, *parameters.EMBEDDING)),
])  # fmt: skip
def test_every_parameter_has_its_flag_with_its_doc(command, described):
    sub = cli.build_parser()._subparsers._group_actions[0].choices[command]
    for p in described:
        flags = [] if p.required else [p.flag]  # query and queries are positional
        if p.type == "switch":
            flags.append("--no-" + p.flag[2:])  # --rerank / --no-rerank
        (action,) = [a for a in sub._actions if a.dest == p.name and a.option_strings == flags]
        # A one-project command's --path says the rule of a repeated one.
        assert action.help == (f"{p.doc} {cli.ONE_PROJECT}" if p is parameters.PATH else p.doc), p.name


@pytest.mark.parametrize("p", [p for p in parameters.SEARCH if p.type == "integer"], ids=lambda p: p.name)
def test_the_library_accepts_exactly_the_described_range(sample_index, p):
    def search(value):
        return onetool_code.search(query="retry", path=str(sample_index.root), mode="lexical", **{p.name: value})

    message = f"Error: {p.name} must be a whole number from {p.low} to {p.high:,}, got "
    assert search(p.low - 1) == f"{message}{p.low - 1}"
    assert search(p.high + 1) == f"{message}{p.high + 1}"
    assert not search(p.low).startswith("Error") and not search(p.high).startswith("Error")


@pytest.mark.parametrize("p", [p for p in parameters.SEARCH if p.choices], ids=lambda p: p.name)
def test_the_library_accepts_exactly_the_described_choices(sample_index, p):
    def search(value):
        options = {"mode": "lexical", p.name: value}  # lexical, unless the mode is the parameter under test
        return onetool_code.search(
            query="retry", path=str(sample_index.root), base_url=sample_index.base_url, **options
        )

    assert search("nope") == f"Error: {p.name} must be one of {', '.join(p.choices)}; got 'nope'"
    for value in p.choices:
        answer = search(value)
        assert not (answer.startswith("Error") if isinstance(answer, str) else "error" in answer), value


def test_query_length_and_batch_size_are_the_described_ones(sample_index):
    root = str(sample_index.root)
    longest = "x" * parameters.QUERY.high
    assert not onetool_code.search(query=longest, path=root, mode="lexical").startswith("Error")
    assert onetool_code.search(query=longest + "x", path=root, mode="lexical").startswith(
        f"Error: query is {parameters.QUERY.high + 1:,} characters long"
    )
    most = ["retry"] * parameters.QUERIES.high
    assert not onetool_code.search_batch(queries=most, path=root, mode="lexical").startswith("Error")
    assert onetool_code.search_batch(queries=[*most, "retry"], path=root, mode="lexical") == (
        f"Error: {parameters.QUERIES.high + 1} queries given; at most {parameters.QUERIES.high} per batch"
    )


@pytest.mark.parametrize("p", [p for p in vars(parameters).values() if isinstance(p, Parameter)], ids=lambda p: p.name)
def test_each_doc_states_the_range_and_choices(p):
    """The doc is what agents read: it must not drift from the range and choices the checks enforce."""
    if p.type == "integer":
        assert f"{p.low:,}-{p.high:,}" in p.doc
    for value in p.choices:
        assert f'"{value}"' in p.doc
    assert "\n" not in p.doc and p.doc.endswith(".")


def test_when_to_call_us_is_short_and_said_where_agents_read_it(capsys):
    """Every byte is in every conversation: a few lines, saying when (words, unknown names) and when not (grep)."""
    assert len(parameters.WHEN.encode()) < 450
    assert "grep" in parameters.WHEN and "Read" in parameters.WHEN
    assert cli.main(["--help"]) == 0
    assert " ".join(parameters.WHEN.split()) in " ".join(capsys.readouterr().out.split())
    search_doc = inspect.getdoc(pack.search).split("\n\nArgs:")[0]
    assert "rather than grep or glob" in search_doc and "Read next" in search_doc
    for name in ("related", "usages"):
        assert "No API key" in inspect.getdoc(getattr(pack, name)) or "no API key" in inspect.getdoc(
            getattr(pack, name)
        )
