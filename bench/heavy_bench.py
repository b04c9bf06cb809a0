"""Heavy requests against a real `mambasizer serve` (issue 17): what eight heavy recommends do
to `/livez` and `/v1/plan`, and what the heavy-work pool sustains. Used by bench/run.py
(`--skip-heavy` leaves it out); runnable alone:

    python bench/heavy_bench.py [--seconds 6] [--requests 24]

1. Probes: one client each on `/livez` and on `/v1/plan` (the Qwen3-Next TP 4 GPU-only body),
   a request every 50 ms, first with nothing else running (idle), then while eight
   concurrent Kimi-K3 recommends over 512 settings (the reliability review's body) run into
   the pool's deadline. p50 / p99 / max of each, side by side in one run.
2. Throughput through the pool: `requests` ordinary recommends (Kimi-K3 up to 64 H200s) at
   concurrency 8 and 1,000-point sweeps at concurrency 4, against the same work done in this
   process one at a time: the ratio is what the pool's processes add on this machine's cores.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

WORKERS, QUEUE, DEADLINE_S = 2, 8, 10.0
PLAN_BODY = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}}
# The reliability review's body, one file for this benchmark and tests/api/test_api_heavy_live.py.
HEAVY_RECOMMEND = json.loads((REPO / "bench" / "requests" / "recommend-heavy-kimi-k3.json").read_text())


def _stats(lat: list[float]) -> dict:
    lat = sorted(lat)
    q = lambda p: lat[min(len(lat) - 1, max(0, round(p / 100 * len(lat)) - 1))]  # noqa: E731
    return {"n": len(lat), "p50_ms": q(50) * 1e3, "p99_ms": q(99) * 1e3, "max_ms": lat[-1] * 1e3}


class Probe(threading.Thread):
    def __init__(self, host: str, port: int, method: str, path: str, body: bytes | None) -> None:
        super().__init__(daemon=True)
        self.args = (host, port, method, path, body)
        self.lat: list[float] = []
        self.bad: list[int] = []
        self.halt = threading.Event()

    def run(self) -> None:
        host, port, method, path, body = self.args
        conn = http.client.HTTPConnection(host, port, timeout=10)
        while not self.halt.is_set():
            t = time.perf_counter()
            conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
            resp = conn.getresponse()
            resp.read()
            self.lat.append(time.perf_counter() - t)
            if resp.status != 200:
                self.bad.append(resp.status)
            self.halt.wait(0.05)
        conn.close()


def _probe(host: str, port: int, seconds: float, during=None) -> dict:
    probes = {"livez": Probe(host, port, "GET", "/livez", None),
              "plan": Probe(host, port, "POST", "/v1/plan", json.dumps(PLAN_BODY).encode())}
    for p in probes.values():
        p.start()
    extra = None
    if during is None:
        time.sleep(seconds)
    else:
        extra = during()
    for p in probes.values():
        p.halt.set()
        p.join(15)
    out: dict[str, Any] = {k: {**_stats(p.lat), "non_200": len(p.bad)} for k, p in probes.items()}
    if extra is not None:
        out["load"] = extra
    return out


def _post_many(host: str, port: int, path: str, body: dict, n: int, conc: int) -> dict:
    data = json.dumps(body).encode()
    lock = threading.Lock()
    todo = [n]
    statuses: list[int] = []
    times: list[float] = []

    def worker() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=120)
        while True:
            with lock:
                if todo[0] == 0:
                    break
                todo[0] -= 1
            t = time.perf_counter()
            conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            with lock:
                times.append(time.perf_counter() - t)
                statuses.append(resp.status)
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"requests": n, "concurrency": conc, "wall_s": wall, "per_s": n / wall,
            "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
            "latency_s": {"median": statistics.median(times), "max": max(times)}}


def bench_heavy(*, seconds: float = 6.0, requests: int = 24, serve_args: list[str] | tuple[str, ...] = (),
                deadline_s: float = DEADLINE_S) -> dict:
    from bench.harness import Server, free_port, load_requests, serve_command
    from bench.recommend_bench import KIMI_K3_64
    from bench.sweep_bench import cases
    from mambasizer.service.recommend import recommend
    from mambasizer.service.sweep import run_sweep

    sweep_body = next(body for label, body in cases(load_requests(), 1000) if label.startswith("qwen3-next"))
    port = free_port()
    # One client sends every request here, so it is given the whole pool as its share
    # (--heavy-per-client; the fair-share bound has its own test, tests/api/test_api_heavy_fair_share.py).
    args = ["--heavy-workers", str(WORKERS), "--heavy-queue", str(QUEUE), "--heavy-per-client", str(WORKERS + QUEUE),
            "--request-deadline", str(deadline_s), *serve_args]
    res: dict[str, Any] = {"workers": WORKERS, "queue": QUEUE, "deadline_s": deadline_s}
    with tempfile.TemporaryDirectory() as tmp, Server(serve_command("127.0.0.1", port, args), port, Path(tmp)):
        host = "127.0.0.1"
        _post_many(host, port, "/v1/recommend", KIMI_K3_64, 2, 2)  # warm both processes
        res["idle"] = _probe(host, port, seconds)
        res["eight_heavy"] = _probe(host, port, seconds, during=lambda: _post_many(host, port, "/v1/recommend", HEAVY_RECOMMEND, 8, 8))
        res["recommend"] = _post_many(host, port, "/v1/recommend", KIMI_K3_64, requests, 8)
        res["sweep"] = _post_many(host, port, "/v1/sweep", sweep_body, max(4, requests // 3), 4)
    # The same work in this process, one at a time.
    t = time.perf_counter()
    for _ in range(max(2, requests // 4)):
        recommend(KIMI_K3_64)
    res["recommend"]["serial_per_s"] = max(2, requests // 4) / (time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(3):
        run_sweep(json.loads(json.dumps(sweep_body)))
    res["sweep"]["serial_per_s"] = 3 / (time.perf_counter() - t)
    return res


def print_heavy(res: dict) -> None:
    print(f"heavy-work pool: {res['workers']} processes, queue {res['queue']}, deadline {res['deadline_s']:g} s")
    print(f"  {'probe (every 50 ms)':<24} {'idle p50/p99/max ms':>26} {'8 heavy recommends p50/p99/max ms':>36}")
    for k in ("livez", "plan"):
        a, b = res["idle"][k], res["eight_heavy"][k]
        print(f"  {k:<24} {a['p50_ms']:>8.2f} {a['p99_ms']:>8.2f} {a['max_ms']:>8.2f} {b['p50_ms']:>11.2f} {b['p99_ms']:>11.2f} {b['max_ms']:>11.2f}"
              f"   (n {a['n']}/{b['n']}, non-200 {a['non_200']}/{b['non_200']})")
    load = res["eight_heavy"]["load"]
    print(f"  the 8 heavy recommends: {load['statuses']} in {load['wall_s']:.1f} s (each at most {load['latency_s']['max']:.1f} s)")
    for k in ("recommend", "sweep"):
        r = res[k]
        print(f"  {k:<9} through the pool: {r['per_s']:.2f}/s at concurrency {r['concurrency']} ({r['statuses']}), "
              f"in-process one at a time {r['serial_per_s']:.2f}/s: ratio {r['per_s'] / r['serial_per_s']:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds of the idle probe phase")
    ap.add_argument("--requests", type=int, default=24, help="ordinary recommends in the throughput phase")
    args = ap.parse_args(argv)
    res = bench_heavy(seconds=args.seconds, requests=args.requests)
    print_heavy(res)
    print(json.dumps({"livez_p99_ms_8_heavy": round(res["eight_heavy"]["livez"]["p99_ms"], 2),
                      "plan_p99_ms_8_heavy": round(res["eight_heavy"]["plan"]["p99_ms"], 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
