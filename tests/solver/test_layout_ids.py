"""Every layout the config adapters build carries its layer ids as ascending, duplicate-free
tuples: PP stage slicing (`stages._in_range`) bisects them, so an adapter that broke the
order would hand stages the wrong layers. Checked on every shipped preset and on
generated variants of every family."""

import itertools
import os
import random
import sys

from mambasizer.service.presets import PRESETS
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.families import layout_from_hf_config

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import cases


def _assert_ascending(layout) -> None:
    for ids in (layout.mamba_layer_ids, layout.full_attention_layer_ids):
        assert type(ids) is tuple
        assert all(a < b for a, b in itertools.pairwise(ids)), ids
        assert all(0 <= i < layout.num_hidden_layers for i in ids)


def test_layer_ids_are_ascending_tuples_for_every_family():
    seen = set()
    configs = [dict(p.hf_config) for p in PRESETS.values() if p.sizable]
    rng = random.Random(3)
    for family in cases.FAMILIES:
        configs += [cases.random_hf_config(rng, family) for _ in range(20)]
    for hf in configs:
        try:
            layout = layout_from_hf_config(hf)
        except PlanInputError:
            continue
        _assert_ascending(layout)
        seen.add(layout.family)
    assert {"qwen3_next", "qwen3_5", "kimi_linear", "nemotron_h", "falcon_h1", "granitemoehybrid", "lfm2"} <= seen
