"""Checkpoints, not families (issue 21), without SGLang: presets by HF repo id, the
checkpoint's quant config (inline or hf_quant_config), KV dtype `auto`, env booleans,
weight-moving flags, --dp-size with DP attention, drafts without a draft model, and the
bad input for each (422 / exit 2 naming the field and the fix). The numbers against SGLang's
own code are in tests/conformance/test_checkpoint_conformance.py."""

from __future__ import annotations

import json

import pytest

from mambasizer.service.cli import main
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS, get_preset
from mambasizer.service.requests import prepare
from mambasizer.service.solver.errors import PlanInputError

GIB = 1 << 30
H200 = {"gpu": "h200"}
MEASURED = {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0}


def _plan(model: dict, tp: int = 1, budget: dict | None = None, **sa):
    return plan({"model": model, "server_args": {"tp_size": tp, **sa}, "budget": budget or H200})


@pytest.mark.parametrize("repo_id, name", [
    ("Qwen/Qwen3.6-27B", "qwen3.6-27b"),
    ("nvidia/Qwen3.6-27B-NVFP4", "nvidia-qwen3.6-27b-nvfp4"),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nvidia-nemotron-3-super-120b-a12b"),
    ("NVIDIA/nvidia-nemotron-3-super-120b-a12b-fp8", "nvidia-nemotron-3-super-120b-a12b"),
    ("QWEN3.6-27B", "qwen3.6-27b"),
])
def test_preset_by_hf_repo_id_any_case(repo_id, name):
    assert get_preset(repo_id).name == name


def test_unknown_repo_id_names_the_closest():
    with pytest.raises(PlanInputError) as e:
        get_preset("nvidia/Qwen3.6-27B-FP8")
    assert e.value.field == "model.preset"
    assert "closest: nvidia/Qwen3.6-27B-NVFP4" in e.value.message and "model.hf_config" in e.value.message


def test_model_path_picks_the_checkpoint_and_is_not_ignored():
    p = prepare({"sglang_args": ["--model-path", "nvidia/Qwen3.6-27B-NVFP4", "--tp-size", "2"], "budget": H200})
    assert p.request.model.preset == "nvidia/Qwen3.6-27B-NVFP4" and "--model-path" not in p.ignored_sglang_args
    assert plan(p.request).model_name == "nvidia-qwen3.6-27b-nvfp4"
    # A body's own model wins; --model-path is then only the metric label (listed as ignored).
    p = prepare({"model": {"preset": "qwen3.5-27b"}, "sglang_args": ["--model-path", "x/y"], "budget": H200})
    assert p.request.model.preset == "qwen3.5-27b" and "--model-path" in p.ignored_sglang_args


def test_unknown_model_path_is_a_422_naming_the_three_ways():
    # Read where SGLang reads it (service/checkpoints): no such directory here, so refused at once.
    with pytest.raises(PlanInputError) as e:
        prepare({"sglang_args": ["--model-path", "/models/my-private-ckpt"], "budget": H200})
    assert e.value.field == "sglang_args" and "no such directory" in e.value.message
    assert "a directory holding its config.json" in e.value.message and "paste its config.json as model.hf_config" in e.value.message


def test_qwen36_27b_is_the_bf16_checkpoint_and_the_nvfp4_release_its_own():
    bf16 = _plan({"preset": "Qwen/Qwen3.6-27B"})
    nvfp4 = _plan({"preset": "nvidia/Qwen3.6-27B-NVFP4"})
    assert bf16.stages[0].weights_bytes / GIB > 50 and bf16.resolved.kv_cache_dtype == "bfloat16"
    assert nvfp4.stages[0].weights_bytes / GIB < 21 and nvfp4.resolved.kv_cache_dtype == "fp8_e4m3"
    assert "quantization_config" not in PRESETS["qwen3.6-27b"].hf_config


def test_nemotron_3_super_fp8_starts_on_one_h200_with_fp8_kv():
    r = _plan({"preset": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"})
    assert r.feasible, r.error
    assert 100 < r.stages[0].weights_bytes / GIB < 120  # FP8, not BF16's ~225 GiB
    assert r.resolved.kv_cache_dtype == "fp8_e4m3"
    assert "hf_quant_config.json declares FP8 KV" in r.resolved.kv_cache_dtype_reason
    # An explicit dtype is taken as given, and says so.
    r = _plan({"preset": "nvidia-nemotron-3-super-120b-a12b"}, kv_cache_dtype="bfloat16")
    assert r.resolved.kv_cache_dtype == "bfloat16" and r.resolved.kv_cache_dtype_reason == "given: --kv-cache-dtype bfloat16"


def test_pasted_config_with_hf_quant_config_equals_the_preset():
    preset = dict(PRESETS["nvidia-nemotron-3-super-120b-a12b"].hf_config)
    pasted = _plan({"hf_config": json.loads(json.dumps(preset))})
    assert pasted.stages[0].weights_bytes == _plan({"preset": "nvidia-nemotron-3-super-120b-a12b"}).stages[0].weights_bytes
    without = {k: v for k, v in preset.items() if k != "hf_quant_config"}
    assert _plan({"hf_config": without}).stages[0].weights_bytes / GIB > 200  # the BF16 form


def test_pasted_hf_quant_config_must_be_an_object():
    hf = dict(PRESETS["nvidia-nemotron-3-super-120b-a12b"].hf_config)
    hf["hf_quant_config"] = "FP8"
    with pytest.raises(PlanInputError) as e:
        _plan({"hf_config": hf})
    assert e.value.field == "model.hf_config.hf_quant_config" and "must be an object" in e.value.message


def test_nested_nvfp4_without_group_size_is_refused_as_sglang_does():
    hf = dict(PRESETS["nvidia-nemotron-3-nano-30b-a3b"].hf_config)
    hf["hf_quant_config"] = {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}
    with pytest.raises(PlanInputError) as e:
        _plan({"hf_config": hf})
    assert e.value.field == "model.hf_config.hf_quant_config.quantization.group_size"


@pytest.mark.parametrize("value, expected", [("1", True), ("TRUE", True), ("Yes", True), ("y", True), (True, True), (1, True),
                                             ("0", False), ("false", False), ("NO", False), ("n", False), (False, False), (0, False)])
def test_env_booleans_as_envbool_reads_them(value, expected):
    p = prepare({"model": {"preset": "qwen3.5-27b"}, "budget": H200, "env": {"SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": value}})
    assert p.request.env.SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK is expected


@pytest.mark.parametrize("value", ["maybe", "2", 2, "", "on"])
def test_env_boolean_envbool_refuses_is_a_422(value):
    with pytest.raises(PlanInputError) as e:
        prepare({"model": {"preset": "qwen3.5-27b"}, "budget": H200, "env": {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": value}})
    assert e.value.field == "env.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" and "true/1/yes/y" in e.value.message


@pytest.mark.parametrize("args", [["--quantization", "fp8"], ["--cpu-offload-gb", "20"], ["--offload-group-size", "4"],
                                  ["--ep-num-redundant-experts", "32"], ["--speculative-draft-model-quantization", "fp8"]])
def test_weight_moving_flags_refused_in_an_estimated_budget(args):
    with pytest.raises(PlanInputError) as e:
        prepare({"model": {"preset": "qwen3.5-35b-a3b"}, "sglang_args": args, "budget": H200})
    assert e.value.field == "sglang_args" and args[0] in e.value.message and "measured budget" in e.value.message


def test_weight_moving_flags_noted_in_a_measured_budget():
    p = prepare({"model": {"preset": "qwen3.5-35b-a3b"}, "sglang_args": ["--cpu-offload-gb", "20", "--mem-fraction-static", "0.8"], "budget": MEASURED})
    assert "--cpu-offload-gb" in p.ignored_sglang_args
    assert any("--cpu-offload-gb 20" in w and "measured budget already holds" in w for w in p.sglang_args_warnings)


def test_dp_size_with_dp_attention_is_applied_not_ignored():
    p = prepare({"model": {"preset": "qwen3.5-35b-a3b"}, "sglang_args": ["--tp-size", "2", "--dp-size", "2", "--enable-dp-attention"], "budget": H200})
    assert p.request.server_args.attn_dp_size == 2
    assert "--dp-size" not in p.ignored_sglang_args and "--enable-dp-attention" not in p.ignored_sglang_args


def test_eagle_without_a_draft_model_says_its_kv_is_unpriced():
    r = _plan({"preset": "nvidia-nemotron-nano-9b-v2"}, speculative_algorithm="EAGLE")
    assert r.resolved.draft_kv_layers == 0
    assert "priced at zero" in r.resolved.draft_kv_layers_reason and "bytes per token" in r.resolved.draft_kv_layers_reason
    assert any("without draft_model" in w and "draft_model.num_layers" in w for w in r.warnings)
    mtp = _plan({"preset": "nvidia-nemotron-3-super-120b-a12b"}, speculative_algorithm="EAGLE")
    assert mtp.resolved.draft_kv_layers >= 1 and "num_nextn_predict_layers" in mtp.resolved.draft_kv_layers_reason


def test_cli_unknown_checkpoint_is_exit_2_naming_the_field(tmp_path, capsys):
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"model": {"preset": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP4"}, "budget": H200}))
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.preset: unknown preset" in err[0] and "closest: nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8" in err[0]


def test_check_gpu_plans_nemotron_3_super_fp8_on_one_h200_as_starting(capsys):
    code = main(["check", "--preset", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "--gpu", "h200", "--", "--tp-size", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "OK: nvidia-nemotron-3-super-120b-a12b starts under SGLang 0.5.23" in out and "budget=estimated" in out


def test_legacy_cuda_ipc_transport_reserves_the_feature_pool_on_multimodal_models():
    base = {"model": {"preset": "qwen3.5-27b"}, "server_args": {"tp_size": 1, "mem_fraction_static": 0.88}, "budget": MEASURED}
    off = plan(base).rest_gib
    on = plan(prepare({**base, "env": {"SGLANG_USE_CUDA_IPC_TRANSPORT": "1"}}).request).rest_gib
    assert off - on == pytest.approx(1.0)  # SGLANG_MM_FEATURE_CACHE_MB = 1024
    # A text-only model has no multimodal reservation either way.
    text = {**base, "model": {"preset": "nvidia-nemotron-nano-9b-v2"}}
    assert plan(prepare({**text, "env": {"SGLANG_USE_CUDA_IPC_TRANSPORT": "yes"}}).request).rest_gib == plan(text).rest_gib
    p = prepare({"model": {"preset": "qwen3.5-27b"}, "sglang_args": ["SGLANG_USE_CUDA_IPC_TRANSPORT=Y", "--tp-size", "1"], "budget": H200})
    assert p.request.env.SGLANG_USE_CUDA_IPC_TRANSPORT is True
    with pytest.raises(PlanInputError) as e:
        prepare({"model": {"preset": "qwen3.5-27b"}, "budget": H200, "env": {"SGLANG_USE_CUDA_IPC_TRANSPORT": "on"}})
    assert e.value.field == "env.SGLANG_USE_CUDA_IPC_TRANSPORT"


def test_quantization_flag_on_a_prequantized_checkpoint_is_its_own_format():
    p = prepare({"model": {"preset": "nvidia/Qwen3.6-27B-NVFP4"}, "sglang_args": ["--quantization", "modelopt_mixed"], "budget": H200})
    assert plan(p.request).feasible
    with pytest.raises(PlanInputError):  # online quantization of the BF16 checkpoint: refused by name
        prepare({"model": {"preset": "Qwen/Qwen3.6-27B"}, "sglang_args": ["--quantization", "fp8"], "budget": H200})
