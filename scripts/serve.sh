#!/usr/bin/env bash
# Run the service on its embedded default: no GPU, no other server needed. Trials ("trial": {})
# need torch: install the worker extra (pip install -e '.[worker]') and they run on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q -e .
exec .venv/bin/mambasizer serve "$@"
