"""Recommend across GPU kinds (issue 18 item 6): every candidate is the plan of its own flags on
its own GPU, each kind's candidates are exactly what a recommend on that GPU alone returns,
`cheapest` and `fewest_gpus` rank by the prices and the GPU counts, ties are decided as
documented, and the kinds share one search's bounds."""

from __future__ import annotations

import json

import pytest

from mambasizer.schemas.recommend import MAX_GPU_KINDS
from mambasizer.service import requests as wire
from mambasizer.service.api.recommend import THREE_GPUS
from mambasizer.service.planner import plan
from mambasizer.service.recommend import recommend, response_json
from mambasizer.service.solver import PlanInputError, gpus

PRICES = THREE_GPUS["gpu_prices"]


def _direct(body: dict, c) -> object:
    """POST /v1/plan's answer for the candidate's flags on its GPU."""
    req = {"model": body["model"], "sglang_args": c.sglang_args, "budget": {"gpu": c.gpu}}
    if c.env:
        req["env"] = c.env
    return plan(wire.prepare(req).request)


def _same_setting(c) -> tuple:
    return (tuple(c.sglang_args), tuple(sorted(c.env.items())), json.dumps(c.plan.model_dump(), sort_keys=True))


@pytest.fixture(scope="module")
def three():
    return recommend(THREE_GPUS)


def test_every_candidate_is_the_direct_plan_on_its_gpu(three):
    assert {c.gpu for c in three.candidates} == {"h200", "b200", "mi300x"}
    assert len(three.candidates) == THREE_GPUS["limit"]
    for c in three.candidates + three.pareto:
        p = _direct(THREE_GPUS, c)
        assert p.feasible and p.model_dump() == c.plan.model_dump()
        assert c.plan.resolved.gpu == c.gpu
        assert c.cost_per_hour == round(c.gpus * PRICES[c.gpu], 6)
    # The AMD part is planned under its own resolution (aiter, x 0.85 above 8k context):
    # Qwen3-Next TP 4 on MI300X resolves mem_fraction_static 0.73525 (issue 18).
    mi = next(c for c in three.candidates if c.gpu == "mi300x" and c.tp_size == 4)
    assert mi.plan.resolved.mem_fraction_static == pytest.approx(0.73525)


def test_each_kind_is_searched_exactly_as_that_gpu_alone(three):
    """The multi-kind answer holds, for each kind, the settings of a single-GPU recommend of
    the same request (no limit cut), and its counts are their sums."""
    wide = recommend({**THREE_GPUS, "limit": 100})
    searched, refused = 0, {}
    for name in ("h200", "b200", "mi300x"):
        alone = recommend({**THREE_GPUS, "gpu": name, "gpu_prices": {name: PRICES[name]}, "limit": 100})
        assert {_same_setting(c) for c in wide.candidates if c.gpu == name} == {_same_setting(c) for c in alone.candidates}
        searched += alone.searched
        for k, v in alone.refused.items():
            refused[k] = refused.get(k, 0) + v
    assert wide.searched == three.searched == searched == 44
    assert wide.refused == dict(sorted(refused.items()))


def test_cheapest_picks_by_the_prices(three):
    """4 MI300X at 2.80 (11.20 per hour) beat 2 B200 at 5.90 (11.80): the cheapest of every
    candidate that meets the target. At 3.00 per MI300X (12.00) the two B200 win."""
    met = [c for c in recommend({**THREE_GPUS, "limit": 100}).candidates if c.meets_target]
    best = three.candidates[0]
    assert best.meets_target and (best.gpu, best.gpus, best.cost_per_hour) == ("mi300x", 4, 11.2)
    assert best.cost_per_hour == min(c.cost_per_hour for c in met)
    costs = [c.cost_per_hour for c in three.candidates]
    assert costs == sorted(costs)
    assert three.why.startswith("4 mi300x GPUs per replica (tp 4 x pp 1) at 11.20 per hour is the setting with the lowest "
                                "cost per hour of 3 GPU kinds (h200, b200, mi300x) that meets every target")
    dearer = recommend({**THREE_GPUS, "gpu_prices": {**PRICES, "mi300x": 3.0}})
    b = dearer.candidates[0]
    assert (b.gpu, b.gpus, b.cost_per_hour, b.tp_size) == ("b200", 2, 11.8, 2)
    assert b.max_total_num_tokens == 5_299_299 and b.max_total_num_tokens >= 256 * 16384


def test_fewest_gpus_compares_kinds_and_breaks_ties_by_cost_then_tokens():
    # Only B200 serves the target on 2 GPUs (H200 and MI300X miss the tokens there).
    fewest = recommend({**THREE_GPUS, "objective": "fewest_gpus"}).candidates[0]
    assert (fewest.gpu, fewest.gpus) == ("b200", 2) and fewest.meets_target
    body = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "gpu": ["h200", "b200"], "search": {"tp_size": [1, 2, 4]},
            "target": {"running_requests": 64, "context_length": 32768}}
    # Both meet at 2 GPUs: unpriced, the more KV tokens (B200's 5,667,889 against 3,377,655) ...
    unpriced = recommend(body).candidates[:2]
    assert [(c.gpu, c.gpus, c.max_total_num_tokens) for c in unpriced] == [("b200", 2, 5_667_889), ("h200", 2, 3_377_655)]
    # ... priced, the cheaper (7.00 against 11.80 per hour), whatever the tokens.
    priced = recommend({**body, "gpu_prices": {"h200": 3.5, "b200": 5.9}}).candidates[:2]
    assert [(c.gpu, c.gpus, c.cost_per_hour) for c in priced] == [("h200", 2, 7.0), ("b200", 2, 11.8)]


def test_a_full_tie_goes_to_the_gpu_listed_first():
    """H100 and H800 read the same 81,559 MiB and resolve alike: every plan is identical."""
    body = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "search": {"tp_size": [1, 2, 4]},
            "target": {"running_requests": 64, "context_length": 32768}}
    a = recommend({**body, "gpu": ["h800", "h100"]})
    b = recommend({**body, "gpu": ["h100", "h800"]})
    assert [c.gpu for c in a.candidates] == ["h800", "h100"] and [c.gpu for c in b.candidates] == ["h100", "h800"]
    assert a.candidates[0].plan.model_dump() | {"resolved": None, "device": None} == a.candidates[1].plan.model_dump() | {"resolved": None, "device": None}
    assert a.candidates[0].max_total_num_tokens == 1_771_596


def test_one_gpu_as_a_list_or_two_spellings_is_the_single_gpu_answer():
    body = {"model": {"preset": "qwen3.5-35b-a3b"}, "gpus": [1, 2], "search": {"tp_size": [1, 2]}, "target": {"running_requests": 100}}
    single = response_json(recommend({**body, "gpu": "h200"}))
    assert response_json(recommend({**body, "gpu": ["h200"]})) == single
    assert response_json(recommend({**body, "gpu": ["h200", "H200", "h200-sxm"]})) == single
    got = json.loads(single)
    assert {c["gpu"] for c in got["candidates"]} == {"h200"} and all(c["cost_per_hour"] is None for c in got["candidates"])
    assert "h200 GPUs" not in got["why"]  # one unpriced kind: the text reads as before


def test_a_priced_budget_names_its_gpu_and_cost():
    got = recommend({"model": {"preset": "qwen3.5-35b-a3b"}, "budget": {"gpu": "b200"}, "gpu_prices": {"b200": 6.0},
                     "search": {"tp_size": [1, 2]}, "objective": "cheapest", "target": {"running_requests": 100}})
    best = got.candidates[0]
    assert (best.gpu, best.gpus, best.cost_per_hour) == ("b200", 1, 6.0)
    assert best.plan.model_dump() == _direct({"model": {"preset": "qwen3.5-35b-a3b"}}, best).model_dump()


def test_the_kinds_share_one_plan_bound_and_are_cut_at_the_same_point(monkeypatch):
    from mambasizer.service.recommend import search

    monkeypatch.setattr(search, "MAX_PLANS", 30)
    got = recommend({**THREE_GPUS, "limit": 100})
    assert got.searched == 30
    assert any("stopped at its bound of 30 plans after" in w and "of 24 settings" in w and "compare fewer GPUs" in w for w in got.warnings)
    # point by point across the kinds: every kind got its first points searched
    assert {c.gpu for c in got.candidates} == {"h200", "b200", "mi300x"}


def test_the_grid_bound_counts_every_kind():
    """128 settings (4 tp x 4 pp x 2 KV x 2 SSM x 2 speculative) are one search on one GPU;
    on five kinds they are 640, past MAX_GRID: refused before any plan runs."""
    body = {"model": {"preset": "qwen3.5-35b-a3b"}, "gpu": ["h200", "b200", "h100", "h20", "b300"],
            "search": {"tp_size": [1, 2, 4, 8], "pp_size": [1, 2, 4, 8], "kv_cache_dtype": ["auto", "fp8_e4m3"],
                       "mamba_ssm_dtype": ["float32", "bfloat16"], "speculative": [None, "NGRAM"]}}
    with pytest.raises(PlanInputError) as exc:
        recommend(body)
    assert exc.value.field == "search"
    assert exc.value.message.startswith("128 settings on each of 5 GPU kinds: 640 to search; at most 512 over all kinds")


CONFIRMED = sorted(n for n, g in gpus.CATALOG.items() if g.confirmed)
BASE = {"model": {"preset": "qwen3.5-27b"}}


@pytest.mark.parametrize("body,field,says", [
    ({**BASE, "gpu": ["h200", "b300x"]}, "gpu", "unknown GPU 'b300x'"),
    ({**BASE, "gpu": ["h200", "v100"]}, "gpu", "a device class whose SGLang 0.5.23 resolution"),
    ({**BASE, "gpu": ["b200", "mi325x"]}, "gpu", "'mi325x' has no confirmed capacity"),
    ({**BASE, "gpu": []}, "gpu", "compare 1 to 16 GPU kinds"),
    ({**BASE, "gpu": ["h200"] * (MAX_GPU_KINDS + 1)}, "gpu", "lists 17 GPUs"),
    ({**BASE, "gpu": ["h200", 7]}, "gpu.1", "must be a catalog GPU name"),
    ({**BASE, "gpu": {"h200": 1}}, "gpu", "or a list of at most 16"),
    ({**BASE, "gpu": ["h200"], "gpu_prices": {"b200": 5.9}}, "gpu_prices.b200", "not one of the requested GPUs (h200)"),
    ({**BASE, "gpu": ["h200", "b200"], "gpu_prices": {"h200": 3.5, "H200": 3.6}}, "gpu_prices.H200", "prices 'h200' twice"),
    ({**BASE, "gpu": "h200", "gpu_prices": {"h200": 0}}, "gpu_prices.h200", "greater than 0"),
    ({**BASE, "gpu": "h200", "gpu_prices": {"h200": float("inf")}}, "gpu_prices.h200", "finite"),
    ({**BASE, "gpu": "h200", "gpu_prices": {}}, "gpu_prices", "at least 1"),
    ({**BASE, "gpu": ["h200", "b200"], "objective": "cheapest"}, "objective", "give gpu_prices"),
    ({**BASE, "gpu": ["h200", "b200"], "objective": "cheapest", "gpu_prices": {"h200": 3.5}}, "gpu_prices", "missing: b200"),
    ({**BASE, "budget": {"rest_gib": 10.0}, "objective": "cheapest"}, "objective", 'name the GPU as "gpu" or budget.gpu'),
    ({**BASE, "budget": {"rest_gib": 10.0}, "gpu_prices": {"h200": 1.0}}, "gpu_prices.h200", "none named"),
])
def test_bad_gpu_kinds_and_prices_name_the_field(body, field, says):
    with pytest.raises(PlanInputError) as exc:
        recommend(body)
    assert exc.value.field == field, exc.value.message
    assert says in exc.value.message, exc.value.message


def test_an_unknown_or_unconfirmed_gpu_lists_the_catalog():
    with pytest.raises(PlanInputError) as exc:
        recommend({**BASE, "gpu": ["h200", "b300x"]})
    assert list(exc.value.allowed or []) == sorted(gpus.CATALOG)
    with pytest.raises(PlanInputError) as exc:
        recommend({**BASE, "gpu": ["h200", "mi325x"]})
    assert list(exc.value.allowed or []) == CONFIRMED and "gpu_memory_mib" in exc.value.message
