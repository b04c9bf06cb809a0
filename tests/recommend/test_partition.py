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

from service.recommend import recommend
from service.recommend.partition import (
    LayerCosts,
    all_partitions,
    pareto_partitions,
    triple_of,
)
from service.solver import plan


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
    from service.recommend.partition import PartitionSearchTooLarge

    rng = random.Random(3)
    costs = _random_costs(rng, 400)
    steps: list[int] = []
    with pytest.raises(PartitionSearchTooLarge) as exc:
        pareto_partitions(costs, 40, max_steps=50_000, steps=steps)
    assert 50_000 < steps[0] <= 50_000 + 400 * 80  # one bisection past the bound at most
    for parts in exc.value.found:
        assert len(parts) == 40 and sum(parts) == 400


def test_a_huge_search_grid_is_refused_before_it_is_built():
    from service.solver import PlanInputError

    many = list(range(1, 17))
    with pytest.raises(PlanInputError) as exc:
        recommend({"model": {"preset": "qwen3.5-27b"}, "gpu": "h200", "search": {
            "tp_size": many, "pp_size": many, "attn_dp_size": many,
            "kv_cache_dtype": ["auto", "bfloat16", "fp8_e4m3", "fp8_e5m2"], "mamba_ssm_dtype": ["float32", "bfloat16", "float16"],
        }})
    assert exc.value.field == "search"
