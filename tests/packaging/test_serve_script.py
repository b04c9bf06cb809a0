"""scripts/serve.sh installs the project once and reinstalls only when pyproject.toml changes.

Run on a scratch copy whose .venv holds stand-ins: a `python` that records every pip call
(and runs the real interpreter otherwise) and a `mambasizer` that records its arguments.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_serve_sh_skips_the_reinstall_until_pyproject_changes(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "serve.sh", tmp_path / "scripts" / "serve.sh")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "calls.log"
    # pip install -e . is recorded (and "installs" the console script); anything else is Python.
    _executable(bin_dir / "python", f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
    echo "pip $*" >> "{log}"
    printf '#!/bin/sh\\necho "mambasizer $*" >> "{log}"\\n' > "{bin_dir}/mambasizer"
    chmod +x "{bin_dir}/mambasizer"
    exit 0
fi
exec "{sys.executable}" "$@"
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}

    def serve() -> list[str]:
        log.write_text("")
        result = subprocess.run(["bash", str(tmp_path / "scripts" / "serve.sh"), "--port", "8123"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return log.read_text().splitlines()

    first = serve()
    assert [line.split()[0] for line in first] == ["pip", "mambasizer"]
    assert "install -q -e ." in first[0]
    assert first[1] == "mambasizer serve --port 8123"
    assert serve() == ["mambasizer serve --port 8123"], "nothing changed: no reinstall"
    with open(tmp_path / "pyproject.toml", "a") as fh:
        fh.write("\n# a dependency changed\n")
    again = serve()
    assert len(again) == 2 and again[0].startswith("pip ") and again[1] == "mambasizer serve --port 8123"
    assert serve() == ["mambasizer serve --port 8123"]
    (bin_dir / "mambasizer").unlink()  # a broken venv is repaired even with a matching stamp
    assert serve()[0].startswith("pip ")
