#!/usr/bin/env bash
# The whole test suite on a fresh machine: lint, format, the suite on Python 3.11 (with the real ChunkHound
# and the real OneTool in their own cached virtual environments), then the suite on Python 3.12.
set -euo pipefail
cd "$(dirname "$0")/.."

setup() {  # setup VENV PYTHON
    "$2" -m venv "$1"
    "$1/bin/pip" install --quiet --disable-pip-version-check -e ".[test]"
}

setup .venv-test python3
.venv-test/bin/ruff check .
.venv-test/bin/ruff format --check .
# Real ChunkHound 6.1.0 and OneTool 2.2.2, each in its own venv under ~/.cache/onetool-code (built once).
.venv-test/bin/python tests/tooling/chunkhound_env.py
.venv-test/bin/python tests/tooling/onetool_env.py
.venv-test/bin/python -m pytest "$@"

# A pyenv shim named python3.12 may be on PATH and still fail to run: try each candidate for real.
py312=""
for candidate in "$HOME"/.pyenv/versions/3.12*/bin/python3.12 "$(command -v python3.12 || true)"; do
    if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
        py312=$candidate
        break
    fi
done
if [ -z "$py312" ]; then
    echo "Python 3.12 not found: the suite ran on $(python3 --version) only" >&2
    exit 1
fi
setup .venv-test312 "$py312"
.venv-test312/bin/python -m pytest -m "not chunkhound and not onetool" "$@"
