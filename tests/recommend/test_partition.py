"""The PP layer partition search is exact: against brute force over every contiguous partition.

1. Generated layer sequences (a few thousand): every Pareto-minimal (W, M, F) triple of every
   partition is covered by a partition the search returns, so the early stops (the bounds in
   pareto_partitions) never drop the best partition of any objective monotone in the triple.
2. Real presets through plan(): the best figures over every contiguous partition (brute force,
   each partition planned) equal the best the recommend search returns, per objective.
"""

from __future__ import annotations

import random

import pytest

from mambasizer.service.planner import plan
from mambasizer.service.recommend import recommend
from mambasizer.service.recommend.partition import (
    LayerCosts,
    all_partitions,
    pareto_partitions,
    triple_of,
)


def _random_costs(rng: random.Random, n: int) -> LayerCosts:
    kinds = [rng.choice("mmmfx") for _ in range(n)]  # mamba, full attention, or an MLP-only layer
    weights = tuple(rng.choice([rng.randint(0, 9), {"m": 3, "f": 5, "x": 7}[k]]) for k in kinds)
    first, last = rng.randint(0, 12), rng.randint(0, 12)
    middle = rng.choice([0, rng.randint(0, min(first, last))])  # e.g. a tower every stage loads
    full = tuple(int(k == "f") for k in kinds)
    once = ((rng.randint(1, 6), full),) if rng.random() < 0.5 else ()  # e.g. the attention layers' rotary cache
    return LayerCosts(weights, tuple(int(k == "m") for k in kinds), full, first, last, middle, once)


def test_search_covers_every_pareto_triple_on_generated_cases():
    rng = random.Random(20261201)
    cases = 0
    for _ in range(3000):
        n = rng.randint(1, 11)
        pp = rng.randint(1, min(n, 5))
        costs = _random_costs(rng, n)
        found = pareto_partitions(costs, pp)
        assert found, (costs, pp)
        for parts in found:
            assert len(parts) == pp and min(parts) >= 1 and sum(parts) == n
        got = [triple_of(costs, p) for p in found]
        for parts in all_partitions(n, pp):
            t = triple_of(costs, parts)
            assert any(g.weights <= t.weights and g.mamba <= t.mamba and g.full <= t.full for g in got), (costs, pp, parts, t, got)
        cases += 1
    assert cases == 3000


def test_brute_force_best_per_objective_on_generated_cases():
    """The best of a few monotone objectives over the search's partitions equals the best over all."""
    rng = random.Random(7)
    for _ in range(1500):
        n = rng.randint(2, 10)
        pp = rng.randint(2, min(n, 4))
        costs = _random_costs(rng, n)
        budget = sum(costs.weights) + costs.first_extra + costs.last_extra + rng.randint(0, 20)
        objectives = [
            lambda t, b=budget: (b - t.weights) // max(1, t.mamba + t.full),
            lambda t, b=budget: ((b - t.weights) // max(1, t.full), -t.mamba),
            lambda t: (-t.mamba, -t.full, -t.weights),
        ]
        found = [triple_of(costs, p) for p in pareto_partitions(costs, pp)]
        every = [triple_of(costs, p) for p in all_partitions(n, pp)]
        for f in objectives:
            assert max(map(f, found)) == max(map(f, every))


def _brute(model: dict, sa: dict, budget: dict, layers: int, requests: int) -> tuple[int, int]:
    """The most KV tokens that still serve `requests`, over every contiguous partition, each
    planned by plan() with SGLang's default split and with the least cache size that serves
    `requests` (ratio slots per request): (tokens, requests)."""
    best: tuple[int, int] | None = None
    for parts in all_partitions(layers, sa["pp_size"]):
        env = {"SGLANG_PP_LAYER_PARTITION": ",".join(map(str, parts))}
        p = plan({"model": model, "server_args": sa, "budget": budget, "env": env})
        variants = [p]
        if p.mamba_ratio is not None:
            variants.append(plan({"model": model, "server_args": {**sa, "max_mamba_cache_size": requests * p.mamba_ratio}, "budget": budget, "env": env}))
        for q in variants:
            if q.feasible and q.max_running_requests is not None and q.max_total_num_tokens is not None and q.max_running_requests >= requests:
                key = (q.max_total_num_tokens, q.max_running_requests)
                best = key if best is None or key > best else best
    assert best is not None
    return best


CASES = [
    # (preset, layers, tp, pp, budget, running_requests): small enough that every partition is planned
    ("kimi-linear-48b-a3b-instruct", 27, 2, 3, {"gpu": "h100"}, 64),
    ("kimi-linear-48b-a3b-instruct", 27, 1, 4, {"gpu": "h200"}, 200),
    ("nvidia-nemotron-3-nano-30b-a3b", 52, 1, 3, {"gpu": "h100"}, 100),
    ("nemotron-h-8b-base-8k", 52, 1, 3, {"rest_gib": 30.0}, 50),
    ("qwen3.5-35b-a3b", 40, 1, 2, {"gpu": "h100"}, 150),
    ("qwen3.5-35b-a3b", 40, 2, 2, {"rest_gib": 20.0}, 128),
]


@pytest.mark.parametrize("preset,layers,tp,pp,budget,requests", CASES)
def test_search_partition_equals_brute_force_through_plan(preset, layers, tp, pp, budget, requests):
    sa = {"tp_size": tp, "pp_size": pp}
    model = {"preset": preset}
    want = _brute(model, sa, budget, layers, requests)
    body = {"model": model, "server_args": sa, "objective": "most_tokens", "target": {"running_requests": requests}, "limit": 1}
    body.update({"gpu": budget["gpu"]} if "gpu" in budget else {"budget": budget})
    best = recommend(body).candidates[0]
    assert best.meets_target and best.plan.feasible
    assert (best.plan.max_total_num_tokens, best.plan.max_running_requests) == want


def test_the_enumeration_stops_at_its_work_bound_with_what_it_found():
    from mambasizer.service.recommend.partition import PartitionSearchTooLarge

    rng = random.Random(3)
    costs = _random_costs(rng, 400)
    steps: list[int] = []
    with pytest.raises(PartitionSearchTooLarge) as exc:
        pareto_partitions(costs, 40, max_steps=50_000, steps=steps)
    assert 50_000 < steps[0] <= 50_000 + 400 * 80  # one bisection past the bound at most
    for parts in exc.value.found:
        assert len(parts) == 40 and sum(parts) == 400


def test_a_huge_search_grid_is_refused_before_it_is_built():
    from mambasizer.service.solver import PlanInputError

    many = list(range(1, 17))
    with pytest.raises(PlanInputError) as exc:
        recommend({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "search": {
            "tp_size": many, "pp_size": many, "attn_dp_size": many,
            "kv_cache_dtype": ["auto", "bfloat16", "fp8_e4m3", "fp8_e5m2"], "mamba_ssm_dtype": ["float32", "bfloat16", "float16"],
        }})
    assert exc.value.field == "search"


def _brute_ratio(model: dict, sa: dict, budget: dict, layers: int, requests: int | None) -> tuple[int, int]:
    """SGLang's default ratio split only (no cache size set): the best (tokens, requests) over
    every contiguous partition planned by plan(), among those serving `requests` when given."""
    best: tuple[int, int] | None = None
    for parts in all_partitions(layers, sa["pp_size"]):
        q = plan({"model": model, "server_args": sa, "budget": budget, "env": {"SGLANG_PP_LAYER_PARTITION": ",".join(map(str, parts))}})
        if q.feasible and q.max_running_requests is not None and q.max_total_num_tokens is not None:
            if requests is None or q.max_running_requests >= requests:
                key = (q.max_total_num_tokens, q.max_running_requests)
                best = key if best is None or key > best else best
    assert best is not None
    return best


RATIO_CASES = [
    # (preset, layers, tp, pp, budget, running_requests or None: most_tokens with no target)
    ("kimi-linear-48b-a3b-instruct", 27, 2, 3, {"gpu": "h100"}, None),
    ("kimi-linear-48b-a3b-instruct", 27, 1, 4, {"gpu": "h200"}, 64),
    ("kimi-linear-48b-a3b-instruct", 27, 2, 2, {"rest_gib": 7.3}, None),
    ("nvidia-nemotron-3-nano-30b-a3b", 52, 1, 3, {"gpu": "h100"}, None),
    ("nvidia-nemotron-3-nano-30b-a3b", 52, 2, 2, {"rest_gib": 11.0}, 100),
    ("nemotron-h-8b-base-8k", 52, 1, 3, {"rest_gib": 30.0}, None),
    ("nemotron-h-8b-base-8k", 52, 1, 2, {"gpu": "h100"}, 50),
    ("qwen3.5-35b-a3b", 40, 1, 2, {"gpu": "h100"}, None),
    ("qwen3.5-35b-a3b", 40, 2, 3, {"rest_gib": 20.0}, None),
]


@pytest.mark.parametrize("preset,layers,tp,pp,budget,requests", RATIO_CASES)
def test_search_partition_is_exact_under_the_default_ratio_split(preset, layers, tp, pp, budget, requests):
    """most_tokens with no running_requests, or "mamba_cache": false: the plan keeps SGLang's
    ratio split, whose rounding can favour a stage with more mamba layers or weights; the best
    of every contiguous partition planned by plan() must not beat the search's answer."""
    sa = {"tp_size": tp, "pp_size": pp}
    model = {"preset": preset}
    want = _brute_ratio(model, sa, budget, layers, requests)
    body: dict = {"model": model, "server_args": sa, "objective": "most_tokens", "limit": 1}
    if requests is not None:
        body.update({"target": {"running_requests": requests}, "search": {"mamba_cache": False}})
    body.update({"gpu": budget["gpu"]} if "gpu" in budget else {"budget": budget})
    got = recommend(body)
    best = got.candidates[0]
    assert best.meets_target and best.plan.feasible and "--max-mamba-cache-size" not in best.sglang_args
    assert (best.plan.max_total_num_tokens, best.plan.max_running_requests) == want
    assert not any("not proven optimal" in w for w in got.warnings)


def test_triples_within_finds_every_triple_and_honours_the_bound():
    """The walk the ratio-split check uses: with nothing pruned, every (W, M, F) of every
    contiguous partition, each with a partition that has it; with a monotone bound, exactly the
    triples the bound keeps."""
    from mambasizer.service.recommend.partition import triples_within

    rng = random.Random(11)
    for _ in range(1500):
        n = rng.randint(1, 10)
        pp = rng.randint(1, min(n, 4))
        costs = _random_costs(rng, n)
        every = {triple_of(costs, p) for p in all_partitions(n, pp)}
        found = triples_within(costs, pp, lambda W, lo, hi, F: True)
        assert set(found) == every
        for t, parts in found.items():
            assert triple_of(costs, parts) == t and len(parts) == pp
        cap_w, cap_f, need_m = rng.randint(0, 60), rng.randint(0, 6), rng.randint(0, 6)
        kept = triples_within(costs, pp, lambda W, lo, hi, F, cw=cap_w, cf=cap_f, nm=need_m: W <= cw and F <= cf and hi >= nm)
        assert set(kept) == {t for t in every if t.weights <= cap_w and t.full <= cap_f and t.mamba >= need_m}


def test_triples_within_on_counts_alone_gives_the_least_full_count_per_mamba_count():
    """A measured budget (no weights): per largest-stage mamba count M, the least largest-stage
    full-attention count of any partition with exactly M, and a partition that has both."""
    from mambasizer.service.recommend.partition import triples_within

    rng = random.Random(5)
    for _ in range(1500):
        n = rng.randint(1, 11)
        pp = rng.randint(1, min(n, 5))
        c = _random_costs(rng, n)
        costs = LayerCosts((0,) * n, c.mamba, c.full)
        least: dict[int, int] = {}
        for p in all_partitions(n, pp):
            t = triple_of(costs, p)
            least[t.mamba] = min(least.get(t.mamba, t.full), t.full)
        found = triples_within(costs, pp, lambda W, lo, hi, F: True)
        assert {t.mamba: t.full for t in found} == least
        for t, parts in found.items():
            assert triple_of(costs, parts) == t and len(parts) == pp and min(parts) >= 1
        cap = rng.randint(0, 4)
        kept = triples_within(costs, pp, lambda W, lo, hi, F, cf=cap: F <= cf)
        assert {t.mamba: t.full for t in kept} == {m: f for m, f in least.items() if f <= cap}


def test_the_remainder_walk_stops_at_its_work_bound():
    from mambasizer.service.recommend.partition import PartitionSearchTooLarge, triples_within

    costs = _random_costs(random.Random(9), 300)
    steps: list[int] = []
    with pytest.raises(PartitionSearchTooLarge):
        triples_within(costs, 30, lambda W, lo, hi, F: True, max_steps=20_000, steps=steps)
    assert 20_000 < steps[0] <= 20_000 + 300  # one row of layer-steps past the bound at most

    counts = LayerCosts((0,) * 300, costs.mamba, costs.full)  # the measured budget's path
    steps = []
    with pytest.raises(PartitionSearchTooLarge):
        triples_within(counts, 30, lambda W, lo, hi, F: True, max_steps=2_000, steps=steps)
    assert 2_000 < steps[0] <= 2_000 + 2 * 300
