"""check-log cannot take the service down (issue 25): a real `mambasizer serve` under the same
6 GiB address-space cap, deadline and pool as test_api_heavy_live.py (its helpers are reused),
a second client probing `/livez` every 100 ms, and the check-log bodies the reliability review
used, four clients at a time: a 2 KB JSON body whose config's `ignored_layers` holds a catastrophic-backtracking `re:`
pattern, one holding 10,000 globs that match nothing, the same pattern in a pair's side, a
client that leaves while its check-log runs, and eight concurrent large text/plain logs.

Each must be answered with 200 or a problem+json 422 / 429 / 503 within the server's deadline
(the large logs: the deadline once their body is in, so the bound here adds the upload),
`/livez` p99 must stay under 250 ms, the pool's CPU must fall idle within 2 s of a client
leaving, and the server's memory must come back near its baseline.

The large logs are the review's 8 x 50 MB, built in memory and sent from a child process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from mambasizer.service.api.checklog import EXAMPLE_LOG
from mambasizer.service.presets import PRESETS
from serving import start_mambasizer
from test_api_heavy_live import (
    CAP,
    DEADLINE_S,
    LIVEZ_P99_S,
    QUEUE,
    WORKERS,
    LivenessProbe,
    _assert_bounded,
    _concurrently,
    _metric,
    _rss,
    _settle,
)

CRAFTED = "re:(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)Z$"
LARGE_MB = 50
LARGE_COUNT = 8


def _thawed(value: Any) -> Any:
    if hasattr(value, "items"):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thawed(v) for v in value]
    return value


def _config(ignored: list[str]) -> dict:
    """Qwen3.6-27B's config.json as a block-FP8 checkpoint leaving `ignored` unquantized: the
    weights estimate matches every module name against the list."""
    return {
        **_thawed(PRESETS["qwen3.6-27b"].hf_config),
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128],
                                "activation_scheme": "dynamic", "ignored_layers": ignored},
    }


CRAFTED_BODY = {"log": EXAMPLE_LOG, "hf_config": _config([CRAFTED]), "gpu": "h200"}
GLOBS_BODY = {"log": EXAMPLE_LOG, "hf_config": _config([f"model.layers.*.no_such_module_{i}.*" for i in range(10_000)]), "gpu": "h200"}
# The slowest list a client may send (4096 entries of 190 characters, past the compiled-list
# cache's size so every plan compiles it): with linear-time matching the crafted pattern answers
# at once, so this is what keeps a job busy long enough for its client to leave.
SLOW_BODY = {"log": EXAMPLE_LOG, "gpu": "h200",
             "hf_config": _config([f"model.layers.*.no_such_module_{i:05d}_" + "x" * 160 + ".*" for i in range(4096)])}
PAIR_BODY = {"prefill": {"log": EXAMPLE_LOG}, "decode": {"log": EXAMPLE_LOG, "hf_config": _config([CRAFTED])}}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator:
    tmp: Path = tmp_path_factory.mktemp("checklog-heavy")
    srv = start_mambasizer(
        "serve", "--heavy-workers", str(WORKERS), "--heavy-queue", str(QUEUE), "--request-deadline", str(DEADLINE_S),
        cwd=tmp, log=tmp / "stderr.log", ready="/readyz", address_space_bytes=CAP,
    )
    try:
        yield srv
    finally:
        srv.stop()


def _pool_cpu_s(pid: int) -> float:
    """CPU seconds used so far by the server's forked processes (the pool and its fork server)."""
    total = 0.0
    for child in psutil.Process(pid).children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _idle_within(pid: int, seconds: float) -> float | None:
    """Seconds until the pool burns under 5 % of a core over a 0.25 s window, or None."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        before = _pool_cpu_s(pid)
        time.sleep(0.25)
        if _pool_cpu_s(pid) - before < 0.0125:
            return time.monotonic() - start
    return None


@pytest.mark.parametrize("body", [CRAFTED_BODY, GLOBS_BODY, PAIR_BODY], ids=["crafted-re", "10000-globs", "pair-crafted-re"])
def test_a_hostile_ignore_list_is_bounded(server, body):
    base = server.base
    _settle(base)
    assert len(json.dumps(CRAFTED_BODY)) < 2 * len(EXAMPLE_LOG) + 8192
    results: list = []
    with LivenessProbe(base) as probe:
        # Four clients at a time, round after round until the probe has a hundred samples (a
        # p99 of fewer extrapolates past the slowest one).
        started = time.monotonic()
        while len(probe.latencies) < 100 and time.monotonic() - started < 40:
            results += _concurrently(base, "/v1/check-log", body, 4)
    _assert_bounded(results)
    assert not probe.failures and probe.p99() < LIVEZ_P99_S, sorted(probe.latencies)[-5:]
    assert server.proc.poll() is None
    # Whatever the answer, nothing of it keeps running.
    assert _idle_within(server.proc.pid, 2.0) is not None, "the pool still burns CPU after the answer"


def test_a_disconnected_check_log_stops(server):
    base = server.base
    _settle(base)
    baseline = _rss(server.proc.pid)
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=1.0) as c:
        c.post(base + "/v1/check-log", json=SLOW_BODY)  # the client gives up after 1 s
    left = time.monotonic()
    idle = _idle_within(server.proc.pid, 2.0)
    assert idle is not None, "the pool still burns CPU 2 s after the client left"
    assert time.monotonic() - left <= 2.5
    assert _metric(base, "mambasizer_inflight") == 0
    _settle(base)
    assert _rss(server.proc.pid) < baseline + (200 << 20), (baseline >> 20, _rss(server.proc.pid) >> 20)


# The eight uploads run in a child process, so the probe's latencies are the server's alone
# (eight threads pushing 192 MB through this process would stall the probe's own thread).
UPLOADER = """
import json, sys, threading, time
import httpx
base, mb, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
head = sys.stdin.buffer.read()
decode = b"[2026-12-01 10:01:00 TP0] Decode batch. #running-req: 32, #token: 123456, token usage: 0.07, cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0\\n"
body = head + decode * (mb * 1_000_000 // len(decode))
out = [None] * count
def one(i):
    t = time.perf_counter()
    with httpx.Client(timeout=120) as c:
        r = c.post(base + "/v1/check-log", content=body, headers={"content-type": "text/plain"})
    out[i] = {"seconds": time.perf_counter() - t, "status": r.status_code, "type": r.headers.get("content-type"), "body": r.json()}
threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
for t in threads: t.start()
for t in threads: t.join(180)
print(json.dumps(out))
"""


def test_eight_large_logs(server):
    base = server.base
    _settle(base)
    httpx.post(base + "/v1/check-log", content=EXAMPLE_LOG.encode(), headers={"content-type": "text/plain"}, timeout=30)
    baseline = _rss(server.proc.pid)
    with LivenessProbe(base) as probe:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", UPLOADER, base, str(LARGE_MB), str(LARGE_COUNT)],
                              input=EXAMPLE_LOG.encode(), capture_output=True, timeout=240)
        wall = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    statuses = sorted(r["status"] for r in out)
    assert not probe.failures and probe.p99() < LIVEZ_P99_S, (sorted(probe.latencies)[-5:], statuses)
    for r in out:
        assert r["status"] in (200, 429, 503), r
        if r["status"] == 200:
            kv = r["body"]["ranks"][0]["figures"]["kv_tokens"]
            assert kv["logged"] == kv["predicted"] == 1_788_366
        else:
            assert r["type"] == "application/problem+json" and r["body"]["detail"]
    # The eight bodies upload together; each answer comes within the deadline once its body is in.
    assert wall <= 90, (wall, statuses, [round(r["seconds"], 1) for r in out])
    assert statuses.count(200) >= 1, statuses
    _settle(base)
    assert server.proc.poll() is None
    assert _rss(server.proc.pid) < baseline + (200 << 20), (baseline >> 20, _rss(server.proc.pid) >> 20)
