"""What bench/run.py and bench/sweep_bench.py share: the benchmark request files and
`mambasizer serve` as a subprocess on loopback. Its own module so neither script imports
the other.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

REQUESTS_DIR = REPO / "bench" / "requests"
# name -> file, in the order the issue lists them.
REQUEST_FILES = {
    "kimi-k3 tp8 pp8": "kimi-k3-tp8-pp8.json",
    "qwen3-next tp4 eagle": "qwen3-next-tp4-eagle.json",
    "nemotron-h-56b pp4 K=512": "nemotron-h-56b-pp4-mamba512.json",
}


def load_requests(names: list[str] | None = None) -> dict[str, dict]:
    out = {}
    for name, fname in REQUEST_FILES.items():
        if names and name not in names and fname not in names:
            continue
        out[name] = json.loads((REQUESTS_DIR / fname).read_text())
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command(host: str, port: int, extra: list[str]) -> list[str]:
    exe = Path(sys.executable).parent / "mambasizer"
    if exe.exists():
        base = [str(exe)]
    else:  # not installed as a script: the same entry point
        base = [sys.executable, "-c", "import sys; from mambasizer.service.cli import main; sys.exit(main())"]
    return base + ["serve", "--host", host, "--port", str(port), *extra]


class Server:
    """`mambasizer serve` as a subprocess on loopback; its output goes to a log file."""

    def __init__(self, cmd: list[str], port: int, workdir: Path):
        self.cmd, self.port = cmd, port
        self.log_path = workdir / "server.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.cmd, cwd=str(REPO), stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:  # any HTTP answer means it is listening
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/livez", timeout=2):
                    return self
            except urllib.error.HTTPError:
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"server not ready after 60 s:\n{self.log_path.read_text()[-3000:]}")

    def rss(self) -> int:
        """Resident bytes of the server process and any worker children."""
        import psutil

        assert self.proc is not None, "the server is not started"
        p = psutil.Process(self.proc.pid)
        total = p.memory_info().rss
        for c in p.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += c.memory_info().rss
        return total

    def rss_sampled(self, n: int = 5) -> int:
        vals = []
        for _ in range(n):
            vals.append(self.rss())
            time.sleep(0.05)
        return int(statistics.median(vals))

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
