#!/usr/bin/env bash
# Run the service on its embedded default: no GPU, no other server needed. Trials ("trial": {})
# need torch: install the worker extra (pip install -e '.[worker]') and they run on the CPU.
#
# The project is installed editable into .venv (so `mambasizer` lands in .venv/bin: put it
# on PATH with `source .venv/bin/activate`). The install is skipped when nothing it depends
# on changed: a stamp holds the hash of pyproject.toml (code changes need no reinstall with
# an editable install).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
STAMP=.venv/.mambasizer-install-stamp
want="$(.venv/bin/python -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')"
if [ ! -x .venv/bin/mambasizer ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
    .venv/bin/python -m pip install -q -e .
    echo "$want" > "$STAMP"
fi
exec .venv/bin/mambasizer serve "$@"
