"""Pool processes die with the server (issue 25 item 8): after SIGKILL of `mambasizer serve`
while a heavy job runs, its fork server and heavy-pool workers are gone within a few seconds,
instead of staying behind as orphans (a busy worker never reads its closed task pipe, and the
deadline that would stop it lived in the dead server)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import psutil

from api_helpers import preset_request
from serving import start_mambasizer

HEAVY = json.loads((Path(__file__).resolve().parents[2] / "bench" / "requests" / "recommend-heavy-kimi-k3.json").read_text())


def _quietly(call) -> None:
    try:
        call()
    except httpx.HTTPError:
        pass  # the server is killed under it


def test_sigkill_of_the_server_takes_its_pool_with_it(tmp_path):
    srv = start_mambasizer("serve", "--heavy-workers", "2", "--request-deadline", "120", cwd=tmp_path,
                           log=tmp_path / "stderr.log", ready="/readyz")
    pids: list[int] = []
    try:
        body = {"base": preset_request(tp_size=4), "axes": [{"field": "server_args.tp_size", "values": [1, 2]}]}
        assert httpx.post(f"{srv.base}/v1/sweep", json=body, timeout=60).status_code == 200
        # A recommend that runs for a minute: one worker is busy in it when the server dies.
        threading.Thread(target=lambda: _quietly(lambda: httpx.post(f"{srv.base}/v1/recommend", json=HEAVY, timeout=120)), daemon=True).start()
        time.sleep(3)
        descendants = psutil.Process(srv.proc.pid).children(recursive=True)
        assert len(descendants) >= 3, descendants  # the fork server and two workers, at least
        for p in descendants:
            p.cpu_percent(None)
        time.sleep(1.0)
        assert any(p.cpu_percent(None) > 5 for p in descendants), "no worker is busy"
        pids = [p.pid for p in descendants]
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        alive = pids
        while time.monotonic() < deadline:
            alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
            if not alive:
                break
            time.sleep(0.1)
        assert not alive, [(p, psutil.Process(p).cmdline()[:3]) for p in alive if psutil.pid_exists(p)]
    finally:
        for pid in pids:  # never leave one behind, even on failure (they are re-parented to init)
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
        srv.stop()
