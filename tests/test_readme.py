"""The README's examples are what the code prints: its sample answer is run and compared, scores included
(issue 36, item 9)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import onetool_code
from onetool_code import cli

README = Path(__file__).resolve().parent.parent / "README.md"


def _sample() -> tuple[list[str], str]:
    """The command and the answer of the README's "The answer" section."""
    section = README.read_text(encoding="utf-8").split("\n## The answer\n", 1)[1]
    block = re.search(r"```\n\$ (.*?)\n(.*?)```", section, re.S)
    assert block is not None, "the README's sample answer is a ``` block starting with a $ command"
    return shlex.split(block.group(1)), block.group(2)


def test_the_readmes_sample_answer_is_what_the_command_line_prints(sample_index, capsys):
    command, printed = _sample()
    assert command[:4] == ["python", "-m", "onetool_code", "search"]
    args = [str(sample_index.root) if arg == "fixtures/project" else arg for arg in command[3:]]
    assert str(sample_index.root) in args
    assert cli.main(args) == 0
    assert capsys.readouterr().out == printed


def test_the_architecture_section_is_the_tree_as_it_is():
    """Every module and folder of the package is in the README's tree, and nothing else is (the indexer's own
    modules are told as one folder)."""
    section = README.read_text(encoding="utf-8").split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    tree = section.split("```\n", 2)[1]
    named = set(re.findall(r"[\w]+\.py|[\w]+/", tree))
    package = Path(onetool_code.__file__).parent
    present = {p.name for p in package.glob("*.py")} | {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
    present |= {p.name for p in package.glob("*/*.py") if p.parent.name != "indexer"}
    aside = {"onetool_code/", "__init__.py", "__main__.py"}  # the root, each folder's map, ``python -m``
    assert named - aside == present - aside, (sorted(named - present), sorted(present - named))


def test_every_test_file_the_readme_names_exists():
    """The README points at the tests that hold its claims: each path it names is one."""
    named = set(re.findall(r"tests/[\w/]+\.py", README.read_text(encoding="utf-8")))
    assert named and not [path for path in named if not (README.parent / path).is_file()]
