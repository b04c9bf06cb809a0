"""The lint and type gates: ruff and mypy are configured in pyproject.toml, pinned in the
test extra, and run by the README's test command (scripts/test.sh, which CI runs) before
pytest, so a finding fails the run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from deploy_helpers import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, from PyPI (the test extra pins it for 3.10)
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_ruff_mypy_and_the_stubs_they_need_are_pinned_in_the_test_extra():
    test_extra = PYPROJECT["project"]["optional-dependencies"]["test"]
    for tool in ("ruff", "mypy", "types-PyYAML", "types-psutil"):
        pins = [r for r in test_extra if re.fullmatch(rf"{re.escape(tool)}==\d+(\.\d+)+", r)]
        assert len(pins) == 1, (tool, test_extra)


def test_mypy_runs_the_pydantic_plugin_over_every_python_folder():
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy["plugins"] == ["pydantic.mypy"]
    assert mypy["python_version"] == "3.10" and PYPROJECT["project"]["requires-python"] == ">=3.10"
    # every source folder holding Python (not .venv, nor build/ and dist/ from a wheel build)
    python_folders = {
        d.name
        for d in ROOT.iterdir()
        if d.is_dir() and not d.name.startswith(".") and d.name not in ("build", "dist") and any(d.rglob("*.py"))
    }
    # service/ and schemas/ are checked through the import package's links to them
    assert python_folders - {"service", "schemas"} == set(mypy["files"]) == {"mambasizer", "tests", "bench", "scripts"}
    assert all((ROOT / "mambasizer" / d).resolve() == (ROOT / d).resolve() for d in ("service", "schemas"))
    checked_bodies = [o["module"] for o in mypy["overrides"] if o.get("check_untyped_defs")]
    assert checked_bodies == [["mambasizer.*"]]


def test_the_readme_test_command_runs_both_gates_before_pytest():
    assert "./scripts/test.sh" in (ROOT / "README.md").read_text()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    lines = [ln.strip() for ln in (ROOT / "scripts" / "test.sh").read_text().splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith("#")]
    assert "set -euo pipefail" in commands  # a failing gate stops the script
    ruff = commands.index(".venv/bin/python -m ruff check .")
    mypy = commands.index(".venv/bin/python -m mypy")
    assert commands[-1] == 'exec .venv/bin/python -m pytest "$@"'
    assert ruff < len(commands) - 1 and mypy < len(commands) - 1


def test_ruff_with_the_project_config_flags_unsorted_imports_and_pre_3_10_spellings(tmp_path: Path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\nfrom typing import Optional\n\nx: Optional[int] = len(sys.argv) + len(os.sep)\n")
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"), "--no-cache",
         "--output-format", "concise", str(bad)],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    codes = sorted(set(re.findall(r"\d+:\d+: ([A-Z]+\d+)", run.stdout)))
    assert codes == ["I001", "UP045"], run.stdout
