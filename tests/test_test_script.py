"""``scripts/test.sh`` finds its Python 3.12 as the OneTool tooling does (``onetool_env.py --python312``): in
``PYENV_ROOT`` (not only ``~/.pyenv``), on PATH and in /usr/bin, taking only an interpreter that runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from tooling.onetool_env import OneToolUnavailableError, find_python312

FINDER = [sys.executable, str(REPO / "tests" / "tooling" / "onetool_env.py"), "--python312"]


def shim(folder: Path) -> Path:
    """A ``python3.12`` on PATH that does not run, as a pyenv shim whose version is not selected."""
    folder.mkdir()
    path = folder / "python3.12"
    path.write_text('#!/bin/sh\necho "pyenv: python3.12: command not found" >&2\nexit 127\n')
    path.chmod(0o755)
    return path


def find(tmp_path: Path, pyenv_root: Path) -> subprocess.CompletedProcess[str]:
    """The finder with the shim first on PATH, ``pyenv_root`` as PYENV_ROOT and a HOME without ``.pyenv``."""
    shims = shim(tmp_path / "shims").parent
    env = {"PATH": os.pathsep.join((str(shims), "/usr/bin", "/bin")), "PYENV_ROOT": str(pyenv_root)}
    env["HOME"] = str(tmp_path / "home")
    return subprocess.run(FINDER, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_python312_is_found_under_pyenv_root_past_a_shim_that_does_not_run(tmp_path):
    try:
        real = find_python312()
    except OneToolUnavailableError as exc:
        pytest.skip(f"this machine has no Python 3.12 to place under a PYENV_ROOT: {exc}")
    installed = tmp_path / "pyenv" / "versions" / "3.12.99" / "bin" / "python3.12"
    installed.parent.mkdir(parents=True)
    installed.symlink_to(real)
    done = find(tmp_path, tmp_path / "pyenv")
    assert (done.returncode, done.stdout.strip()) == (0, str(installed)), done.stderr


def test_a_shim_alone_is_not_found_and_the_answer_says_what_was_tried(tmp_path):
    system = [path for path in ("/usr/bin/python3.12", "/usr/local/bin/python3.12") if Path(path).exists()]
    if system:
        pytest.skip(f"the finder also looks in the system's folders, and {system[0]} is there")
    done = find(tmp_path, tmp_path / "no-pyenv")
    assert done.returncode == 1 and done.stdout == ""
    assert "no working python3.12 was found" in done.stderr and str(tmp_path / "shims" / "python3.12") in done.stderr


def test_a_stage_that_cannot_run_says_why_and_the_script_fails(tmp_path):
    """A ``python3`` that cannot make the venv: nothing after it can run; the script says so and exits 1,
    its last line naming what did not pass (no stage skipped without a word)."""
    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "python3").write_text("#!/bin/sh\necho 'no venv module' >&2\nexit 3\n")
    (broken / "python3").chmod(0o755)
    env = {"PATH": os.pathsep.join((str(broken), "/usr/bin", "/bin")), "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "test.sh")], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 1 and done.stdout == ""
    said = done.stderr.splitlines()
    assert (
        said[0] == "== venv (python3)" and "== lint, format and the tests: not run: the venv could not be made" in said
    )
    assert said[-1] == (
        "scripts/test.sh: NOT PASSED: venv (python3) failed (exit 3); lint, format and the tests not run "
        "(the venv could not be made)"
    )
