"""The recommend benchmark (bench/run.py section 4): the latency of a full recommend (Kimi-K3 on
up to 64 H200s, every dimension of the issue enabled) and the plans it evaluates per second,
beside looping the public `plan()` over exactly the settings it searched. The p50 is taken with
the model's structure cached (layer costs, Pareto partitions: no answer is cached); the first
request for the model, which computes them, is shown beside it."""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

# The request: Kimi-K3, 512 requests at 128k, up to 64 H200s, every dimension enabled.
KIMI_K3_64: dict[str, Any] = {
    "model": {"preset": "kimi-k3"},
    "gpu": "h200",
    "gpus": [8, 16, 32, 64],
    "target": {"running_requests": 512, "context_length": 131072, "tokens_per_request": 16384},
    "objective": "fewest_gpus",
    "search": {"tp_size": [4, 8], "pp_size": [1, 2, 4, 8], "attn_dp_size": [1], "kv_cache_dtype": ["auto", "fp8_e4m3"],
               "mamba_ssm_dtype": ["float32", "bfloat16"], "speculative": None, "pp_partition": True, "mamba_cache": True},
    "limit": 10,
}


def _kimi_128() -> dict:
    body = copy.deepcopy(KIMI_K3_64)
    body["gpus"] = [8, 16, 32, 64, 128]
    body["search"]["pp_size"] = [1, 2, 4, 8, 16]
    return body


CASES: dict[str, Callable[[], dict]] = {
    "kimi-k3 <=64 h200": lambda: copy.deepcopy(KIMI_K3_64),
    "kimi-k3 <=128 h200": _kimi_128,
}


def bench_recommend(runs: int, quick: bool = False) -> dict:
    from mambasizer.service.planner import plan
    from mambasizer.service.recommend import layers, recommend, search

    out: dict = {}
    for name, make in CASES.items():
        body = make()
        # Cold: no layer costs, no Pareto partitions known yet (the first request for a model).
        layers._CACHE.clear()
        search._PARETO.clear()
        t = time.perf_counter()
        recommend(body)
        cold = time.perf_counter() - t
        lat = []
        for _ in range(runs):
            t = time.perf_counter()
            r = recommend(body)
            lat.append(time.perf_counter() - t)
        trace: list = []
        recommend(body, trace=trace)
        loop = []
        for _ in range(1 if quick else max(1, runs // 2)):
            t = time.perf_counter()
            for req in trace:
                plan(req)
            loop.append(time.perf_counter() - t)
        p50 = statistics.median(lat)
        loop_s = statistics.median(loop)
        out[name] = {
            "latency_s": {"median": p50, "min": min(lat), "max": max(lat)},
            "cold_s": cold,
            "plans_searched": r.searched,
            "plans_per_s_in_recommend": r.searched / p50,
            "loop_plan_s": loop_s,
            "loop_plan_per_s": len(trace) / loop_s if loop_s else 0.0,
            "best": None if not r.candidates else {"gpus": r.candidates[0].gpus, "meets_target": r.candidates[0].meets_target},
        }
    return out


def print_recommend(res: dict) -> None:
    for name, row in res.items():
        lat = row["latency_s"]
        print(
            f"  {name}: recommend p50 {lat['median'] * 1000:.0f} ms (min {lat['min'] * 1000:.0f}, max {lat['max'] * 1000:.0f}; "
            f"first request for the model {row['cold_s'] * 1000:.0f} ms); "
            f"{row['plans_searched']} plans, {row['plans_per_s_in_recommend']:,.0f} plans/s inside recommend; "
            f"looping plan() over the same {row['plans_searched']} settings: {row['loop_plan_s'] * 1000:.0f} ms "
            f"({row['loop_plan_per_s']:,.0f} plans/s); best: {row['best']}"
        )
