#!/usr/bin/env bash
# The main job on a fresh machine: install onetool-code (runtime dependencies only), index the bundled
# sample project without embeddings, and search it lexically: offline, no API key.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check .
.venv/bin/python -m onetool_code index fixtures/project --no-embeddings
.venv/bin/python -m onetool_code status --path fixtures/project
.venv/bin/python -m onetool_code search "retry with exponential backoff" --path fixtures/project --mode lexical
