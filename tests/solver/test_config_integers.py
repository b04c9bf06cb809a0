"""A pasted config.json's integer keys (issue 17 §2, issue 21): the keys SGLang 0.5.23 sizes a
model from are finite integers within their bounds, positive where SGLang needs positive;
anything else is a PlanInputError naming `model.hf_config.<key>`, on every budget form
(the GPU-only estimate reads the weights' shapes from the same keys, and once took
`hidden_size: 1e308` into an OverflowError). Other values, Infinity included (Nemotron-H
ships `time_step_limit: [0.0, Infinity]`), are read as Python's json reads them. An
`architectures` entry that is not one of the family's SGLang classes is refused by name
instead of silently changing the radix-cache strategy."""

from __future__ import annotations

import copy

import pytest

from mambasizer.schemas.request import MAX_DIM
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.families import (
    NONNEGATIVE_CONFIG_INTS,
    POSITIVE_CONFIG_INTS,
    layout_from_hf_config,
)

NEMOTRON = "nemotron-h-56b-base-8k"
QWEN35 = "qwen3.5-35b-a3b"  # a wrapper: the layout lives in text_config
BUDGETS = [{"gpu": "h200"}, {"rest_gib": 30.0}]


def _config(name: str = NEMOTRON) -> dict:
    return copy.deepcopy(dict(PRESETS[name].hf_config))


def _refusal(hf: dict, budget: dict) -> PlanInputError:
    with pytest.raises(PlanInputError) as exc:
        plan({"model": {"hf_config": hf}, "budget": budget})
    return exc.value


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("key, value, message", [
    ("hidden_size", 1e308, "must be an integer (SGLang sizes the model from it), got 1e+308"),
    ("intermediate_size", 1e308, "must be an integer (SGLang sizes the model from it), got 1e+308"),
    ("hidden_size", 4096.5, "must be an integer (SGLang sizes the model from it), got 4096.5"),
    ("hidden_size", 4096.0, "must be an integer (SGLang sizes the model from it), got 4096.0"),
    ("hidden_size", "4096", "must be an integer (SGLang sizes the model from it), got '4096'"),
    ("hidden_size", True, "must be an integer (SGLang sizes the model from it), got True"),
    ("vocab_size", -1, "must be between 1 and 1048576, got -1"),
    ("vocab_size", 0, "must be between 1 and 1048576, got 0"),
    ("num_attention_heads", 10**400, f"must be between 1 and {MAX_DIM}, got {10**400}"),
    ("intermediate_size", float("inf"), "must be a finite integer, got inf: SGLang sizes the model from it"),
    ("hidden_size", float("nan"), "must be a finite integer, got nan: SGLang sizes the model from it"),
    ("n_shared_experts", -1, f"must be between 0 and {MAX_DIM}, got -1"),
])
def test_a_sizing_integer_that_is_not_a_finite_integer_in_bounds_is_refused_by_key(budget, key, value, message):
    hf = _config()
    hf[key] = value
    err = _refusal(hf, budget)
    assert err.field == f"model.hf_config.{key}"
    assert err.message == message


def test_the_rule_reaches_into_a_text_config():
    hf = _config(QWEN35)
    hf["text_config"]["vocab_size"] = 248320.5
    err = _refusal(hf, {"gpu": "h200"})
    assert err.field == "model.hf_config.text_config.vocab_size"
    assert err.message == "must be an integer (SGLang sizes the model from it), got 248320.5"


def test_a_vision_tower_depth_is_bounded_like_the_layers():
    hf = _config("kimi-k3")
    assert isinstance(hf.get("vision_config"), dict)
    hf["vision_config"]["vt_num_hidden_layers"] = 10**9  # read as a loop count by the weights
    err = _refusal(hf, {"gpu": "h200"})
    assert err.field == "model.hf_config.vision_config.vt_num_hidden_layers"
    assert err.message == f"must be between 1 and 4096, got {10**9}"


def test_zero_is_accepted_where_sglang_reads_a_count_that_may_be_zero():
    hf = _config("nvidia-nemotron-3-nano-30b-a3b")
    assert hf["n_shared_experts"] == 1
    with_shared = plan({"model": {"hf_config": hf}, "budget": {"gpu": "h200"}})
    hf["n_shared_experts"] = 0
    without = plan({"model": {"hf_config": hf}, "budget": {"gpu": "h200"}})
    assert without.feasible and with_shared.feasible
    assert without.stages[0].weights_bytes < with_shared.stages[0].weights_bytes


def test_infinity_and_nan_elsewhere_in_a_config_are_read_as_python_reads_them():
    hf = _config()
    assert hf["time_step_limit"] == [0.0, float("inf")]
    hf["time_step_floor"] = float("nan")  # a float key no sizing reads
    ours = plan({"model": {"hf_config": hf}, "budget": {"gpu": "h200"}})
    preset = plan({"model": {"preset": NEMOTRON}, "budget": {"gpu": "h200"}})
    assert ours.feasible and ours.max_total_num_tokens == preset.max_total_num_tokens


def test_the_quantization_config_is_not_judged_by_this_rule():
    # GPTQ's group_size -1 (per channel) is a quantization scheme's, read by weights.py.
    assert "group_size" not in POSITIVE_CONFIG_INTS | NONNEGATIVE_CONFIG_INTS


def test_every_shipped_preset_passes_the_rule():
    for name, preset in PRESETS.items():
        if not preset.sizable:
            continue
        layout_from_hf_config(dict(preset.hf_config), name)  # raises on a refusal


@pytest.mark.parametrize("archs, message", [
    (["FooForCausalLM"], ("'FooForCausalLM' is not a model class SGLang 0.5.23 sizes through its mamba path (it would load it "
     "through its Transformers fallback); for this model_type use one of NemotronHForCausalLM, NemotronH_Nano_VL_V2")),
    (["Qwen3NextForCausalLM"], ("'Qwen3NextForCausalLM' is the Qwen3-Next (GDN) class, not the model_type's Nemotron-H / "
     "Nemotron-Nano-v2 / Nemotron-3 (Mamba2); for this model_type use one of NemotronHForCausalLM, NemotronH_Nano_VL_V2")),
    ("NemotronHForCausalLM", 'must be a list of model class names, as in config.json (e.g. ["NemotronHForCausalLM"])'),
    ([7], 'must be a list of model class names, as in config.json (e.g. ["NemotronHForCausalLM"])'),
])
def test_an_architecture_the_family_has_no_class_for_is_refused_by_name(archs, message):
    hf = _config()
    hf["architectures"] = archs
    err = _refusal(hf, {"rest_gib": 30.0})
    assert err.field == "model.hf_config.architectures"
    assert err.message == message
    if isinstance(archs, list) and isinstance(archs[0], str):
        assert err.allowed == ["NemotronHForCausalLM", "NemotronH_Nano_VL_V2"]


def test_a_missing_architectures_entry_still_resolves_by_model_type():
    hf = _config()
    hf.pop("architectures")
    ours = plan({"model": {"hf_config": hf}, "budget": {"rest_gib": 30.0}})
    preset = plan({"model": {"preset": NEMOTRON}, "budget": {"rest_gib": 30.0}})
    assert ours.resolved.mamba_radix_cache_strategy == preset.resolved.mamba_radix_cache_strategy == "extra_buffer"
    assert ours.max_total_num_tokens == preset.max_total_num_tokens
