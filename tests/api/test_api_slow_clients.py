"""Slow clients against a real `mambasizer serve` over real sockets: a connection that sends
nothing, one that trickles its headers and one that sends its body a byte at a time are all
closed once their read deadline passes (--header-timeout 1, --body-timeout 2 here), while
ordinary requests keep being answered."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import httpx
import pytest

from api_helpers import preset_request
from serving import free_port, mambasizer_command, start_mambasizer

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX sockets and signals")


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
    srv = start_mambasizer("serve", "--header-timeout", "1", "--body-timeout", "2", cwd=tmp_path, log=tmp_path / "stderr.log")
    port = srv.port
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
        # Each gets a 408 problem+json saying which deadline passed (the body too: issue 25).
        for c, what in ((silent, b"request headers"), (headers, b"request headers"), (body, b"request body")):
            assert c.reply.startswith(b"HTTP/1.1 408"), c.reply[:200]
            head, _, payload = c.reply.partition(b"\r\n\r\n")
            assert b"content-type: application/problem+json" in head and b"x-content-type-options: nosniff" in head
            problem = json.loads(payload)
            assert problem["status"] == 408 and what.decode() in problem["detail"] and problem["field"] == "request"
        assert httpx.get(f"http://127.0.0.1:{port}/livez", timeout=5).status_code == 200
    finally:
        srv.stop()
    stderr_text = srv.log.read_text()
    assert stderr_text.count('"event": "read_timeout"') + stderr_text.count('"event":"read_timeout"') >= 3, stderr_text[-2000:]


def test_a_slow_but_timely_client_is_answered(tmp_path):
    srv = start_mambasizer("serve", "--header-timeout", "2", "--body-timeout", "2", cwd=tmp_path, log=tmp_path / "stderr.log")
    port = srv.port
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
        srv.stop()


def test_bad_timeouts_are_one_line_exit_2(tmp_path):
    for argv, env, needle in (
        (["serve", "--header-timeout", "0"], {}, "--header-timeout"),
        (["serve", "--body-timeout", "inf"], {}, "--body-timeout"),
        (["serve", "--port", str(free_port())], {"MAMBASIZER_BODY_TIMEOUT_S": "soon"}, "MAMBASIZER_BODY_TIMEOUT_S"),
    ):
        out = subprocess.run(mambasizer_command() + argv, capture_output=True, text=True, timeout=60,
                             env={**os.environ, **env}, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr, out.stderr
