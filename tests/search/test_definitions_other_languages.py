"""A name's definition first in the languages our development benchmark lacks (Kotlin, Swift, Elixir), cut as
ChunkHound 6.1.0 cuts them (measured on files like these): a Swift protocol is a ``function`` chunk named
``protocol Request``, a Kotlin extension function and an Elixir ``defp`` sit inside a neighbour's chunk named
after the neighbour, and an Elixir module is named by its dotted name (``MyApp.Router``). Each name is used more
often elsewhere, so only knowing where it is declared puts the declaration first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_definitions_first import _chunk, _index, first, results

ROUTER_EX = """defmodule MyApp.Router do
  @moduledoc "Routes requests to controllers."

  def match_route(router, path) do
    Enum.find(router.routes, fn route -> route.path == normalize(path) end)
  end

  defp normalize(path), do: String.trim_trailing(path, "/")
end
"""
PATHS_EX = "\n".join(
    [
        "defmodule MyApp.Paths do",
        *(f"  def clean_{n}(path), do: MyApp.Router.normalize(normalize(path))" for n in range(20)),
        "end",
    ]
)
CLIENT_KT = """package net

class HttpClient(private val timeout: Long) {
    companion object {
        fun default(): HttpClient = HttpClient(10)
    }
}

fun HttpClient.withRetry(times: Int): HttpClient = this
"""
CALLS_KT = "\n".join(
    [
        "package net",
        "",
        "class Jobs {",
        *(f"    fun run{n}(c: HttpClient) = c.withRetry({n}).withRetry(1)" for n in range(8)),
        "}",
    ]
)
REQUEST_SWIFT = """import Foundation

/// What the client sends.
public protocol Request {
    associatedtype Response
    var path: String { get }
}
"""
CLIENT_SWIFT = "\n".join(
    [
        "public struct Client {",
        *(f"    func send{n}(_ request: Request) -> Request {{ request }}" for n in range(8)),
        "}",
    ]
)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("other-languages")
    texts = {
        "lib/my_app/web.ex": ROUTER_EX,
        "lib/my_app/paths.ex": PATHS_EX,
        "src/net/Client.kt": CLIENT_KT,
        "src/net/Jobs.kt": CALLS_KT,
        "Sources/Net/Protocols.swift": REQUEST_SWIFT,
        "Sources/Net/Client.swift": CLIENT_SWIFT,
    }
    for path, text in texts.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    lines = {path: text.split("\n") for path, text in texts.items()}
    rows = [
        _chunk(lines["lib/my_app/web.ex"], 1, "class", "MyApp.Router", 1, 9),
        _chunk(lines["lib/my_app/web.ex"], 1, "function", "match_route", 4, 8),  # defp normalize inside
        _chunk(lines["lib/my_app/paths.ex"], 2, "class", "MyApp.Paths", 1, 22),
        *(_chunk(lines["lib/my_app/paths.ex"], 2, "function", f"clean_{n}", n + 2, n + 2) for n in range(20)),
        _chunk(lines["src/net/Client.kt"], 3, "class", "HttpClient", 3, 7),
        _chunk(lines["src/net/Client.kt"], 3, "function", "default", 5, 9),  # the extension function inside
        _chunk(lines["src/net/Jobs.kt"], 4, "class", "Jobs", 3, 12),
        _chunk(lines["Sources/Net/Protocols.swift"], 5, "function", "protocol Request", 3, 7),
        _chunk(lines["Sources/Net/Client.swift"], 6, "class", "Client", 1, 10),
    ]
    files = [
        (1, "lib/my_app/web.ex", "elixir"),
        (2, "lib/my_app/paths.ex", "elixir"),
        (3, "src/net/Client.kt", "kotlin"),
        (4, "src/net/Jobs.kt", "kotlin"),
        (5, "Sources/Net/Protocols.swift", "swift"),
        (6, "Sources/Net/Client.swift", "swift"),
    ]
    _index(root, files, rows)
    return root


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize(
    ("query", "where"),
    [
        # Each shown whole from its own first line (the file's syntax says where it starts), not from its chunk's.
        ("normalize", ("lib/my_app/web.ex", 8)),  # Elixir's defp, in the chunk named match_route
        ("withRetry", ("src/net/Client.kt", 9)),  # Kotlin's extension function, in the chunk named default
        ("Request", ("Sources/Net/Protocols.swift", 4)),  # Swift's protocol, a function chunk "protocol Request"
    ],
)
def test_the_declaration_comes_before_the_files_that_use_the_name_most(project, cache, query, where):
    assert first(project, query, cache=cache)[:2] == where


@pytest.mark.parametrize("cache", [True, False])
def test_an_elixir_module_is_found_by_its_last_name_and_by_its_dotted_one(project, cache):
    for query in ("Router", "MyApp.Router"):
        assert first(project, query, cache=cache)[:2] == ("lib/my_app/web.ex", 1)
    # The module that only calls it is not a definition of it.
    paths = [r["file_path"] for r in results(project, "normalize", cache=cache)["results"]]
    assert paths[0] == "lib/my_app/web.ex"


SENDERS_KT = """package net

class Mailer(private val host: String) {
    fun send(message: String): Boolean {
        return message.isNotEmpty()
    }
}

class HttpClient(private val timeout: Long) {
    suspend fun send(request: String): Int {
        return request.length
    }
}
"""
# The admin's match_route says "router" more than the router's own: only the module around it tells them apart.
ROUTERS_EX = """defmodule MyApp.Admin do
  def match_route(router, path), do: MyApp.Router.match_route(router.admin_router, path)
end

defmodule MyApp.Router do
  def match_route(table, path) do
    Enum.find(table.routes, fn route -> route.path == path end)
  end
end
"""

# ``Date.range/2`` builds a ``Date.Range``: the module ``Date.Range`` is itself a definition in ``Date``.
DATE_EX = """defmodule Date do
  @moduledoc "Calendar dates."

  def range(first, last) do
    %Date.Range{first: first, last: last}
  end
end
"""
DATE_RANGE_EX = """defmodule Date.Range do
  @moduledoc "An inclusive range of dates."

  defstruct [:first, :last]
end
"""


@pytest.fixture(scope="module")
def qualified(tmp_path_factory) -> Path:
    """Two Kotlin classes that each define ``send`` and two Elixir modules that each define ``match_route``, in
    one file each, and Elixir's ``Date.range/2`` beside the module ``Date.Range``, chunked as ChunkHound chunks
    them: a chunk per class or module and one per function."""
    root = tmp_path_factory.mktemp("qualified")
    texts = {
        "src/net/Senders.kt": SENDERS_KT,
        "lib/my_app/routing.ex": ROUTERS_EX,
        "lib/calendar/date.ex": DATE_EX,
        "lib/calendar/date_range.ex": DATE_RANGE_EX,
    }
    for path, text in texts.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    kt, ex = SENDERS_KT.split("\n"), ROUTERS_EX.split("\n")
    date, date_range = DATE_EX.split("\n"), DATE_RANGE_EX.split("\n")
    rows = [
        _chunk(kt, 1, "class", "Mailer", 3, 7),
        _chunk(kt, 1, "function", "send", 4, 6),
        _chunk(kt, 1, "class", "HttpClient", 9, 13),
        _chunk(kt, 1, "function", "send", 10, 12),
        _chunk(ex, 2, "class", "MyApp.Admin", 1, 3),
        _chunk(ex, 2, "function", "match_route", 2, 2),
        _chunk(ex, 2, "class", "MyApp.Router", 5, 9),
        _chunk(ex, 2, "function", "match_route", 6, 8),
        _chunk(date, 3, "class", "Date", 1, 7),
        _chunk(date, 3, "function", "range", 4, 6),
        _chunk(date_range, 4, "class", "Date.Range", 1, 5),
    ]
    files = [
        (1, "src/net/Senders.kt", "kotlin"),
        (2, "lib/my_app/routing.ex", "elixir"),
        (3, "lib/calendar/date.ex", "elixir"),
        (4, "lib/calendar/date_range.ex", "elixir"),
    ]
    _index(root, files, rows)
    return root


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize(
    ("query", "where"),
    [
        ("HttpClient.send", ("src/net/Senders.kt", 10, 12)),  # the second class's, not the first one's
        ("Mailer.send", ("src/net/Senders.kt", 4, 6)),
        ("MyApp.Router.match_route", ("lib/my_app/routing.ex", 6, 8)),  # the module named whole, by each part
        ("Router.match_route", ("lib/my_app/routing.ex", 6, 8)),
        ("Date.Range", ("lib/calendar/date_range.ex", 1, 5)),  # the module, not the function of its qualifier
        ("Date.range", ("lib/calendar/date.ex", 4, 6)),
    ],
)
def test_a_qualified_name_is_the_definition_inside_that_class_or_module(qualified, cache, query, where):
    assert first(qualified, query, cache=cache)[:3] == where


# pybind11's ``pytypes.h``, cut as ChunkHound 6.1.0 cut it: tree-sitter takes the export macro for the class's name,
# so the class line closes a chunk of the namespace around it and its body is a block from its ``{`` on. No chunk is
# named after the class, and a caster that catches it in every branch says its name most.
ERRORS_H = """#pragma once
#include <exception>

namespace lib {
namespace detail {
struct error_fetch { int code; };
}  // namespace detail

/// Holds a Python error that was already set.
class LIB_EXPORT_EXCEPTION error_already_set : public std::exception {
public:
    error_already_set() = default;
    const char *what() const noexcept override { return "error"; }
};
}  // namespace lib
"""
CASTER_H = "\n".join(
    [
        "namespace lib {",
        "inline bool load(int src) {",
        *(f"    try {{ convert(src, {n}); }} catch (const error_already_set &) {{ return false; }}" for n in range(8)),
        "    return true;",
        "}",
        "}  // namespace lib",
    ]
)


def test_a_cpp_class_declared_with_an_export_macro_comes_before_the_code_that_catches_it(tmp_path):
    for path, text in {"include/lib/errors.h": ERRORS_H, "include/lib/caster.h": CASTER_H}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    errors, caster = ERRORS_H.split("\n"), CASTER_H.split("\n")
    body = "\n".join(["{", *errors[10:14]])  # from the class line's ``{``, as ChunkHound cut it
    rows = [
        _chunk(errors, 1, "namespace", "file_structure_part1", 4, 10),
        (1, "block", "block_line_10", body, 10, 14),
        _chunk(caster, 2, "function", "load", 2, 11),
    ]
    _index(tmp_path, [(1, "include/lib/errors.h", "cpp"), (2, "include/lib/caster.h", "cpp")], rows)
    assert first(tmp_path, "error_already_set")[0] == "include/lib/errors.h"
