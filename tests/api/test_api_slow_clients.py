"""Slow clients against a real `mambasizer serve` over real sockets: a connection that sends
nothing, one that trickles its headers and one that sends its body a byte at a time are all
closed once their read deadline passes (--header-timeout 1, --body-timeout 2 here), while
ordinary requests keep being answered."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from api_helpers import preset_request

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX sockets and signals")


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("mambasizer")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(tmp_path, *extra: str, env: dict | None = None):
    port = _free_port()
    stderr = (tmp_path / "stderr.log").open("w+")
    proc = subprocess.Popen(
        _console_script() + ["serve", "--host", "127.0.0.1", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=stderr, cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/livez", timeout=2).status_code == 200:
                return proc, port, stderr
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stderr.seek(0)
            proc.kill()
            pytest.fail(f"mambasizer serve did not start: {stderr.read()[-2000:]}")
        time.sleep(0.1)


def stop(proc, stderr) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)
    stderr.close()


class Slow:
    """One client connection; `step()` sends its next trickled byte and notices a close."""

    def __init__(self, port: int, opening: bytes, drip: bytes) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        if opening:
            self.sock.sendall(opening)
        self.drip = drip
        self.reply = b""
        self.closed_at: float | None = None

    def step(self, now: float) -> None:
        if self.closed_at is not None:
            return
        try:
            while True:
                got = self.sock.recv(4096)
                if not got:
                    self.closed_at = now
                    return
                self.reply += got
        except BlockingIOError:
            pass
        except OSError:
            self.closed_at = now
            return
        if self.drip:
            try:
                self.sock.send(self.drip)
            except OSError:
                self.closed_at = now


def test_slow_clients_are_closed_after_their_deadline(tmp_path):
    proc, port, stderr = start_serve(tmp_path, "--header-timeout", "1", "--body-timeout", "2")
    try:
        t0 = time.monotonic()
        silent = Slow(port, b"", b"")
        headers = Slow(port, b"POST /v1/plan HTTP/1.1\r\nHost: x\r\n", b"X")  # one header byte per tick
        body = Slow(port, b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", b" ")
        slow = [silent, headers, body]
        answered = 0
        while time.monotonic() - t0 < 8 and any(c.closed_at is None for c in slow):
            now = time.monotonic() - t0
            for c in slow:
                c.step(now)
            # Everyone else is still served while the slow ones are held.
            r = httpx.post(f"http://127.0.0.1:{port}/v1/plan", json=preset_request(tp_size=4), timeout=5)
            answered += r.status_code == 200
            time.sleep(0.25)
        for c in slow:
            c.sock.close()
        assert answered >= 3
        # Each is closed after its deadline, never before it, within a bounded time.
        assert silent.closed_at is not None and 0.9 <= silent.closed_at <= 4, silent.closed_at
        assert headers.closed_at is not None and 0.9 <= headers.closed_at <= 4, headers.closed_at
        assert body.closed_at is not None and 1.9 <= body.closed_at <= 5, body.closed_at
        assert silent.reply.startswith(b"HTTP/1.1 408") and headers.reply.startswith(b"HTTP/1.1 408")
        assert httpx.get(f"http://127.0.0.1:{port}/livez", timeout=5).status_code == 200
    finally:
        stop(proc, stderr)
    stderr_text = (tmp_path / "stderr.log").read_text()
    assert stderr_text.count('"event": "read_timeout"') + stderr_text.count('"event":"read_timeout"') >= 3, stderr_text[-2000:]


def test_a_slow_but_timely_client_is_answered(tmp_path):
    proc, port, stderr = start_serve(tmp_path, "--header-timeout", "2", "--body-timeout", "2")
    try:
        body = httpx.Request("POST", "http://x/v1/plan", json=preset_request(tp_size=4)).content
        raw = (b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            for i in range(0, len(raw), max(1, len(raw) // 5)):  # in pieces, over about a second
                s.sendall(raw[i:i + max(1, len(raw) // 5)])
                time.sleep(0.2)
            reply = b""
            while True:
                got = s.recv(65536)
                if not got:
                    break
                reply += got
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
    finally:
        stop(proc, stderr)


def test_bad_timeouts_are_one_line_exit_2(tmp_path):
    for argv, env, needle in (
        (["serve", "--header-timeout", "0"], {}, "--header-timeout"),
        (["serve", "--body-timeout", "inf"], {}, "--body-timeout"),
        (["serve", "--port", str(_free_port())], {"MAMBASIZER_BODY_TIMEOUT_S": "soon"}, "MAMBASIZER_BODY_TIMEOUT_S"),
    ):
        out = subprocess.run(_console_script() + argv, capture_output=True, text=True, timeout=60,
                             env={**os.environ, **env}, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr, out.stderr
