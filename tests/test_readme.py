"""The README's examples are what the code prints: its sample answer is run and compared, scores included
(issue 36, item 9)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

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
