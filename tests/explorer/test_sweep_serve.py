"""`POST /v1/sweep` on a real `mambasizer serve`: a 10,000-point sweep answers in full while the
server keeps answering probes, and CSV comes back over the wire. (That the planning runs off the
event loop is checked deterministically in tests/api/test_api_sweep.py.)"""

from __future__ import annotations

import threading
import time

import httpx

BIG = {
    "base": {"model": {"preset": "nemotron-h-8b-base-8k"}, "budget": {"rest_gib": 30.0}},
    "axes": [
        {"field": "server_args.max_running_requests", "values": list(range(1, 101))},
        {"field": "server_args.mamba_full_memory_ratio", "values": [round(0.1 + 0.05 * i, 2) for i in range(100)]},
    ],
}


def test_a_10000_point_sweep_while_probes_are_answered(server):
    done: dict = {}

    def sweep() -> None:
        resp = httpx.post(f"{server}/v1/sweep", json=BIG, timeout=120)
        done["at"] = time.monotonic()
        done["status"] = resp.status_code
        done["points"] = resp.json()["points"] if resp.status_code == 200 else resp.text

    worker = threading.Thread(target=sweep)
    worker.start()
    time.sleep(0.3)  # the sweep is under way: 10,000 plans take well over a second
    answered = []
    while worker.is_alive():
        assert httpx.get(f"{server}/livez", timeout=30).status_code == 200
        answered.append(time.monotonic())
        time.sleep(0.05)
    worker.join()
    assert done["status"] == 200 and done["points"] == 10_000, done
    assert answered and answered[0] < done["at"]


def test_csv_over_the_wire(server):
    body = {"base": BIG["base"], "axes": [{"field": "server_args.max_running_requests", "values": [8, 16, 32]}]}
    resp = httpx.post(f"{server}/v1/sweep", json=body, headers={"Accept": "text/csv"}, timeout=30)
    assert resp.status_code == 200 and resp.headers["content-type"] == "text/csv; charset=utf-8"
    lines = resp.text.splitlines()
    assert lines[0].startswith("server_args.max_running_requests,feasible,") and len(lines) == 4
    rows = httpx.post(f"{server}/v1/sweep", json=body, timeout=30).json()["rows"]
    for line, row in zip(lines[1:], rows, strict=True):
        assert line.split(",")[5] == str(row["max_running_requests"])
