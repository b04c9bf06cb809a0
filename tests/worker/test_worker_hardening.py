"""The standalone worker against hostile or careless callers: an oversize body refused
while it streams in, two Authorization headers, a CPU trial on a GPU worker, a caller that
goes away mid-trial, and no start beyond loopback without a token."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("torch")

import httpx
from fastapi.testclient import TestClient

from mambasizer.service.api.worker_cmd import is_loopback
from mambasizer.service.worker.app import MAX_BODY_BYTES, create_app
from mambasizer.service.worker.runner import RunnerConfig, TrialRunner
from samples import TINY
from worker_helpers import GatedBackend, SingleBackendFactory, serve, wait_for


def _runner(**config) -> TrialRunner:
    return TrialRunner(RunnerConfig(device="cpu", cpu_margin_bytes=0, **config))


def test_an_oversize_streamed_body_is_refused_before_it_is_all_sent():
    """Chunked upload (no Content-Length) of 64 MiB: the 413 comes back once the limit is
    passed, and the connection is closed rather than the rest being read."""
    with serve(create_app(_runner(), token_from_env=False)) as url:
        port = int(url.rsplit(":", 1)[1])
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            sock.sendall(b"POST /v1/trial HTTP/1.1\r\nHost: w\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (64 << 10, b" " * (64 << 10))
            sent = 0
            reply = b""
            sock.settimeout(0.05)
            while sent < 64 << 20:
                try:
                    sock.sendall(chunk)
                except OSError:  # the worker closed the connection: stop sending
                    break
                sent += 64 << 10
                try:
                    got = sock.recv(65536)
                except TimeoutError:
                    continue
                if got:
                    reply += got
                    break
            sock.settimeout(5)
            try:
                while b"\r\n\r\n" not in reply:
                    got = sock.recv(65536)
                    if not got:
                        break
                    reply += got
            except OSError:
                pass
        finally:
            sock.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"application/problem+json" in reply
    assert sent < 16 << 20, f"the worker kept reading: {sent} bytes sent before the refusal"


def test_a_declared_oversize_body_is_refused_unread():
    r = TestClient(create_app(_runner(), token_from_env=False)).post(
        "/v1/trial", content=b"x" * (MAX_BODY_BYTES + 1), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.headers["content-type"] == "application/problem+json"


def test_two_authorization_headers_are_a_400():
    for token in ("s3cret", None):
        c = TestClient(create_app(_runner(), token=token, token_from_env=False))
        r = c.post("/v1/trial", json={"request": TINY},
                   headers=[("Authorization", "Bearer s3cret"), ("Authorization", "Bearer s3cret")])
        assert r.status_code == 400, (token, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert "exactly one Authorization header" in r.json()["detail"]
    ok = TestClient(create_app(_runner(), token="s3cret", token_from_env=False)).post(
        "/v1/trial", json={"request": TINY}, headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and ok.json()["status"] == "ok"


def test_a_cuda_worker_refuses_cpu_trials():
    from mambasizer.service.worker.devices import CpuBackend

    gpu = SingleBackendFactory(CpuBackend(), has_cuda=True)  # a worker that sees a GPU
    for device in ("auto", "cuda"):
        runner = TrialRunner(RunnerConfig(device=device), backend_factory=gpu)
        with pytest.raises(ValueError, match="does not run CPU trials"):
            runner.resolve_device("cpu")
        assert runner.resolve_device("auto") == "cuda"
        r = TestClient(create_app(runner, token_from_env=False)).post("/v1/trial", json={"request": TINY, "trial": {"device": "cpu"}})
        assert r.status_code == 200 and r.json()["status"] == "rejected" and "does not run CPU trials" in r.json()["reason"]
    # A CPU worker (explicitly) still runs them.
    assert TrialRunner(RunnerConfig(device="cpu"), backend_factory=gpu).resolve_device("cpu") == "cpu"


def _post_and_leave(url: str, body: dict, started: threading.Event) -> None:
    """POST `body` to `url` and, once the trial has started allocating, close the connection
    mid-trial (the caller goes away)."""

    async def call_and_leave():
        async with httpx.AsyncClient() as c:
            task = asyncio.create_task(c.post(url, json=body, timeout=60))
            await asyncio.to_thread(started.wait, 10)
            task.cancel()  # closes the connection mid-trial
            try:
                await task
            except asyncio.CancelledError:
                pass

    asyncio.run(call_and_leave())


def test_a_caller_that_goes_away_cancels_its_trial():
    backend = GatedBackend(delay_s=1.0)  # 6 tensors: 6 s uncancelled
    runner = TrialRunner(RunnerConfig(queue_max=0), backend_factory=SingleBackendFactory(backend))
    with serve(create_app(runner, token_from_env=False)) as url:
        t0 = time.monotonic()
        _post_and_leave(f"{url}/v1/trial", {"request": TINY, "trial": {"timeout_s": 60}}, backend.started)
        assert wait_for(lambda: runner.status().get("cpu", {}).get("busy") is False, timeout=15)
        assert time.monotonic() - t0 < 15
    assert backend.live_bytes() == 0
    assert backend.allocations <= 2  # stopped after the allocation in flight, not after all 6


def test_worker_read_timeouts_parse():
    from mambasizer.service.cli import build_parser

    args = build_parser().parse_args(["worker", "--header-timeout", "3", "--body-timeout", "7.5"])
    assert (args.header_timeout, args.body_timeout) == (3.0, 7.5)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--header-timeout", "-1"])


@pytest.mark.parametrize("host,loop", [("127.0.0.1", True), ("::1", True), ("localhost", True), ("127.0.0.2", True),
                                       ("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("gpu-node", False)])
def test_loopback(host, loop):
    assert is_loopback(host) is loop


def test_the_worker_refuses_to_bind_beyond_loopback_without_a_token(monkeypatch):
    env = {k: v for k, v in __import__("os").environ.items() if k != "MAMBASIZER_WORKER_TOKEN"}
    out = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", "worker", "--host", "0.0.0.0", "--port", "1"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no token is configured" in lines[0] and "MAMBASIZER_WORKER_TOKEN" in lines[0]
    assert "Traceback" not in out.stderr


def test_a_client_that_leaves_the_api_aborts_the_remote_trial(monkeypatch):
    """Client -> API -> worker, all over real sockets: the client goes away mid-trial, the
    API cancels its call to the worker, and the worker stops and frees the trial."""
    from mambasizer.service.api.app import create_app as create_api
    from mambasizer.service.api.trials import TrialSettings

    backend = GatedBackend(delay_s=1.0)  # 6 tensors: 6 s uncancelled
    runner = TrialRunner(RunnerConfig(queue_max=0), backend_factory=SingleBackendFactory(backend))
    with serve(create_app(runner, token_from_env=False)) as worker_url:
        monkeypatch.setenv("MAMBASIZER_WORKER_URL", worker_url)
        with serve(create_api(trials=TrialSettings(enabled=True))) as api_url:
            t0 = time.monotonic()
            _post_and_leave(f"{api_url}/v1/plan", {**TINY, "trial": {"timeout_s": 60}}, backend.started)
            assert wait_for(lambda: runner.status().get("cpu", {}).get("busy") is False, timeout=15)
            assert time.monotonic() - t0 < 15  # long before the trial's own 60 s
    assert backend.live_bytes() == 0
    assert backend.allocations <= 2  # stopped after the allocation in flight, not after all 6
