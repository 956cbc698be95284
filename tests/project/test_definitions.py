"""definitions(): the named definitions in a hit's code, from a real tree-sitter parse (no mocks)."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onetool_code.project.definitions import definitions, enclosing, outline

MODULE_PATH = Path(__file__).resolve().parents[2] / "onetool_code" / "project" / "definitions.py"


def code(text: str) -> str:
    """Test sources are written indented inside the test; definitions() sees them as a file would hold them."""
    return textwrap.dedent(text).strip("\n") + "\n"


# --- every row of the spec's table -------------------------------------------------------------------

TABLE_ROWS = [
    pytest.param("python", "def search(q):\n    return q\n", "function search", id="python-function"),
    pytest.param("python", "class Searcher:\n    pass\n", "class Searcher", id="python-class"),
    pytest.param("typescript", "function load(): void {}\n", "function load", id="ts-function"),
    pytest.param("typescript", "class Store {}\n", "class Store", id="ts-class"),
    pytest.param("typescript", "interface Book { title: string }\n", "interface Book", id="ts-interface"),
    pytest.param("typescript", "type BookId = number;\n", "type BookId", id="ts-type-alias"),
    pytest.param("typescript", "enum Role { Admin, Member }\n", "enum Role", id="ts-enum"),
    pytest.param("typescript", "class A {\n  run(): void {}\n}\n", "class A, method run", id="ts-method"),
    pytest.param("tsx", "function load(): void {}\n", "function load", id="tsx-function"),
    pytest.param("tsx", "class Store {}\n", "class Store", id="tsx-class"),
    pytest.param("tsx", "interface Props { title: string }\n", "interface Props", id="tsx-interface"),
    pytest.param("tsx", "type Id = number;\n", "type Id", id="tsx-type-alias"),
    pytest.param("tsx", "enum Role { Admin }\n", "enum Role", id="tsx-enum"),
    pytest.param("tsx", "class A {\n  run(): void {}\n}\n", "class A, method run", id="tsx-method"),
    pytest.param("javascript", "function load() {}\n", "function load", id="js-function"),
    pytest.param("javascript", "class Store {}\n", "class Store", id="js-class"),
    pytest.param("javascript", "class A {\n  run() {}\n}\n", "class A, method run", id="js-method"),
    pytest.param("jsx", "function load() {}\n", "function load", id="jsx-function"),
    pytest.param("jsx", "class Store {}\n", "class Store", id="jsx-class"),
    pytest.param("jsx", "class A {\n  run() {}\n}\n", "class A, method run", id="jsx-method"),
    pytest.param("go", "func Load() error { return nil }\n", "function Load", id="go-function"),
    pytest.param("go", "func (s *Store) Get(id int) {}\n", "method Get", id="go-method"),
    pytest.param("go", "type Store struct {\n\tbooks []Book\n}\n", "type Store", id="go-type"),
    pytest.param("rust", "fn load() -> u32 { 1 }\n", "function load", id="rust-function"),
    pytest.param("rust", "struct Point { x: i32 }\n", "struct Point", id="rust-struct"),
    pytest.param("rust", "enum Shape { Circle, Square }\n", "enum Shape", id="rust-enum"),
    pytest.param("rust", "impl Point {}\n", "impl Point", id="rust-impl"),
    pytest.param("rust", "trait Area { fn area(&self) -> f64; }\n", "trait Area", id="rust-trait"),
    pytest.param("java", "class Store {}\n", "class Store", id="java-class"),
    pytest.param("java", "interface Repository {}\n", "interface Repository", id="java-interface"),
    pytest.param("java", "class A {\n  int size() { return 0; }\n}\n", "class A, method size", id="java-method"),
    pytest.param("java", "enum Status { ACTIVE, RETURNED }\n", "enum Status", id="java-enum"),
    pytest.param("kotlin", "fun load(): Int = 1\n", "function load", id="kotlin-function"),
    pytest.param("kotlin", "class Store {}\n", "class Store", id="kotlin-class"),
    pytest.param("kotlin", "interface Repository\n", "interface Repository", id="kotlin-interface"),
    pytest.param("kotlin", "object Registry {}\n", "object Registry", id="kotlin-object"),
    pytest.param("kotlin", "typealias Id = Long\n", "type Id", id="kotlin-type-alias"),
    pytest.param("kotlin", "class A {\n    fun run() {}\n}\n", "class A, function run", id="kotlin-method"),
    pytest.param("swift", "func load() -> Int { 1 }\n", "function load", id="swift-function"),
    pytest.param("swift", "class Store {}\n", "class Store", id="swift-class"),
    pytest.param("swift", "struct Point { var x: Int }\n", "struct Point", id="swift-struct"),
    pytest.param("swift", "enum Role { case admin }\n", "enum Role", id="swift-enum"),
    pytest.param("swift", "actor Limiter {}\n", "actor Limiter", id="swift-actor"),
    pytest.param("swift", "extension Point {}\n", "extension Point", id="swift-extension"),
    pytest.param(
        "swift", "protocol Shape { func area() -> Double }\n", "protocol Shape, function area", id="swift-protocol"
    ),
    pytest.param("swift", "typealias Id = Int\n", "type Id", id="swift-typealias"),
    pytest.param("swift", "class A {\n    init() {}\n}\n", "class A, function init", id="swift-init"),
    pytest.param("elixir", "defmodule Shop do\nend\n", "module Shop", id="elixir-module"),
    pytest.param("elixir", "def load(x), do: x\n", "function load", id="elixir-def"),
    pytest.param("elixir", "defp load(x), do: x\n", "function load", id="elixir-defp"),
    pytest.param("elixir", "defmacro load(x), do: x\n", "macro load", id="elixir-defmacro"),
    pytest.param("elixir", "defmacrop load(x), do: x\n", "macro load", id="elixir-defmacrop"),
    pytest.param("elixir", "defprotocol Size do\nend\n", "protocol Size", id="elixir-protocol"),
]


@pytest.mark.parametrize(("language", "source", "expected"), TABLE_ROWS)
def test_each_table_row_is_reported_with_its_label(language: str, source: str, expected: str) -> None:
    assert definitions(source, language) == expected


def test_typescript_abstract_class_is_a_class_with_its_methods() -> None:
    source = code("""
        export abstract class Shape {
          abstract area(): number;
          describe(): string { return "shape"; }
        }
    """)
    assert definitions(source, "typescript") == "class Shape, method describe"


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_generator_function_is_a_function(language: str) -> None:
    assert definitions("function* ids() { yield 1; }\n", language) == "function ids"


def test_jsx_markup_does_not_hide_the_component() -> None:
    source = code("""
        export function BookList({ books }) {
          return <ul>{books.map((b) => <li key={b.id}>{b.title}</li>)}</ul>;
        }
    """)
    assert definitions(source, "jsx") == "function BookList"


def test_tsx_component_and_props_interface() -> None:
    source = code("""
        interface Props { books: Book[] }
        export function BookList({ books }: Props): JSX.Element {
          return <ul>{books.map((b) => <li key={b.id}>{b.title}</li>)}</ul>;
        }
    """)
    assert definitions(source, "tsx") == "interface Props, function BookList"


# --- Python special cases ----------------------------------------------------------------------------


def test_python_decorated_function_is_unwrapped_to_its_def() -> None:
    source = code("""
        @functools.cache
        @other(1)
        def load(path):
            return path
    """)
    assert definitions(source, "python") == "function load"


def test_python_decorated_class_is_unwrapped_to_its_class() -> None:
    source = code("""
        @dataclass(frozen=True)
        class Hit:
            path: str
    """)
    assert definitions(source, "python") == "class Hit"


def test_python_functions_in_a_class_are_methods_including_decorated_and_async() -> None:
    source = code("""
        class Cache:
            def get(self, key):
                return self.data[key]

            @property
            def size(self):
                return len(self.data)

            async def put(self, key, value):
                self.data[key] = value
    """)
    assert definitions(source, "python") == "class Cache, method get, method size, method put"


def test_python_nested_class_and_its_methods_are_reported() -> None:
    source = code("""
        class Outer:
            class Meta:
                def options(self):
                    return {}
    """)
    assert definitions(source, "python") == "class Outer, class Meta, method options"


def test_python_functions_nested_in_functions_are_skipped() -> None:
    source = code("""
        def outer():
            def helper():
                pass

            class Local:
                def method(self):
                    pass

            return helper


        def after():
            pass
    """)
    assert definitions(source, "python") == "function outer, function after"


def test_python_function_under_module_level_if_stays_a_function() -> None:
    source = code("""
        if sys.platform == "win32":
            def home():
                return "C:"
        else:
            def home():
                return "/"
    """)
    assert definitions(source, "python") == "function home"


def test_python_methods_in_a_class_are_methods_even_under_if() -> None:
    source = code("""
        class Path:
            if WINDOWS:
                def sep(self):
                    return "\\\\"
    """)
    assert definitions(source, "python") == "class Path, method sep"


# --- Go and Rust special cases -----------------------------------------------------------------------


def test_go_type_group_yields_each_type_including_aliases() -> None:
    source = code("""
        type (
            Store struct{ books []Book }
            Reader interface{ Get(id int) Book }
            ID = int
        )
        type List[T any] struct{ items []T }
    """)
    assert definitions(source, "go") == "type Store, type Reader, type ID, type List"


def test_go_types_and_closures_inside_functions_are_skipped() -> None:
    source = code("""
        func Serve() {
            type local struct{}
            handler := func() {}
            _ = handler
        }
    """)
    assert definitions(source, "go") == "function Serve"


def test_rust_impl_of_a_trait_is_named_by_its_self_type() -> None:
    source = code("""
        impl fmt::Display for Point {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "({}, {})", self.x, self.y)
            }
        }
    """)
    assert definitions(source, "rust") == "impl Point, function fmt"


def test_rust_generic_impl_is_named_without_generics_or_path() -> None:
    source = code("""
        impl<T> Stack<T> {
            pub fn push(&mut self, item: T) { self.items.push(item); }
        }
        impl<T: Clone> std::collections::Queue<T> {}
        impl<'a> Iterator for &'a Tokens {}
    """)
    assert definitions(source, "rust") == "impl Stack, function push, impl Queue, impl Tokens"


def test_rust_trait_default_methods_and_nested_modules_are_reported() -> None:
    source = code("""
        mod shapes {
            pub trait Area {
                fn area(&self) -> f64;
                fn double(&self) -> f64 { self.area() * 2.0 }
            }
        }
    """)
    assert definitions(source, "rust") == "trait Area, function double"


def test_rust_closures_and_items_inside_functions_are_skipped() -> None:
    source = code("""
        fn main() {
            fn helper() {}
            let f = |x: i32| x + 1;
        }
    """)
    assert definitions(source, "rust") == "function main"


# --- Kotlin, Swift and Elixir: whole files as ChunkHound 6.1.0 indexes them -------------------------

CLIENT_KT = """\
package net

import java.time.Duration

typealias Headers = Map<String, String>

/** A request the client sends. */
interface Request<R> {
    val path: String
}

data class Response(val status: Int, val body: String)

sealed class ClientError : Exception() {
    object Timeout : ClientError()
    data class BadStatus(val code: Int) : ClientError()
}

class HttpClient(private val timeout: Duration) {
    companion object {
        fun default(): HttpClient = HttpClient(Duration.ofSeconds(10))
    }

    suspend fun <R> send(request: Request<R>): Response {
        TODO()
    }

    private fun retry(times: Int): HttpClient = this
}

fun HttpClient.withRetry(times: Int): HttpClient = this

object ConnectionPool {
    val connections = mutableListOf<String>()
    fun acquire(): String? = connections.removeLastOrNull()
}

enum class Method { GET, POST }
"""
CLIENT_SWIFT = """\
import Foundation

/// A request the client sends.
public protocol Request {
    associatedtype Response
    var path: String { get }
}

public struct HTTPClient {
    let session: URLSession

    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func send<R: Request>(_ request: R) async throws -> R.Response {
        fatalError()
    }
}

extension HTTPClient {
    func retry(times: Int) -> HTTPClient { self }
}

public enum ClientError: Error {
    case timeout
    case badStatus(Int)
}

public final class ConnectionPool {
    private var connections: [String] = []
    public func acquire() -> String? { connections.popLast() }
}

public typealias Headers = [String: String]

actor RateLimiter {
    func wait() async {}
}
"""
ROUTER_EX = '''\
defmodule MyApp.Router do
  @moduledoc """
  Routes requests to controllers.
  """
  use Plug.Router

  defstruct [:routes, :pipelines]

  @doc "Matches a path against the routes."
  def match_route(router, path) do
    Enum.find(router.routes, fn route -> route.path == path end)
  end

  defp normalize(path), do: String.trim_trailing(path, "/")

  defmacro get(path, controller) do
    quote do: add_route(:get, unquote(path), unquote(controller))
  end
end

defprotocol MyApp.Renderable do
  @doc "Renders a value to iodata."
  def render(value)
end

defimpl MyApp.Renderable, for: Map do
  def render(map), do: Jason.encode_to_iodata!(map)
end
'''


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        pytest.param(
            "kotlin",
            CLIENT_KT,
            # An unnamed companion object is no entry, its functions are; an extension function by its own name.
            "type Headers, interface Request, class Response, class ClientError, object Timeout, class BadStatus, "
            "class HttpClient, function default, function send, function retry, function withRetry, "
            "object ConnectionPool, function acquire, class Method",
            id="kotlin",
        ),
        pytest.param(
            "swift",
            CLIENT_SWIFT,
            "protocol Request, struct HTTPClient, function init, function send, extension HTTPClient, function retry, "
            "enum ClientError, class ConnectionPool, function acquire, type Headers, actor RateLimiter, function wait",
            id="swift",
        ),
        pytest.param(
            "elixir",
            ROUTER_EX,
            # defimpl is named by its for: type, as a Rust impl by its self type.
            "module MyApp.Router, function match_route, function normalize, macro get, protocol MyApp.Renderable, "
            "function render, impl Map",
            id="elixir",
        ),
    ],
)
def test_kotlin_swift_and_elixir_files_list_their_definitions(language: str, source: str, expected: str) -> None:
    assert definitions(source, language) == expected


def test_kotlin_named_companion_object_is_an_object() -> None:
    source = code("""
        class Api {
            companion object Factory {
                fun create(): Api = Api()
            }
        }
    """)
    assert definitions(source, "kotlin") == "class Api, object Factory, function create"


def test_swift_extension_is_named_by_its_type_without_path_or_generics() -> None:
    assert definitions("extension Outer.Stack<Int>: Sequence where T: Equatable {}\n", "swift") == "extension Stack"


def test_elixir_guards_short_forms_and_defimpl_without_for() -> None:
    source = code("""
        defmodule Shop.Cart do
          def total(items) when is_list(items) do
            Enum.sum(items)
          end

          def empty?, do: true

          defimpl Inspect do
            def inspect(cart, _opts), do: "#Cart"
          end

          defimpl String.Chars, for: Shop.Item do
            def to_string(item), do: item.name
          end
        end
    """)
    # defimpl without for: implements the module around it: no entry of its own; its functions are reported.
    assert definitions(source, "elixir") == (
        "module Shop.Cart, function total, function empty?, function inspect, impl Shop.Item, function to_string"
    )


def test_functions_nested_in_kotlin_swift_and_elixir_functions_are_skipped() -> None:
    assert definitions("fun outer() {\n    fun inner() {}\n    class Local\n}\n", "kotlin") == "function outer"
    assert definitions("func outer() {\n    func inner() {}\n    struct Local {}\n}\n", "swift") == "function outer"
    source = "defmacro route(p) do\n  quote do\n    def unquote(p)(), do: 1\n    def helper, do: 2\n  end\nend\n"
    assert definitions(source, "elixir") == "macro route"


def test_outline_gives_kotlin_swift_and_elixir_functions_their_class_type_or_module() -> None:
    def parents(text: str, language: str) -> dict[str, tuple[str, ...]]:
        return {f"{d.label} {d.name}": d.parents for d in outline(text, language)}

    kotlin = parents(CLIENT_KT, "kotlin")
    assert kotlin["function send"] == ("HttpClient",)
    assert kotlin["function default"] == ("HttpClient",)  # through the unnamed companion object
    assert kotlin["function withRetry"] == ()
    assert kotlin["object Timeout"] == ("ClientError",)
    swift = parents(CLIENT_SWIFT, "swift")
    assert swift["function send"] == swift["function init"] == ("HTTPClient",)
    assert swift["function retry"] == ("HTTPClient",)  # in the extension, named as the struct it extends
    assert swift["function wait"] == ("RateLimiter",)
    elixir = outline(ROUTER_EX, "elixir")
    assert [(d.label, d.name, d.start_line, d.end_line, d.parents) for d in elixir[:4]] == [
        ("module", "MyApp.Router", 1, 19, ()),
        ("function", "match_route", 10, 12, ("MyApp.Router",)),
        ("function", "normalize", 14, 14, ("MyApp.Router",)),
        ("macro", "get", 16, 18, ("MyApp.Router",)),
    ]
    assert [d.parents for d in elixir if d.name == "render"] == [("MyApp.Renderable",), ("Map",)]


def test_outline_gives_a_go_method_its_receivers_type() -> None:
    """``func (mx *Mux) Handle`` is a method of ``Mux``, as a method in a class is of the class, though Go writes it
    outside the type; a plain function is of nothing."""
    code = (
        "package chi\n\ntype Mux struct{}\n\nfunc (mx *Mux) Handle(pattern string) {}\n\n"
        "func (s Stack[T]) Push(v T) {}\n\nfunc (r render) Render() error { return nil }\n\nfunc NewMux() *Mux { return nil }\n"
    )
    got = {d.name: d.parents for d in outline(code, "go")}
    assert got == {"Mux": (), "Handle": ("Mux",), "Push": ("Stack",), "Render": ("render",), "NewMux": ()}


# --- methods inside classes, in every language -------------------------------------------------------


def test_typescript_class_with_methods_in_source_order() -> None:
    source = code("""
        export class LruCache<K, V> {
          private map = new Map<K, V>();
          constructor(private capacity: number) {}
          get(key: K): V | undefined { return this.map.get(key); }
          put(key: K, value: V): void { this.map.set(key, value); }
        }
    """)
    assert definitions(source, "typescript") == "class LruCache, method constructor, method get, method put"


def test_typescript_namespace_contents_are_reported() -> None:
    source = code("""
        export namespace Api {
          export interface Client { fetch(): void }
          export function create(): Client { return { fetch() {} }; }
        }
    """)
    assert definitions(source, "typescript") == "interface Client, function create"


def test_javascript_arrow_function_bodies_are_skipped() -> None:
    source = code("""
        describe("cache", () => {
          function helper() {}
          class Fake {}
        });
        export const make = () => { function inner() {} };
    """)
    assert definitions(source, "javascript") == ""


def test_java_nested_types_and_their_methods_are_reported() -> None:
    source = code("""
        public class LoanService {
            public record Loan(long id) {
                public Loan renew() { return this; }
            }
            public static class Policy {
                int maxOpenLoans() { return 5; }
            }
            interface Clock { long now(); }
            enum Kind { A, B; int code() { return 1; } }
        }
    """)
    assert definitions(source, "java") == (
        "class LoanService, method renew, class Policy, method maxOpenLoans, interface Clock, method now, "
        "enum Kind, method code"
    )


def test_java_anonymous_classes_inside_methods_are_skipped() -> None:
    source = code("""
        class Pool {
            void start() {
                new Thread(new Runnable() { public void run() {} }).start();
            }
        }
    """)
    assert definitions(source, "java") == "class Pool, method start"


def test_java_overloads_are_reported_once() -> None:
    source = code("""
        class Repo {
            Book find(long id) { return null; }
            Book find(String isbn) { return null; }
        }
    """)
    assert definitions(source, "java") == "class Repo, method find"


# --- fragments: a search hit is often a method cut out of its class ----------------------------------


def test_java_lone_method_fragment() -> None:
    assert definitions("public int size() { return n; }", "java") == "method size"


def test_java_methods_ending_with_the_class_closing_brace() -> None:
    source = code("""
            @Override
            public int size() { return n; }

            public boolean isEmpty() { return n == 0; }
        }
    """)
    assert definitions(source, "java") == "method size, method isEmpty"


def test_typescript_lone_method_fragment_does_not_report_the_wrapper() -> None:
    source = "get(key: string): V | undefined {\n  return this.map.get(key);\n}"
    assert definitions(source, "typescript") == "method get"


def test_tsx_lone_method_fragment() -> None:
    source = "render(): JSX.Element {\n  return <div>{this.props.title}</div>;\n}"
    assert definitions(source, "tsx") == "method render"


def test_javascript_methods_ending_with_the_class_closing_brace() -> None:
    source = "  get(key) {\n    return 1;\n  }\n\n  put(key, value) {\n    this.m.set(key, value);\n  }\n}\n"
    assert definitions(source, "javascript") == "method get, method put"


def test_jsx_lone_method_fragment() -> None:
    assert definitions("render() {\n  return <div />;\n}\n", "jsx") == "method render"


def test_javascript_statement_fragment_is_not_mistaken_for_a_method_named_if() -> None:
    source = "  if (ready) {\n    return cache.get(key);\n  }\n}\n"
    assert definitions(source, "javascript") == ""


def test_python_indented_method_fragment_is_a_method() -> None:
    source = "    def close(self):\n        self.conn.close()\n"
    assert definitions(source, "python") == "method close"


def test_python_fragment_starting_mid_body_reports_following_methods() -> None:
    source = "        return result\n\n    @staticmethod\n    def parse(text):\n        return text.split()\n"
    assert definitions(source, "python") == "method parse"


def test_python_fragment_with_text_at_column_zero_inside_a_string() -> None:
    source = "    def usage(self):\n        return '''\nUsage: tool\n'''\n\n    def run(self):\n        pass\n"
    assert definitions(source, "python") == "method usage, method run"


def test_go_method_fragment_without_package_clause() -> None:
    source = "func (s *Stack) Push(v int) {\n\ts.items = append(s.items, v)\n}\n"
    assert definitions(source, "go") == "method Push"


def test_rust_method_fragment_with_self_parameter() -> None:
    assert definitions("pub fn len(&self) -> usize {\n    self.n\n}\n", "rust") == "function len"


def test_rust_methods_ending_with_the_impl_closing_brace() -> None:
    source = "    fn len(&self) -> usize { self.n }\n\n    fn is_empty(&self) -> bool { self.n == 0 }\n}\n"
    assert definitions(source, "rust") == "function len, function is_empty"


def test_kotlin_and_swift_methods_cut_from_their_class() -> None:
    lone = "    suspend fun <R> send(request: Request<R>): Response {\n        TODO()\n    }\n"
    assert definitions(lone, "kotlin") == "function send"
    ending = "    fun send(r: Int): Int {\n        return r\n    }\n\n    private fun retry(n: Int) = this\n}\n"
    assert definitions(ending, "kotlin") == "function send, function retry"
    lone = "    public func send<R: Request>(_ request: R) async throws -> R.Response {\n        fatalError()\n    }\n"
    assert definitions(lone, "swift") == "function send"
    ending = "    func a() -> Int { 1 }\n\n    mutating func b() {\n        x += 1\n    }\n}\n"
    assert definitions(ending, "swift") == "function a, function b"


@pytest.mark.parametrize(
    ("language", "head", "cut"),
    [
        (
            "kotlin",
            "class HttpClient(private val t: Duration) {\n    fun send(r: Int): Int {\n        return r\n    }\n",
            "\n    fun next() {\n        val a = 1\n",
        ),
        (
            "swift",
            "public final class HttpClient {\n    func send(r: Int) -> Int {\n        return r\n    }\n",
            "\n    func next() {\n        let a = 1\n",
        ),
    ],
)
def test_a_class_cut_before_its_end_keeps_its_name(language: str, head: str, cut: str) -> None:
    """ChunkHound's first piece of a long class: cut after a method, or inside the next one."""
    assert definitions(head, language) == "class HttpClient, function send"
    assert definitions(head + cut, language) == "class HttpClient, function send, function next"


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        (
            "kotlin",
            "    private fun retry(n: Int) = this\n}\n\nobject ConnectionPool {\n    fun acquire(): String? = null\n",
            "function retry, object ConnectionPool, function acquire",
        ),
        ("swift", "    var path: String { get }\n}\n\npublic struct HTTPClient {\n", "struct HTTPClient"),
    ],
)
def test_a_piece_from_the_end_of_one_class_into_the_next(language: str, source: str, expected: str) -> None:
    """Closed by nothing and closing what it does not open: only a class wrapper around it parses cleanly."""
    assert definitions(source, language) == expected


def test_elixir_functions_cut_from_their_module() -> None:
    source = code("""
          def match_route(router, path) do
            Enum.find(router.routes, fn route -> route.path == path end)
          end

          defp normalize(path), do: String.trim_trailing(path, "/")
        end
    """)
    assert definitions(source, "elixir") == "function match_route, function normalize"


def test_error_in_a_body_does_not_hide_the_definition_name() -> None:
    source = code("""
        def load(path):
            return open(path).read(

        def save(path, data):
            pass
    """)
    assert definitions(source, "python").startswith("function load")


def test_definition_with_a_broken_header_is_not_reported() -> None:
    assert definitions("def (x:\n    pass\n", "python") == ""
    assert definitions("class {\n}\n", "java") == ""


# --- no definitions, unsupported languages, odd input ------------------------------------------------

NO_DEFINITIONS = [
    pytest.param("python", "import os\nfrom pathlib import Path\n", id="python-imports"),
    pytest.param("typescript", 'import { Book } from "./types";\nexport * from "./api";\n', id="ts-imports"),
    pytest.param("javascript", 'const fs = require("fs");\n', id="js-require"),
    pytest.param("go", 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n', id="go-imports"),
    pytest.param("rust", "use std::fmt;\nuse crate::cache::Lru;\n", id="rust-use"),
    pytest.param("java", "package org.bookshelf;\n\nimport java.util.List;\n", id="java-imports"),
    pytest.param("kotlin", "package net\n\nimport java.time.Duration\n", id="kotlin-imports"),
    pytest.param("swift", "import Foundation\nlet x = 1\n", id="swift-import"),
    pytest.param("elixir", "alias MyApp.Repo\nimport Ecto.Query\nIO.puts(:ok)\n", id="elixir-alias"),
]


@pytest.mark.parametrize(("language", "source"), NO_DEFINITIONS)
def test_code_without_definitions_gives_empty_string(language: str, source: str) -> None:
    assert definitions(source, language) == ""


@pytest.mark.parametrize("language", ["markdown", "json", "yaml", "toml", "text", "bash", "c", "unknown", ""])
def test_language_outside_the_table_gives_empty_string(language: str) -> None:
    assert definitions("def f():\n    pass\nclass A {}\n", language) == ""


def test_language_name_is_case_insensitive() -> None:
    assert definitions("def f():\n    pass\n", "Python") == "function f"


@pytest.mark.parametrize("source", ["", "   \n\t\n"])
@pytest.mark.parametrize("language", ["python", "typescript", "go", "rust", "java", "markdown"])
def test_empty_or_blank_code_gives_empty_string(source: str, language: str) -> None:
    assert definitions(source, language) == ""


@pytest.mark.parametrize(
    "language", ["python", "typescript", "tsx", "javascript", "jsx", "go", "rust", "java", "kotlin", "swift", "elixir"]
)
def test_unparseable_garbage_gives_empty_string(language: str) -> None:
    rng = random.Random(7)
    garbage = "".join(rng.choice("{}()[];:<>=+-*/ \n\"'\\#@!?.,%&|^~`") for _ in range(5000))
    assert definitions(garbage, language) == ""


@pytest.mark.parametrize("language", ["python", "typescript", "go", "rust", "java"])
def test_binary_and_unencodable_input_never_raises(language: str) -> None:
    binary = bytes(range(256)).decode("latin-1") * 20
    assert isinstance(definitions(binary, language), str)
    assert isinstance(definitions("\ud800\x00" * 100, language), str)


# Any str, not only plausible code: the one promise here is "never raises", a property over all inputs,
# which is what hypothesis is for. Keywords and brackets make the parser take its fragment-retry paths.
CODE_LIKE_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["def ", "class ", "fn ", "impl ", "func ", "type ", "{", "}", "(", ")", ":", "\n", "    "]),
        st.text(max_size=8),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    source=CODE_LIKE_TEXT,
    language=st.sampled_from(["python", "tsx", "javascript", "go", "rust", "java", "kotlin", "swift", "elixir"]),
)
def test_any_text_gives_a_string_and_never_raises(source: str, language: str) -> None:
    result = definitions(source, language)
    assert isinstance(result, str)
    assert all(entry.count(" ") >= 1 for entry in result.split(", ") if result)


def test_lone_surrogate_before_a_definition_keeps_the_name_exact() -> None:
    assert definitions("# \ud800\ndef after():\n    pass\n", "python") == "function after"


def test_deeply_nested_input_does_not_hit_the_recursion_limit() -> None:
    assert definitions("x = " + "(" * 50_000 + "\ndef after():\n    pass\n", "python") == ""
    assert definitions("[" * 50_000, "javascript") == ""


def test_large_file_is_parsed_in_full() -> None:
    source = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(20_000))  # ~600 KB
    found = definitions(source, "python").split(", ")
    assert len(found) == 20_000
    assert found[0] == "function f0"
    assert found[-1] == "function f19999"


# --- names are sliced from UTF-8 bytes, not str positions --------------------------------------------


def test_non_ascii_string_before_a_definition_does_not_shift_the_name() -> None:
    source = code("""
        GREETING = "café ☕ 😀"

        def after_cafe():
            return GREETING
    """)
    assert definitions(source, "python") == "function after_cafe"


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        ("python", 'x = "café"\nclass Café:\n    def crème(self):\n        pass\n', "class Café, method crème"),
        ("java", 'class Résumé { String s = "naïve 😀"; void übersicht() {} }\n', "class Résumé, method übersicht"),
        ("typescript", 'const s = "café";\nfunction naïve(): void {}\n', "function naïve"),
        ("go", "// café 😀\nfunc Größe() int { return 1 }\n", "function Größe"),
        ("rust", 'const S: &str = "café";\nstruct Ærø;\n', "struct Ærø"),
    ],
    ids=["python", "java", "typescript", "go", "rust"],
)
def test_non_ascii_identifiers_are_sliced_whole(language: str, source: str, expected: str) -> None:
    assert definitions(source, language) == expected


def test_non_ascii_in_a_fragment_inside_a_wrapper_keeps_the_name_exact() -> None:
    source = 'greet(): string {\n  return "¡olá, café!";\n}\nfarewell(): string { return "adiós"; }\n'
    assert definitions(source, "typescript") == "method greet, method farewell"


# --- real files, threads, import cost ----------------------------------------------------------------


FIXTURE_FILES = [
    pytest.param(
        "src/bookshelf/retry.py",
        "python",
        "function backoff_delays, function retry, class RetryBudget, method __init__, method _roll, "
        "method record_request, method can_retry",
        id="python",
    ),
    pytest.param(
        "services/catalog/retry.go",
        "go",
        "type BackoffPolicy, type permanentError, method Error, method Unwrap, function Permanent, "
        "function DefaultBackoff, method Delay, function Retry",
        id="go",
    ),
    pytest.param(
        "web/src/lruCache.js",
        "javascript",
        "class LruCache, method constructor, method size, method get, method set, method evictOldest, "
        "method delete, method clear, method stats, function memoizeAsync",
        id="javascript",
    ),
    pytest.param(
        "web/src/components/BookList.tsx",
        "tsx",
        "interface BookRow, interface BookListProps, type LoadState, function AvailabilityBadge, function BookList",
        id="tsx",
    ),
]


@pytest.mark.parametrize(("relative_path", "language", "expected"), FIXTURE_FILES)
def test_fixture_project_files_list_every_top_level_definition_and_method(
    relative_path: str, language: str, expected: str
) -> None:
    """Checked by hand against the files; nested helpers (retry's decorator/wrapper) are left out."""
    source = (Path(__file__).resolve().parents[2] / "fixtures/project" / relative_path).read_text()
    assert definitions(source, language) == expected


def test_concurrent_calls_from_threads_agree() -> None:
    samples = [(source, language) for language, source, _ in (p.values for p in TABLE_ROWS)]
    expected = [definitions(source, language) for source, language in samples]
    barrier = threading.Barrier(8)

    def run(_: int) -> list[str]:
        barrier.wait()
        return [definitions(source, language) for source, language in samples * 5]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(run, range(8)))
    assert all(result == expected * 5 for result in results)


def test_module_import_and_unsupported_languages_do_not_load_tree_sitter() -> None:
    """The OneTool pack imports fast: tree-sitter loads on the first call that needs a parser."""
    script = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("definitions_under_test", {str(MODULE_PATH)!r})
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        assert module.definitions("# Title\\n\\ndef f(): pass", "markdown") == ""
        assert module.definitions("", "python") == ""
        assert not any(name.startswith("tree_sitter") for name in sys.modules), sorted(sys.modules)
        assert module.definitions("def f(): pass", "python") == "function f"
        assert "tree_sitter" in sys.modules
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


# -- A whole file's outline: which class a method is in, and where a definition starts and ends ---------------

OUTLINED = """\
import os


class QuerySet:
    def items(self):
        return list(self)

    @property
    def ordered(self):
        return True

    class Meta:
        def label(self):
            def inner():
                return 1
            return inner()


def bulk_create(objs):
    return objs
"""


def test_an_outline_gives_each_definition_its_lines_and_the_definitions_around_it() -> None:
    got = [(d.label, d.name, d.start_line, d.end_line, d.parents) for d in outline(OUTLINED, "python")]
    assert got == [
        ("class", "QuerySet", 4, 16, ()),
        ("method", "items", 5, 6, ("QuerySet",)),
        ("method", "ordered", 8, 10, ("QuerySet",)),  # from its decorator
        ("class", "Meta", 12, 16, ("QuerySet",)),
        ("method", "label", 13, 16, ("QuerySet", "Meta")),  # a function's body is not entered: no "inner"
        ("function", "bulk_create", 19, 20, ()),
    ]
    assert outline("{}", "json") == [] and outline("", "python") == []


def test_enclosing_is_the_innermost_definition_of_that_name_overlapping_the_lines() -> None:
    found = outline(OUTLINED + "\n\nclass Items:\n    def items(self):\n        return []\n", "python")
    assert enclosing(found, "ITEMS", 6, 6) == found[1]  # any case; the method, not the class Items below
    assert enclosing(found, "items", 24, 24).parents == ("Items",)
    assert enclosing(found, "items", 8, 10) is None  # no definition called items overlaps those lines
