"""The per-layer weights the partition search sums equal the solver's stage weights."""

from __future__ import annotations

import random

import pytest

from mambasizer.service.planner import model_layout, parse_request
from mambasizer.service.recommend.layers import layer_costs
from mambasizer.service.recommend.partition import _Prefix
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes

PRESETS = ["kimi-k3", "kimi-linear-48b-a3b-instruct", "nvidia-nemotron-3-super-120b-a12b", "qwen3.5-27b", "qwen3.5-122b-a10b"]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("tp,pp,ep", [(1, 2, 1), (4, 3, 1), (8, 4, 8), (8, 8, 2)])
def test_stage_sums_equal_stage_weight_bytes(preset, tp, pp, ep):
    layout = model_layout(parse_request({"model": {"preset": preset}, "budget": {"gpu": "h200"}}))
    rng = random.Random(f"{preset}{tp}{pp}")
    n = layout.num_hidden_layers
    for load_nextn in (False, True):
        costs = layer_costs(layout, tp_size=tp, pp_size=pp, ep_size=ep, load_nextn=load_nextn, draft_num_layers=None)
        px = _Prefix(costs)
        for _ in range(4):
            cuts = sorted(rng.sample(range(1, n), pp - 1))
            parts = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
            stages = pp_stages(n, pp, parts, layout.mamba_layer_ids, layout.full_attention_layer_ids)
            want = stage_weight_bytes(layout, tp_size=tp, pp_size=pp, ep_size=ep, stages=stages, load_nextn=load_nextn)
            got, start = [], 0
            for k in parts:
                got.append(px.seg(start, start + k)[0])
                start += k
            assert tuple(got) == tuple(want), (parts, got, want)
