#!/usr/bin/env bash
# The whole test suite, from a fresh clone: venv, the project with its test extra, and
# SGLang 0.5.23 itself (--no-deps: the conformance suite drives its sizing code on the
# CPU; pip extras cannot say --no-deps, hence this step).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
.venv/bin/python -m pip install -q --no-deps 'sglang==0.5.23'

# --- prometheus + promtool (tests/deploy/test_deploy_alerts.py, test_deploy_prometheus.py):
# Debian's package; the tests run their own prometheus process, never its system service.
command -v prometheus >/dev/null || (apt-get update && apt-get install -y --no-install-recommends prometheus) \
  || echo "scripts/test.sh: prometheus not installed (needs apt-get as root); its tests will skip" >&2
# --- end prometheus

# --- lint and type gates (configured in pyproject.toml) ---------------------------------
# Any finding fails the run before the tests; pytest stays last so CI ends on its summary.
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy
# ----------------------------------------------------------------------------------------

# --- capacity explorer browser tests (tests/explorer): Debian's chromium + chromium-driver ---
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver) \
        || echo "test.sh: could not install chromium (not root?): tests/explorer will be skipped" >&2
fi
# --- end of the browser block ---
exec .venv/bin/python -m pytest "$@"
