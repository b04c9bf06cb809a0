"""A config.json is untrusted input: whatever it holds, plan() either answers or raises a
PlanInputError naming the key, quickly. Never a hang, a MemoryError or a bare exception."""

import copy
import json
import random
import time

import pytest

from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver import PlanInputError

NASTY = [1e9, 10**9, 10**30, -1, 0, float("inf"), float("nan"), "128", [4], {"a": 1}, None, True, 2.5, ""]
BASES = ["qwen3-next-80b-a3b-instruct", "qwen3.5-35b-a3b", "kimi-linear-48b-a3b-instruct", "kimi-k3", "nemotron-h-8b-base-8k", "nvidia-nemotron-3-super-120b-a12b"]


def _keys(d, prefix=()):
    for k, v in d.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _keys(v, prefix + (k,))


def _set(d, path, value):
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value


@pytest.mark.parametrize("base", BASES)
def test_every_key_with_every_nasty_value(base):
    config = dict(PRESETS[base].hf_config)
    slow = []
    for path in _keys(config):
        for value in NASTY:
            hf = copy.deepcopy(config)
            _set(hf, path, value)
            start = time.perf_counter()
            try:
                p = plan({"model": {"hf_config": hf}, "server_args": {"tp_size": 2}, "budget": {"rest_gib": 40}})
                json.dumps(p.model_dump(mode="json"))
            except PlanInputError as exc:
                assert exc.field.startswith("model.hf_config"), (path, value, exc.field)
            if time.perf_counter() - start > 1.0:
                slow.append((path, value))
    assert not slow, f"took over a second: {slow[:3]}"


def test_random_layer_lists():
    rng = random.Random(7)
    for _ in range(300):
        hf = copy.deepcopy(dict(PRESETS["kimi-linear-48b-a3b-instruct"].hf_config))
        hf["linear_attn_config"]["kda_layers"] = [rng.choice([rng.randint(-5, 40), "x", 1.5, None]) for _ in range(rng.randint(0, 40))]
        try:
            plan({"model": {"hf_config": hf}, "budget": {"rest_gib": 40}})
        except PlanInputError as exc:
            assert exc.field.startswith("model.hf_config")


def test_huge_layer_count_is_refused_fast():
    hf = dict(PRESETS["qwen3-next-80b-a3b-instruct"].hf_config, num_hidden_layers=10**9)
    with pytest.raises(PlanInputError) as exc:
        plan({"model": {"hf_config": hf}, "budget": {"rest_gib": 40}})
    assert exc.value.field == "model.hf_config.num_hidden_layers"


def test_unsupported_architecture_lists_model_types_as_allowed():
    with pytest.raises(PlanInputError) as exc:
        plan({"model": {"hf_config": {"model_type": "llama"}}, "budget": {"rest_gib": 40}})
    assert "qwen3_next" in exc.value.allowed and "kimi_k3" in exc.value.allowed


def test_incomplete_preset_names_the_request_field():
    with pytest.raises(PlanInputError) as exc:
        plan({"model": {"preset": "falcon-h1-1.5b-deep", "allow_unverified": True}, "budget": {"rest_gib": 40}})
    assert exc.value.field == "model.preset" and "falcon-h1-1.5b-deep" in exc.value.message
