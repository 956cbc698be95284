#!/usr/bin/env bash
# The whole test suite on a fresh machine: lint, format, the suite on Python 3.11 (with the real ChunkHound
# and the real OneTool in their own cached virtual environments), then the suite on Python 3.12.
# Every stage runs whatever an earlier one did, unless it needs what that one failed to make, and says so: a
# failed lint is no reason to hide what the tests say. When one did not pass, the last line names each such stage
# and the script exits 1; when all passed, the last line is pytest's summary.
set -uo pipefail
cd "$(dirname "$0")/.."

problems=()

stage() {  # stage NAME COMMAND...: announce, run, and remember a failure with its exit code
    local name=$1 code
    shift
    echo "== $name" >&2
    "$@"
    code=$?
    if [ "$code" -ne 0 ]; then
        problems+=("$name failed (exit $code)")
    fi
    return "$code"
}

skipped() {  # skipped NAME WHY: a stage that cannot run, said where it would have run
    echo "== $1: not run: $2" >&2
    problems+=("$1 not run ($2)")
}

setup() {  # setup VENV PYTHON
    "$2" -m venv "$1" && "$1/bin/pip" install --quiet --disable-pip-version-check -e ".[test]"
}

# --durations: the slowest tests, printed above pytest's summary line (which stays the last line it prints).
pytest_args=(--durations=15 "$@")

if stage "venv (python3)" setup .venv-test python3; then
    stage "ruff check" .venv-test/bin/ruff check .
    stage "ruff format --check" .venv-test/bin/ruff format --check .
    # Real ChunkHound 6.1.0 and OneTool 2.2.2, each in its own venv under ~/.cache/onetool-code (built once).
    stage "ChunkHound 6.1.0 venv" .venv-test/bin/python tests/tooling/chunkhound_env.py
    stage "OneTool 2.2.2 venv" .venv-test/bin/python tests/tooling/onetool_env.py
    stage "pytest on $(python3 --version)" .venv-test/bin/python -m pytest "${pytest_args[@]}"
    # The Python 3.12 the OneTool venv is built with: on PATH, in PYENV_ROOT's (or ~/.pyenv's) versions, /usr/bin; a
    # candidate counts only if it runs (a pyenv shim on PATH may exit 127). Why none did goes to stderr.
    if py312=$(.venv-test/bin/python tests/tooling/onetool_env.py --python312); then
        if stage "venv (Python 3.12)" setup .venv-test312 "$py312"; then
            stage "pytest on Python 3.12" .venv-test312/bin/python -m pytest -m "not chunkhound and not onetool" \
                "${pytest_args[@]}"
        else
            skipped "pytest on Python 3.12" "its venv could not be made"
        fi
    else
        skipped "pytest on Python 3.12" "no working Python 3.12 found"
    fi
else
    skipped "lint, format and the tests" "the venv could not be made"
fi

if [ ${#problems[@]} -ne 0 ]; then
    printf -v said '%s; ' "${problems[@]}"
    echo "scripts/test.sh: NOT PASSED: ${said%; }" >&2
    exit 1
fi
# Every stage passed: pytest's own summary line stays the last thing printed.
