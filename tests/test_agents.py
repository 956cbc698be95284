"""``agents NAME --write``: each agent's file gets one marked section, updated in place; nothing else changes."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from onetool_code import agents
from onetool_code.errors import BadInputError

USER_TEXT = "# Project notes\n\nRun `make test` before committing.\n"


@pytest.mark.parametrize(
    ("name", "file"),
    [
        ("claude", "CLAUDE.md"), ("codex", "AGENTS.md"), ("opencode", "AGENTS.md"), ("amp", "AGENTS.md"),
        ("cursor", ".cursor/rules/onetool-code.mdc"), ("gemini", "GEMINI.md"),
    ],
)  # fmt: skip
def test_each_agent_gets_its_file_once_however_often_it_runs(tmp_path, name, file):
    target = tmp_path / file
    assert agents.write(name, str(tmp_path)) == f"{target}: created"
    created = target.read_text()
    assert created == agents.AGENTS[name].header + agents.section()
    assert agents.write(name, str(tmp_path)) == f"{target}: already up to date"
    assert target.read_text() == created and created.count(agents.BEGIN) == 1


def test_the_users_text_is_kept_and_the_section_replaced_in_place(tmp_path):
    target = tmp_path / "CLAUDE.md"
    target.write_text(USER_TEXT)
    target.chmod(0o640)
    assert agents.write("claude", str(tmp_path)) == f"{target}: added to"
    assert target.read_text() == USER_TEXT + "\n" + agents.section()
    # An older section between the user's paragraphs: replaced where it stands, the rest byte for byte.
    old = f"{agents.BEGIN}\nUse grep.\n{agents.END}\n"
    target.write_text(USER_TEXT + "\n" + old + "\n## Later notes\nkeep\n")
    assert agents.write("claude", str(tmp_path)) == f"{target}: updated"
    assert target.read_text() == USER_TEXT + "\n" + agents.section() + "\n## Later notes\nkeep\n"
    assert agents.write("claude", str(tmp_path)) == f"{target}: already up to date"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["CLAUDE.md"]  # no temporary file left behind


def test_a_file_without_a_final_line_break_keeps_its_last_line(tmp_path):
    (tmp_path / "GEMINI.md").write_text("last line")
    agents.write("gemini", str(tmp_path))
    assert (tmp_path / "GEMINI.md").read_text() == "last line\n\n" + agents.section()


@pytest.mark.parametrize(
    "text",
    [
        f"{agents.BEGIN}\nmine\n",  # the end marker lost
        f"{agents.END}\n{agents.BEGIN}\n",  # out of order
        f"{agents.BEGIN}\n{agents.END}\n{agents.BEGIN}\n{agents.END}\n",  # twice
    ],
    ids=["no-end", "reversed", "twice"],
)
def test_markers_edited_by_hand_are_an_error_and_nothing_is_written(tmp_path, text):
    (tmp_path / "AGENTS.md").write_text(text)
    with pytest.raises(BadInputError, match="markers out of order or more than once"):
        agents.write("codex", str(tmp_path))
    assert (tmp_path / "AGENTS.md").read_text() == text


def test_no_symlink_is_followed_out_of_the_project(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "bashrc").write_text("export PATH=/usr/bin\n")
    (project / "CLAUDE.md").symlink_to(outside / "bashrc")
    with pytest.raises(BadInputError, match=r"CLAUDE\.md is a symlink or not a regular file: nothing written"):
        agents.write("claude", str(project))
    (project / ".cursor").symlink_to(outside)
    with pytest.raises(BadInputError, match=r"\.cursor is a symlink or not a folder"):
        agents.write("cursor", str(project))
    (project / "GEMINI.md").mkdir()
    with pytest.raises(BadInputError, match=r"GEMINI\.md is a symlink or not a regular file"):
        agents.write("gemini", str(project))
    assert [p.name for p in outside.iterdir()] == ["bashrc"] and (
        outside / "bashrc"
    ).read_text() == "export PATH=/usr/bin\n"


def test_a_file_that_is_not_text_is_left_alone(tmp_path):
    (tmp_path / "AGENTS.md").write_bytes(b"\xff\xfe binary")
    with pytest.raises(BadInputError, match="is not UTF-8 text: nothing written"):
        agents.write("codex", str(tmp_path))
    assert (tmp_path / "AGENTS.md").read_bytes() == b"\xff\xfe binary"


def test_the_printed_instructions_say_where_they_go_and_give_the_command_line():
    printed = agents.instructions("Claude")
    assert printed.startswith("# For CLAUDE.md (Claude Code reads CLAUDE.md in every conversation")
    assert printed.endswith(agents.section())
    assert f"{agents.command()} search --like" in printed and f"{agents.command()} usages" in printed
    assert len(agents.section().encode()) < 1200  # in every conversation: short
    assert agents.instructions("cursor").endswith("alwaysApply: true\n---\n" + agents.section())
    with pytest.raises(BadInputError, match="unknown agent 'vim'; known: claude, codex"):
        agents.instructions("vim")


def test_an_instruction_file_over_the_bound_is_refused_unread(tmp_path):
    """A project's 300 MB ``CLAUDE.md`` was read whole and rewritten (17.8 s, 915 MB resident): one past the
    bound is refused by its size, before a byte is read, and left as it was; one at the bound is still updated."""
    target = tmp_path / "CLAUDE.md"
    line = b"Run `make test` before committing.\n"
    target.write_bytes(line * (agents.MAX_INSTRUCTIONS_BYTES // len(line) + 1))
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", "agents", "claude", "--write", "--path", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"Error: {target} is larger than 4,194,304 bytes, too large for instructions an agent reads every session: "
        "nothing written (trim it, or paste in the lines `agents claude` prints)\n"
    )
    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    assert [p.name for p in tmp_path.iterdir()] == ["CLAUDE.md"]
    fits = agents.MAX_INSTRUCTIONS_BYTES - len(agents.section().encode()) - 1
    target.write_bytes(b"x" * (fits - 1) + b"\n")
    assert agents.write("claude", str(tmp_path)) == f"{target}: added to"
    assert target.stat().st_size == agents.MAX_INSTRUCTIONS_BYTES
