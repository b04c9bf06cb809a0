"""Conformance: `pp_size` at and above the model's layer count (issue 10 §4).

SGLang 0.5.23 splits layers with `get_pp_indices`, which alone would hand the first
`pp_size - num_hidden_layers` stages no layer at all; but the model is built first, and
`make_layers` asserts `num_hidden_layers >= pp_size`, so such a launch never starts. Ours
refuses it as an input error naming `server_args.pp_size`. At `pp_size == num_hidden_layers`
(one layer a stage) SGLang sizes it, and our plan must equal SGLang's own sizing.
"""

from __future__ import annotations

import pytest

import cases
import sglang_ref
from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError

# A six-layer Nemotron-H (a family that takes PP): mamba, attention, mamba, MLP, mamba, attention.
PATTERN = "M*M-M*"


def _hf() -> dict:
    hf = cases.load_preset("nemotron-h-8b-base-8k")
    hf.pop("layers_block_type", None)
    hf["hybrid_override_pattern"] = PATTERN
    hf["num_hidden_layers"] = len(PATTERN)
    return hf


def _request(pp: int) -> dict:
    # The launch values as SGLang's resolution leaves them with PP (the oracle takes them
    # resolved): auto -> extra_buffer (overlap still on then), then PP turns overlap off.
    server_args = {"tp_size": 1, "pp_size": pp, "mamba_radix_cache_strategy": "extra_buffer", "disable_overlap_schedule": True}
    return {"model": {"hf_config": _hf()}, "server_args": server_args, "budget": {"rest_gib": 20.0}}


@pytest.fixture(scope="module")
def sg():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed")
    return sglang_ref._load()


def _sglang_builds_layers(num_layers: int, pp: int, rank: int) -> None:
    """SGLang's own `make_layers` up to its layer split: the assertion runs before any
    layer is built, so a layer function that must not be called proves the split."""
    def no_layer(idx, prefix):  # pragma: no cover - only reached past the assertion
        raise LookupError("past the pp_size check")

    with sglang_ref._fakes_active():  # make_layers imports its helpers when called
        from sglang.srt.utils.common import make_layers

        make_layers(num_layers, no_layer, pp_rank=rank, pp_size=pp)


@pytest.mark.parametrize("pp", [len(PATTERN) + 1, len(PATTERN) + 2, 64, 1024])
def test_pp_size_above_the_layer_count_is_refused_as_sglang_refuses_it(sg, pp):
    with pytest.raises(AssertionError):
        _sglang_builds_layers(len(PATTERN), pp, rank=0)
    with pytest.raises(PlanInputError) as exc:
        plan(_request(pp))
    assert exc.value.field == "server_args.pp_size"
    assert f"num_hidden_layers={len(PATTERN)}" in exc.value.message


def test_pp_size_equal_to_the_layer_count_passes_sglangs_check_and_sizes_like_sglang(sg):
    pp = len(PATTERN)
    with pytest.raises(LookupError):  # past the assertion: SGLang goes on to build layers
        _sglang_builds_layers(len(PATTERN), pp, rank=0)
    request = _request(pp)
    ref = sglang_ref.reference_plan(request)
    ours = plan(request)
    assert ref["error"] is None and ours.feasible
    for key in ("max_mamba_cache_size", "mamba_ratio", "kv_budget_bytes", "max_total_num_tokens", "max_running_requests", "pp_max_micro_batch_size"):
        assert getattr(ours, key) == ref[key], key
    assert [(s.start_layer, s.end_layer, s.mamba_layers, s.full_attention_layers) for s in ours.stages] == [
        (r["start_layer"], r["end_layer"], r["mamba_layers"], r["full_attention_layers"]) for r in ref["stages"]
    ]
    assert [(s.start_layer, s.end_layer) for s in ours.stages] == [(i, i + 1) for i in range(pp)]
    assert [s.kv_tokens for s in ours.stages] == [r["kv_tokens"] for r in ref["stages"]]
