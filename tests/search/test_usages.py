"""``usages``: where a name is used, from the index's chunks, its definitions left out, grouped by kind of file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import build_index

import onetool_code

FILES = {
    "shop/clock.py": (
        "import datetime\n"
        "\n"
        "\n"
        "def now():\n"
        '    """The time now, in UTC."""\n'
        "    return datetime.datetime.now(datetime.timezone.utc)\n"
    ),
    "shop/orders.py": (
        "from shop import clock\n"
        "from shop.clock import now\n"
        "\n"
        "\n"
        "class Order:\n"
        "    def place(self):\n"
        "        self.placed_at = clock.now()\n"
        "        self.seen = now()\n"
        "        return self.placed_at\n"
        "\n"
        "    def placed(self):\n"
        "        return self.placed_at is not None\n"
    ),
    "shop/report.py": (
        "import datetime\n\n\ndef stamp(order):\n    order.place()\n    return datetime.datetime.now()\n"
    ),
    "tests/test_orders.py": (
        "from shop.orders import Order\n"
        "\n"
        "\n"
        "def test_place():\n"
        "    order = Order()\n"
        "    assert order.place() is not None\n"
        "    assert order.placed()\n"
    ),
    "docs/orders.md": "# Orders\n\nCall `Order.place` to place an order; `place_all` is not it.\n",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = tmp_path_factory.mktemp("usages") / "shop"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    build_index(root, None, embeddings=False)
    return root


def test_uses_are_whole_identifiers_grouped_code_tests_docs_definitions_left_out(shop):
    assert onetool_code.usages(name="place", path=str(shop)) == (
        "3 uses of place in 3 files (definitions left out: shop/orders.py:6)\n"
        "shop/report.py\n"
        "  5: order.place()\n"
        "tests:\n"
        "tests/test_orders.py\n"
        "  6: assert order.place() is not None\n"
        "docs:\n"
        "docs/orders.md\n"
        "  3: Call `Order.place` to place an order; `place_all` is not it."
    )


def test_a_module_qualifier_keeps_its_uses_and_drops_other_modules(shop):
    """``clock.now``: ``clock.now()``, the imported bare ``now()`` and the word in its own module, not
    ``datetime.datetime.now()``."""
    assert onetool_code.usages(name="clock.now", path=str(shop)) == (
        "4 uses of clock.now in 2 files (definitions left out: shop/clock.py:4)\n"
        "shop/clock.py\n"
        '  5: """The time now, in UTC."""\n'
        "shop/orders.py\n"
        "  2: from shop.clock import now\n"
        "  7: self.placed_at = clock.now()\n"
        "  8: self.seen = now()"
    )
    bare = onetool_code.usages(name="now", path=str(shop), format="json")
    assert [(f["path"], f["lines"]) for f in bare["files"]] == [
        ("shop/clock.py", [5, 6]), ("shop/orders.py", [2, 7, 8]), ("shop/report.py", [6]),
    ]  # fmt: skip


def test_a_class_qualifier_counts_every_use_of_the_method(shop):
    """Which class ``order`` is, a text index cannot know: ``Order.place`` is every ``place``."""
    qualified = onetool_code.usages(name="Order.place", path=str(shop), format="json")
    bare = onetool_code.usages(name="place", path=str(shop), format="json")
    assert qualified["files"] == bare["files"] and qualified["definitions"] == ["shop/orders.py:6"]


def test_json_and_compact_and_filters(shop):
    assert onetool_code.usages(name="place", path=str(shop), format="json", exclude="docs|test") == {
        "name": "place",
        "uses": 1,
        "files": [{"path": "shop/report.py", "kind": "code", "count": 1, "lines": [5]}],
        "definitions": ["shop/orders.py:6"],
    }
    assert onetool_code.usages(name="place", path=str(shop), format="compact", language="python") == {
        "name": "place",
        "uses": 2,
        "files": [{"p": "shop/report.py", "k": "code", "n": 1, "l": [5]}, {"p": "tests/test_orders.py", "k": "tests",
                                                                            "n": 1, "l": [6]}],
        "definitions": ["shop/orders.py:6"],
    }  # fmt: skip


def test_a_long_list_gives_counts_and_line_numbers_within_the_budget(tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(40):
        lines = "".join(f"    total += helper({j})\n" for j in range(3))
        (root / f"mod_{i:02}.py").write_text(f"from util import helper\n\n\ndef run_{i}():\n    total = 0\n{lines}")
    (root / "util.py").write_text("def helper(x):\n    return x\n")
    build_index(root, None, embeddings=False)
    answer = onetool_code.usages(name="helper", path=str(root), max_bytes=600)
    lines = answer.splitlines()
    assert lines[0] == "160 uses of helper in 40 files (definitions left out: util.py:1)"
    assert lines[1] == "mod_00.py (4): 1,6-8"
    assert len(answer.encode()) <= 600
    shown = len(lines) - 2
    assert lines[-1] == (
        f"Left out to stay within the byte budget: {40 - shown} files. For more: include=..., or a larger max_bytes."
    )
    everything = onetool_code.usages(name="helper", path=str(root), max_bytes=100_000)
    assert len(everything.splitlines()) == 41
    (root / "mod_00.py").write_text("from util import helper\n" + "helper(1)\n" * 30)
    assert onetool_code.usages(name="helper", path=str(root), max_bytes=100_000).splitlines()[1] == (
        "mod_00.py (31): 1-12,..."
    )


def test_the_snapshot_and_the_index_file_give_the_same_answer(sample_index):
    digest = sample_index.digest()
    root = str(sample_index.root)
    for name in ("retry", "Store.get", "backoff_delays", "config.load_config"):
        assert onetool_code.usages(name=name, path=root) == onetool_code.usages(name=name, path=root, cache=False)
    assert sample_index.digest() == digest


def test_nothing_found_and_bad_names(shop):
    assert onetool_code.usages(name="refund", path=str(shop)) == "No uses found of: refund"
    assert onetool_code.usages(name="now()", path=str(shop)) == (
        "Error: name 'now()' is not an identifier: give one, bare or qualified (bulk_create, QuerySet.bulk_create, "
        "timezone.now)"
    )
    assert onetool_code.usages(name="", path=str(shop)) == "Error: name must be non-empty text, got ''"
    assert json.loads(json.dumps(onetool_code.usages(name="x y", path=str(shop), format="json"))) == {
        "error": "name 'x y' is not an identifier: give one, bare or qualified (bulk_create, QuerySet.bulk_create, "
        "timezone.now)"
    }


def test_lines_are_read_from_the_files_so_none_outside_a_chunk_is_missed(project):
    """ChunkHound leaves lines between its chunks, and no chunk at all of some files: the files are read whole."""
    root = project.root
    with (root / "src/bookshelf/retry.py").open("a") as f:
        f.write("\nDELAYS = list(backoff_delays(0.1, 2.0, 1.0, 3))\n")
    answer = onetool_code.usages(name="backoff_delays", path=str(root), format="json")
    lines = (root / "src/bookshelf/retry.py").read_text().splitlines()
    assert answer["files"] == [
        {"path": "src/bookshelf/retry.py", "kind": "code", "count": 2, "lines": [44, len(lines)]},
    ]


def test_the_definition_search_resolves_the_name_to_is_named_first(tmp_path):
    """``clock.now``: of the definitions left out, the one in ``clock`` comes first, as ``search`` resolves it."""
    root = tmp_path / "two"
    (root / "aaa").mkdir(parents=True)
    (root / "aaa" / "other.py").write_text("def now():\n    return 0\n")
    (root / "clock.py").write_text("def now():\n    return 1\n")
    (root / "main.py").write_text("import clock\n\nprint(clock.now())\n")
    build_index(root, None, embeddings=False)
    assert onetool_code.usages(name="clock.now", path=str(root)).splitlines()[0] == (
        "1 use of clock.now in 1 file (definitions left out: clock.py:1, aaa/other.py:1)"
    )


def test_identifiers_that_begin_with_a_non_ascii_letter_are_found_whole(tmp_path):
    """Python, JavaScript, Go and Rust accept ``名前`` and ``Ωmega`` as names: they are found as ``café`` is,
    whole (``名前帳`` and ``Ωmegas`` are other names), their definitions left out."""
    root = tmp_path / "unicode"
    files = {
        "names.py": "def 名前():\n    return 1\n\n\nΩmega = 名前() + 1\nprint(名前帳, Ωmegas)\n",
        "use.js": "const café = 名前();\nexport const x = Ωmega * café;\n",
        "main.go": "package main\n\nvar Ωmega = 2\n\nfunc main() {\n\tprintln(名前(), Ωmega)\n}\n",
        "lib.rs": "fn r() -> i32 {\n    名前() + Ωmega\n}\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    build_index(root, None, embeddings=False)
    assert onetool_code.usages(name="名前", path=str(root)) == (
        "4 uses of 名前 in 4 files (definitions left out: names.py:1)\n"
        "lib.rs\n"
        "  2: 名前() + Ωmega\n"
        "main.go\n"
        "  6: println(名前(), Ωmega)\n"
        "names.py\n"
        "  5: Ωmega = 名前() + 1\n"
        "use.js\n"
        "  1: const café = 名前();"
    )
    omega = onetool_code.usages(name="Ωmega", path=str(root), format="json")
    assert omega["files"] == [
        {"path": "lib.rs", "kind": "code", "count": 1, "lines": [2]},
        {"path": "main.go", "kind": "code", "count": 1, "lines": [6]},
        {"path": "names.py", "kind": "code", "count": 1, "lines": [5]},
        {"path": "use.js", "kind": "code", "count": 1, "lines": [2]},
    ]
    assert omega["definitions"] == ["main.go:3"]
    assert onetool_code.usages(name="names.名前", path=str(root)).splitlines()[0] == (
        "1 use of names.名前 in 1 file (definitions left out: names.py:1)"
    )
    assert onetool_code.usages(name="9名前", path=str(root)).startswith("Error: name '9名前' is not an identifier")
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", "usages", "名前", "--path", str(root), "--format", "compact"],
        capture_output=True, text=True, encoding="utf-8", timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["uses"] == 4
