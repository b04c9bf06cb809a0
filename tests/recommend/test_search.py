"""The recommend search: brute force agrees on grids small enough to enumerate, every returned
candidate starts and meets what it claims when re-planned from its own flags, refusals carry
SGLang's reason, and the mamba/KV and mem_fraction_static choices are the exact ones."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path
from typing import get_args

import pytest

from mambasizer.schemas.plan import PlanError
from mambasizer.service import requests as wire
from mambasizer.service.planner import plan
from mambasizer.service.recommend import recommend
from mambasizer.service.recommend.partition import all_partitions
from mambasizer.service.solver import PlanInputError

KINDS = set(get_args(PlanError.model_fields["kind"].annotation))


def _replan(body: dict, c) -> object:
    req = {"model": body["model"], "sglang_args": c.sglang_args, "budget": {"gpu": body["gpu"]} if "gpu" in body else body["budget"]}
    if c.env:
        req["env"] = c.env
    return plan(wire.prepare(req).request)


def _meets(p, target: dict) -> bool:
    dp = p.resolved.attn_dp_size
    n, t = p.max_running_requests * dp, p.max_total_num_tokens * dp
    ok = True
    if "running_requests" in target:
        ok &= n >= target["running_requests"]
    if "context_length" in target:
        ok &= p.resolved.context_length >= target["context_length"] and p.max_total_num_tokens >= target["context_length"]
    if "tokens_per_request" in target:
        ok &= t >= target["tokens_per_request"] * target.get("running_requests", 1)
    return ok


def _brute_fewest(body: dict) -> tuple[int, int]:
    """Every (tp, pp, kv dtype), every contiguous partition, SGLang's default split and the least
    cache size that serves running_requests: (fewest GPUs meeting the target, most KV tokens there)."""
    s, target = body["search"], body["target"]
    budget = {"gpu": body["gpu"]} if "gpu" in body else body["budget"]
    R = target["running_requests"]
    best: tuple[int, int] | None = None
    layers = body["_layers"]
    for tp, pp, kv in product(s["tp_size"], s["pp_size"], s["kv_cache_dtype"]):
        if tp * pp not in body["gpus"]:
            continue
        sa = {"tp_size": tp, "pp_size": pp, "kv_cache_dtype": kv, "context_length": target["context_length"]}
        for parts in all_partitions(layers, pp):
            env = {"SGLANG_PP_LAYER_PARTITION": ",".join(map(str, parts))} if pp > 1 else {}
            p = plan({"model": body["model"], "server_args": sa, "budget": budget, "env": env})
            variants = [p]
            if p.mamba_ratio is not None:
                variants.append(plan({"model": body["model"], "server_args": {**sa, "max_mamba_cache_size": R * p.mamba_ratio}, "budget": budget, "env": env}))
            for q in variants:
                if q.feasible and _meets(q, target):
                    assert q.max_total_num_tokens is not None
                    key = (-tp * pp, q.max_total_num_tokens)
                    best = key if best is None or key > best else best
    assert best is not None, "the grid has no setting that meets the target: pick another case"
    return -best[0], best[1]


GRIDS = [
    {"model": {"preset": "kimi-linear-48b-a3b-instruct"}, "gpu": "h100", "gpus": [1, 2, 4], "_layers": 27,
     "search": {"tp_size": [1, 2, 4], "pp_size": [1, 2], "kv_cache_dtype": ["auto", "fp8_e4m3"]},
     "target": {"running_requests": 256, "context_length": 32768, "tokens_per_request": 8000}},
    {"model": {"preset": "nvidia-nemotron-3-nano-30b-a3b"}, "gpu": "h100", "gpus": [1, 2, 4], "_layers": 52,
     "search": {"tp_size": [1, 2], "pp_size": [1, 2], "kv_cache_dtype": ["auto", "fp8_e4m3"]},
     "target": {"running_requests": 600, "context_length": 65536, "tokens_per_request": 20000}},
    {"model": {"preset": "qwen3.5-35b-a3b"}, "gpu": "h200", "gpus": [1, 2, 4], "_layers": 40,
     "search": {"tp_size": [1, 2], "pp_size": [1, 2], "kv_cache_dtype": ["auto"]},
     "target": {"running_requests": 400, "context_length": 131072, "tokens_per_request": 4096}},
]


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: g["model"]["preset"])
def test_fewest_gpus_equals_brute_force_and_every_candidate_replans(grid):
    body = {k: v for k, v in grid.items() if not k.startswith("_")}
    body["objective"] = "fewest_gpus"
    got = recommend(body)
    want_gpus, want_tokens = _brute_fewest(grid)
    best = got.candidates[0]
    assert best.meets_target
    assert (best.gpus, best.plan.max_total_num_tokens) == (want_gpus, want_tokens)
    assert got.searched > 0
    for c in got.candidates + got.pareto:
        p = _replan(body, c)
        assert p.feasible
        assert p.model_dump() == c.plan.model_dump()
        assert c.meets_target == _meets(p, body["target"])
        assert c.gpus == p.resolved.tp_size * p.resolved.pp_size
        for check in c.targets.values():
            assert check.margin == check.achieved - check.required and check.met == (check.margin >= 0)
    # The Pareto front: no point dominates another.
    pts = [(c.gpus, c.max_running_requests, c.max_total_num_tokens) for c in got.pareto]
    for a in pts:
        assert not any(b != a and b[0] <= a[0] and b[1] >= a[1] and b[2] >= a[2] for b in pts)


def test_refused_counts_carry_sglang_reasons():
    body = {
        "model": {"preset": "qwen3.5-35b-a3b"}, "gpu": "h100", "gpus": [1, 2],
        "search": {"tp_size": [1, 2], "pp_size": [1, 2], "speculative": [None, "NEXTN"], "pp_partition": False},
        "target": {"running_requests": 64},
    }
    got = recommend(body)
    # PP with speculative decoding is refused by SGLang's own check (launch_rejected).
    assert got.refused.get("launch_rejected", 0) >= 1
    assert set(got.refused) <= KINDS | {k for k in got.refused if k.startswith("invalid ")}
    assert all(c.plan.feasible for c in got.candidates)
    big = recommend({"model": {"preset": "kimi-k3"}, "gpu": "h200", "server_args": {"pp_size": 1}, "search": {"tp_size": [1, 8]}})
    assert big.candidates == [] and big.refused == {"weights_do_not_fit": 2}
    assert big.why.startswith("No searched setting starts")


def test_balance_is_the_exhaustive_optimum():
    """most_requests with tokens_per_request: the cache size where neither pool idles, against a
    scan of every cache size."""
    model, budget, tpr = {"preset": "nemotron-h-8b-base-8k"}, {"rest_gib": 12.0}, 6000
    got = recommend({"model": model, "budget": budget, "objective": "most_requests", "target": {"tokens_per_request": tpr}, "limit": 1})
    c = got.candidates[0]
    served = min(c.max_running_requests, c.max_total_num_tokens // tpr)
    best = 0
    k = 1
    while True:
        p = plan({"model": model, "budget": budget, "server_args": {"max_mamba_cache_size": k}})
        if not p.feasible:
            if p.error.kind != "mamba_cache_too_small" and p.error.kind != "state_cache_serves_no_request":
                break
        else:
            best = max(best, min(p.max_running_requests, p.max_total_num_tokens // tpr))
        k += 1
    default = plan({"model": model, "budget": budget})
    best = max(best, min(default.max_running_requests, default.max_total_num_tokens // tpr))
    assert k > 50  # the scan covered a real range
    assert served == best


def test_least_cache_size_that_serves_the_requests():
    body = {"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "server_args": {"tp_size": 2}, "target": {"running_requests": 100}, "objective": "most_tokens", "limit": 1}
    c = recommend(body).candidates[0]
    K = c.plan.resolved.max_mamba_cache_size
    ratio = c.plan.mamba_ratio
    assert 100 * ratio == K and c.max_running_requests == 100
    fewer = plan({"model": body["model"], "budget": {"gpu": "h200"}, "server_args": {"tp_size": 2, "max_mamba_cache_size": K - 1}})
    assert fewer.max_running_requests < 100  # one slot less no longer serves the target
    default = plan({"model": body["model"], "budget": {"gpu": "h200"}, "server_args": {"tp_size": 2}})
    assert c.max_total_num_tokens > default.max_total_num_tokens


def test_mem_fraction_static_only_up_to_the_pre_capture_reserve():
    body = {"model": {"preset": "nvidia-nemotron-3-nano-30b-a3b"}, "gpu": "h100", "server_args": {"tp_size": 1},
            "target": {"running_requests": 13}, "search": {"mem_fraction_static": True, "mamba_cache": False}, "limit": 1}
    c = recommend(body).candidates[0]
    auto = plan({"model": body["model"], "budget": {"gpu": "h100"}}).resolved.mem_fraction_static
    assert c.meets_target and "--mem-fraction-static" in c.sglang_args
    mfs = c.plan.resolved.mem_fraction_static
    assert mfs > auto
    # SGLang's pre_capture_activation_reserve_mb on an 80 GB part: max(512 + 1.5 x 8192 + 1/8 x 1024, 10240) MiB.
    reserve_gib = max(512 + 1.5 * 8192 + 1024 / 8, 10240) / 1024
    assert c.plan.free_gib_before_load * (1 - mfs) >= reserve_gib
    assert c.plan.free_gib_before_load * (1 - (mfs + 0.001)) < reserve_gib
    without = recommend({**body, "search": {"mamba_cache": False}}).candidates[0]
    assert "--mem-fraction-static" not in without.sglang_args and not without.meets_target


@pytest.mark.parametrize("body,field", [
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "budget": {"rest_gib": 10.0}}, "gpu"),
    ({"model": {"preset": "qwen3.5-27b"}}, "gpu"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "server_args": {"tp_size": 2}, "search": {"tp_size": [1, 2]}}, "search.tp_size"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "gpus": [3], "search": {"tp_size": [2]}}, "gpus"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "search": {"tp_size": list(range(1, 20))}}, "search.tp_size"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "objective": "cheapest"}, "objective"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "v100"}, "gpu"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "mi325x"}, "gpu"),  # no confirmed capacity to recommend from
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "limit": 0}, "limit"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "target": {"running_requests": -1}}, "target.running_requests"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "sglang_args": ["--tp-size", "2"], "server_args": {}}, "sglang_args"),
    ({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "bogus": 1}, "bogus"),
])
def test_bad_input_names_the_field(body, field):
    with pytest.raises(PlanInputError) as exc:
        recommend(body)
    assert exc.value.field == field, exc.value.message


def test_sglang_args_are_the_base_and_stay_fixed():
    got = recommend({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "sglang_args": ["--tp-size", "4", "--disable-radix-cache"],
                     "search": {"pp_size": [1, 2]}, "target": {"running_requests": 100}})
    for c in got.candidates:
        assert c.tp_size == 4 and c.plan.resolved.disable_radix_cache
        assert "--disable-radix-cache" in c.sglang_args


def test_a_model_that_cannot_be_planned_is_the_requests_error_a_layout_it_refuses_is_counted():
    layout = json.loads((Path(__file__).resolve().parents[2] / "examples" / "explicit-layout.json").read_text())["model"]
    with pytest.raises(PlanInputError) as exc:
        recommend({"model": layout, "gpu": "h100"})  # an explicit layout has no weights to plan from the GPU alone
    assert exc.value.field == "model.layout"
    # Qwen3-Next asserts pp_size == 1 in SGLang 0.5.23: PP 2 is refused, PP 1 answers.
    got = recommend({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "gpu": "h200", "search": {"tp_size": [4], "pp_size": [1, 2]}})
    assert got.refused == {"invalid server_args.pp_size": 1}
    assert [c.pp_size for c in got.candidates] == [1]


def test_unmet_targets_rank_by_how_close_they_come():
    got = recommend({"model": {"preset": "qwen3.5-35b-a3b"}, "gpu": "h200", "gpus": [1, 2, 4], "search": {"tp_size": [1, 2, 4]},
                     "target": {"running_requests": 100000}, "limit": 5})
    assert not any(c.meets_target for c in got.candidates)
    reached = [c.targets["running_requests"].achieved for c in got.candidates]
    assert reached == sorted(reached, reverse=True) and reached[0] == max(c.max_running_requests for c in got.pareto)
    assert got.why.startswith("No searched setting meets every target")


def test_mem_fraction_static_search_that_cannot_run_says_why():
    got = recommend({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "search": {"mem_fraction_static": True}, "target": {"running_requests": 10}})
    assert any("--mem-fraction-static was not searched" in w and "multimodal" in w for w in got.warnings)
    assert all("--mem-fraction-static" not in c.sglang_args for c in got.candidates)


def test_most_requests_equals_brute_force_over_partitions_and_every_cache_size():
    """most_requests with tokens_per_request on PP 2: every contiguous partition x every cache
    size (and SGLang's default split), each planned by plan(), against the search."""
    model, budget, sa, tpr = {"preset": "kimi-linear-48b-a3b-instruct"}, {"rest_gib": 3.0}, {"tp_size": 2, "pp_size": 2}, 3000
    got = recommend({"model": model, "budget": budget, "server_args": sa, "objective": "most_requests", "target": {"tokens_per_request": tpr}, "limit": 1})
    c = got.candidates[0]
    best = 0
    scanned = 0
    for parts in all_partitions(27, 2):
        env = {"SGLANG_PP_LAYER_PARTITION": ",".join(map(str, parts))}
        default = plan({"model": model, "budget": budget, "server_args": sa, "env": env})
        if default.feasible:
            assert default.max_running_requests is not None and default.max_total_num_tokens is not None
            best = max(best, min(default.max_running_requests, default.max_total_num_tokens // tpr))
        k = 1
        while True:
            p = plan({"model": model, "budget": budget, "server_args": {**sa, "max_mamba_cache_size": k}, "env": env})
            scanned += 1
            if p.feasible:
                assert p.max_running_requests is not None and p.max_total_num_tokens is not None
                best = max(best, min(p.max_running_requests, p.max_total_num_tokens // tpr))
            elif p.error is not None and p.error.kind == "no_memory_for_kv":
                break  # a larger cache leaves even less
            k += 1
    assert scanned > 2000
    assert min(c.max_running_requests, c.max_total_num_tokens // tpr) == best


def test_a_large_search_stops_at_its_plan_bound_and_says_so(monkeypatch):
    from mambasizer.service.recommend import search

    monkeypatch.setattr(search, "MAX_PLANS", 40)
    got = recommend({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "search": {"tp_size": [1, 2, 4, 8], "pp_size": [1, 2, 4]},
                     "target": {"running_requests": 100}, "objective": "most_requests"})
    assert got.searched == 40
    assert any("stopped at its bound of 40 plans" in w for w in got.warnings)
    assert all(c.plan.feasible for c in got.candidates)


def _ep(c) -> int:
    a = c.sglang_args
    return int(a[a.index("--ep-size") + 1]) if "--ep-size" in a else 1


def test_ep_size_is_searched_refused_where_it_does_not_divide_tp_and_emitted():
    """search.ep_size: each value feeds the GPU-only weights (weights.py through gpu_budget.py);
    one that does not divide tp_size is counted refused, never returned."""
    body = {"model": {"preset": "kimi-k3"}, "gpu": "h200", "server_args": {"tp_size": 8, "pp_size": 8},
            "search": {"ep_size": [1, 8, 16], "pp_partition": False}, "target": {"running_requests": 64}, "objective": "most_tokens"}
    got = recommend(body)
    assert got.refused == {"invalid server_args.ep_size": 1}  # 16 does not divide tp 8
    best = got.candidates[0]
    assert best.sglang_args[best.sglang_args.index("--ep-size") + 1] == "8"
    assert [_ep(c) for c in got.candidates] == [8, 1]
    p = _replan(body, best)
    assert p.model_dump() == best.plan.model_dump()
    # Kimi-K3's experts over 8 EP ranks hold fewer bytes on the largest rank than over TP.
    ep1 = plan({"model": body["model"], "budget": {"gpu": "h200"}, "server_args": {"tp_size": 8, "pp_size": 8, "max_mamba_cache_size": best.max_mamba_cache_size}})
    assert max(s.weights_bytes or 0 for s in best.plan.stages) < max(s.weights_bytes or 0 for s in ep1.stages)
    assert best.max_total_num_tokens > ep1.max_total_num_tokens == got.candidates[1].max_total_num_tokens


def test_ep_size_that_costs_weights_loses_and_a_measured_budget_still_refuses_it():
    # Qwen3-Next's experts over EP hold more bytes on the largest rank: ep 1 keeps the most KV.
    got = recommend({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "gpu": "h200", "server_args": {"tp_size": 4},
                     "search": {"ep_size": [1, 2, 4, 8]}, "objective": "most_tokens"})
    assert got.refused == {"invalid server_args.ep_size": 1}
    tokens = {_ep(c): c.max_total_num_tokens for c in got.candidates}
    for ep, t in tokens.items():
        want = plan({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"gpu": "h200"}, "server_args": {"tp_size": 4, "ep_size": ep}})
        assert want.max_total_num_tokens == t
    assert sorted(tokens) == [1, 2, 4] and tokens[1] > tokens[2] > tokens[4]
    assert "--ep-size" not in got.candidates[0].sglang_args
    # A measured budget does not read ep_size, but SGLang still refuses ep 3 on tp 2.
    m = recommend({"model": {"preset": "qwen3.5-35b-a3b"}, "budget": {"rest_gib": 20.0}, "server_args": {"tp_size": 2}, "search": {"ep_size": [1, 2, 3]}})
    assert m.refused == {"invalid server_args.ep_size": 1}
    assert sorted(_ep(c) for c in m.candidates) == [1, 2]
    with pytest.raises(PlanInputError) as exc:
        recommend({"model": {"preset": "qwen3.5-35b-a3b"}, "gpu": "h200", "server_args": {"ep_size": 2}, "search": {"ep_size": [1, 2]}})
    assert exc.value.field == "search.ep_size"
