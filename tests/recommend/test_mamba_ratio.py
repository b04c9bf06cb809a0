"""`--mamba-full-memory-ratio` is never a better answer than `--max-mamba-cache-size`.

In SGLang 0.5.23's `_handle_max_mamba_cache` the ratio only picks the slot count K (its
automatic branch: K = (R x r / (1 + r) - ...) // per-slot bytes); everything after it (the
speculative intermediate rows, the (K + 1) state rows charged, the KV tokens, the requests)
reads K and the rest R alone, through the same expressions as the explicit branch, where
K = max_mamba_cache_size // attn_dp. So every ratio's plan is the plan of the cache size
K x attn_dp, and the search, which sets the cache size, can reach every outcome a ratio can.
1. Generated cases: each ratio on a grid re-planned as that cache size gives the same figures.
2. The recommend answer (running_requests met with the most KV tokens; the most requests) is
   never worse than any ratio on the grid.
"""

from __future__ import annotations

import random

from mambasizer.service.planner import plan
from mambasizer.service.recommend import recommend
from mambasizer.service.solver import PlanInputError

RATIOS = [0.02, 0.1, 0.25, 0.5, 0.9, 1.0, 1.5, 3.0, 9.0, 50.0]
PRESETS = [
    ("qwen3.5-35b-a3b", "h100"), ("nvidia-nemotron-3-nano-30b-a3b", "h100"), ("kimi-linear-48b-a3b-instruct", "h200"),
    ("nemotron-h-8b-base-8k", "h100"), ("falcon-h1-7b", "h100"), ("granite-4.0-h-small", "h200"), ("qwen3.5-27b", "h200"),
]


def _cases(n: int):
    rng = random.Random(20261201)
    for _ in range(n):
        preset, gpu = rng.choice(PRESETS)
        tp = rng.choice([1, 2, 4])
        sa: dict = {"tp_size": tp, "pp_size": rng.choice([1, 1, 2])}
        if rng.random() < 0.3:
            sa["attn_dp_size"] = rng.choice([d for d in (1, 2, 4) if tp % d == 0])
        if rng.random() < 0.25:
            sa["disable_radix_cache"] = True
        if rng.random() < 0.25:
            sa["kv_cache_dtype"] = "fp8_e4m3"
        if rng.random() < 0.3 and preset.startswith("qwen3.5"):
            sa["speculative_algorithm"] = "NEXTN"  # the intermediate rows charged on K // ratio requests
            sa["pp_size"] = 1
        budget = {"gpu": gpu} if rng.random() < 0.6 else {"rest_gib": round(rng.uniform(2.0, 40.0), 2)}
        try:
            plan({"model": {"preset": preset}, "server_args": sa, "budget": budget})
        except PlanInputError:
            continue  # a layout SGLang refuses outright (e.g. PP on Falcon-H1): no split to compare
        yield {"preset": preset}, sa, budget


def _figures(p) -> tuple:
    return (p.max_running_requests, p.max_total_num_tokens, p.max_mamba_cache_size, p.binding_limit, tuple((s.kv_tokens, s.kv_budget_bytes, s.charged_mamba_bytes) for s in p.stages))


def test_every_ratio_plan_is_the_plan_of_a_cache_size():
    compared = 0
    for model, sa, budget in _cases(60):
        dp = sa.get("attn_dp_size", 1)
        for r in RATIOS:
            p = plan({"model": model, "server_args": {**sa, "mamba_full_memory_ratio": r}, "budget": budget})
            if not p.feasible:
                continue
            q = plan({"model": model, "server_args": {**sa, "max_mamba_cache_size": p.max_mamba_cache_size * dp}, "budget": budget})
            assert q.feasible and _figures(q) == _figures(p), (model, sa, budget, r)
            compared += 1
    assert compared > 200


def test_the_cache_size_answer_is_never_worse_than_any_ratio():
    checked = 0
    for model, sa, budget in _cases(25):
        dp = sa.get("attn_dp_size", 1)
        ratio_plans = [p for r in RATIOS if (p := plan({"model": model, "server_args": {**sa, "mamba_full_memory_ratio": r}, "budget": budget})).feasible]
        if not ratio_plans:
            continue
        where = {"gpu": budget["gpu"]} if "gpu" in budget else {"budget": budget}
        # The most requests any ratio starts, and the most KV tokens at half of that.
        most = recommend({"model": model, "server_args": sa, **where, "objective": "most_requests", "limit": 1}).candidates[0]
        assert most.max_running_requests >= max(p.max_running_requests * dp for p in ratio_plans), (model, sa, budget)
        want = max(1, max(p.max_running_requests * dp for p in ratio_plans) // 2)
        best = recommend({"model": model, "server_args": sa, **where, "target": {"running_requests": want}, "objective": "most_tokens", "limit": 1}).candidates[0]
        assert best.meets_target
        for p in ratio_plans:
            if p.max_running_requests * dp >= want:
                assert best.max_total_num_tokens >= p.max_total_num_tokens * dp, (model, sa, budget, p.resolved.mamba_full_memory_ratio)
        checked += 1
    assert checked > 15
