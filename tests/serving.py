"""Real server processes for the tests that need a socket: a free loopback port, the
`mambasizer` command, a process polled until it answers, and its stop.

Every test folder imports it by bare name (`from serving import ...`): pyproject's
`[tool.pytest.ini_options] pythonpath` puts tests/ on sys.path.

    srv = start_mambasizer("serve", "--deployments", str(path), cwd=tmp_path, log=tmp_path / "stderr.log")
    try:
        httpx.get(f"{srv.base}/metrics")
    finally:
        srv.stop()
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A loopback port nothing listens on at this moment (the kernel's pick, released)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def mambasizer_command() -> list[str]:
    """The `mambasizer` console script beside this interpreter; without one (a checkout that was
    not installed), the same entry point through `python -c`."""
    script = Path(sys.executable).with_name("mambasizer")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from mambasizer.service.cli import main; sys.exit(main())"]


def wait_http(url: str, proc: subprocess.Popen, log: Path, what: str, timeout_s: float = 90.0) -> None:
    """Poll `url` until it answers 200. If `proc` exits first or `timeout_s` passes, kill it and
    fail the test with the tail of its `log`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(10)
            pytest.fail(f"{what} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)


class Server:
    """A started `mambasizer serve` / `worker`: the process, its port, and the file its stderr
    goes to."""

    def __init__(self, proc: subprocess.Popen, port: int, log: Path, stderr) -> None:
        self.proc = proc
        self.port = port
        self.base = f"http://{LOOPBACK}:{port}"
        self.log = log
        self._stderr = stderr

    def stop(self, graceful_s: float = 0.0) -> None:
        """Kill the process (or, with `graceful_s`, SIGTERM it and wait that long first) and
        close its log."""
        if self.proc.poll() is None:
            if graceful_s:
                self.proc.terminate()
                try:
                    self.proc.wait(graceful_s)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(10)
        self._stderr.close()


def start_mambasizer(command: str, *args: str, cwd: Path, log: Path, ready: str = "/livez",
                     env: dict | None = None, timeout_s: float = 90.0,
                     address_space_bytes: int | None = None) -> Server:
    """`mambasizer COMMAND --host 127.0.0.1 --port <free> ARGS...` in `cwd` (not the repository:
    the installed package must be enough), stderr to `log`, returned once `ready` answers 200.
    `address_space_bytes` caps the process (and what it forks) with RLIMIT_AS, as a container's
    memory limit would."""
    port = free_port()
    stderr = log.open("w+")

    def cap() -> None:
        import resource

        assert address_space_bytes is not None
        resource.setrlimit(resource.RLIMIT_AS, (address_space_bytes, address_space_bytes))

    proc = subprocess.Popen(
        mambasizer_command() + [command, "--host", LOOPBACK, "--port", str(port), *args],
        stdout=subprocess.DEVNULL, stderr=stderr, cwd=cwd,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        preexec_fn=cap if address_space_bytes is not None else None,
    )
    server = Server(proc, port, log, stderr)
    try:
        wait_http(server.base + ready, proc, log, f"mambasizer {command}", timeout_s)
    except BaseException:  # pytest.fail included: the log is closed with the process
        stderr.close()
        raise
    return server
