"""check-log's second comparison (`estimated`): the weights' mem usage and the free memory
before and after the load, predicted before a boot and compared within a stated error.

The real BF16 log (nemotron-3-nano-1) checks the weights; synthetic logs written with the
H200 estimate check the free memory; a wrong GPU, a non-Hopper GPU and unknown names check
the causes, the exit codes and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mambasizer.service.api.app import create_app
from mambasizer.service.cli import main
from mambasizer.service.presets import PRESETS
from mambasizer.service.requests.model_path import lenient_preset as preset_for_model_path
from mambasizer.service.requests.model_path import variant_weights_cause as checkpoint_variant_cause
from mambasizer.service.solver import gpus
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.gpu_budget import GIB
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes
from mambasizer.service.startlog.compare import check_log
from mambasizer.service.startlog.estimate import Estimate, check, gpu_from_log, gpu_named
from synth_log import estimated_budget, synth_log
from test_checklog_cli import REAL_397B_ARGS

ROOT = Path(__file__).resolve().parents[2]
NANO = json.loads((ROOT / "tests/data/bootlogs/nemotron-3-nano-1.json").read_text())
# The Nano log's launch (XPU_SERVER_ARGS in the file), less its XPU-only flags.
NANO_ARGS = [
    "--model-path", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--tp-size", "4", "--page-size", "64",
    "--disable-radix-cache", "--mem-fraction-static", "0.85", "--context-length", "8192",
    "--chunked-prefill-size", "1024", "--max-running-requests", "8",
]
QWEN_TP2 = {"model": {"preset": "qwen3.5-35b-a3b"}, "server_args": {"tp_size": 2, "mem_fraction_static": 0.85}}


def _synth() -> str:
    return synth_log({**QWEN_TP2, "budget": estimated_budget(QWEN_TP2)}, "Qwen/Qwen3.5-35B-A3B")[0]


def test_real_bf16_log_weights_within_the_stated_error(tmp_path, capsys):
    """Nemotron-3-Nano BF16 on TP4: 14.72 GiB of parameters on the largest rank + 0.06 GiB
    residue = 14.78 predicted against 14.76 logged, inside ±3% (0.44 GB)."""
    log = tmp_path / "nano.log"
    log.write_text(NANO["verbatim"])
    code = main(["check-log", "--json", str(log), "--", *NANO_ARGS])
    data = json.loads(capsys.readouterr().out)
    est = data["ranks"][1]["estimated"]
    assert data["ranks"][1]["rank"] == "TP0..3"
    weights = est["weight_mem_usage_gb"]
    assert (weights["logged"], weights["predicted"], weights["error_gb"], weights["match"]) == (14.76, 14.78, 0.44, True)
    # No GPU line in the log and none given: the free memory is not estimated, and says why.
    after = est["avail_mem_after_load_gb"]
    assert (after["predicted"], after["match"]) == (None, None) and "prints no GPU name" in after["cause"]
    assert data["estimate_gpu"] is None
    # The plan's own figures (0.5.x on an XPU, version not printed) still differ: exit 1.
    assert code == 1
    assert data["ranks"][1]["figures"]["weight_mem_usage_gb"]["predicted"] is None


def test_wrong_gpu_is_outside_the_error_and_exits_1(tmp_path, capsys):
    """--gpu wins over the log's GPU line: the H200 log read as an H100's is 60 GB off."""
    log = tmp_path / "server.log"
    log.write_text(_synth())
    assert main(["check-log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "estimated before a boot" in out and "GPU h200" in out and "all predicted figures match" in out
    assert main(["check-log", "--json", str(log), "--gpu", "h100"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["estimate_gpu"] == "h100"
    est = data["ranks"][0]["estimated"]
    before = est["avail_mem_before_load_gb"]
    want = float(f"{(81559 * 2**20 - int(2.29 * GIB)) / GIB:.2f}")
    assert (before["predicted"], before["match"]) == (want, False)
    assert before["cause"].startswith("outside the estimate's stated error (±1.00 GB)") and "not explained" in before["cause"]
    assert est["weight_mem_usage_gb"]["match"] is True  # the weights do not depend on the GPU
    # The plan on the measured memory is untouched by --gpu: every exact figure still matches.
    assert all(f["cause"] is None for f in data["ranks"][0]["figures"].values() if f["predicted"] is not None)


def test_non_hopper_gpu_line_is_not_estimated_but_weights_are():
    text = _synth().replace("device_name=NVIDIA H200", "device_name=NVIDIA B200")
    result = check_log(text)
    assert result.data["gpu"] == "NVIDIA B200" and result.data["estimate_gpu"] is None
    est = result.data["ranks"][0]["estimated"]
    for name in ("avail_mem_before_load_gb", "avail_mem_after_load_gb"):
        assert est[name]["predicted"] is None and "not modelled" in est[name]["cause"], est[name]
    assert est["weight_mem_usage_gb"]["match"] is True
    assert result.all_match  # nothing estimated that differs; the exact figures match


@pytest.mark.parametrize(
    "printed, catalog, cause",
    [
        ("NVIDIA H200", "h200", None),
        ("NVIDIA H100 80GB", "h100", None),
        ("NVIDIA H100 NVL", "h100-nvl", None),
        ("NVIDIA H800", "h800", None),
        ("NVIDIA H100 PCIe", None, "capacity is not in the catalog"),
        ("NVIDIA A100 80GB", None, "not modelled"),
        (None, None, "prints no GPU name"),
    ],
)
def test_gpu_from_the_log_line(printed, catalog, cause):
    gpu, why = gpu_from_log(printed)
    assert (gpu.name if gpu else None) == catalog
    assert (why is None) if cause is None else (cause in why)


def test_gpu_argument_errors(tmp_path, capsys):
    log = tmp_path / "server.log"
    log.write_text(_synth())
    assert main(["check-log", str(log), "--gpu", "h300"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mambasizer: error: --gpu: unknown GPU 'h300'") and "h200" in err
    # A known GPU whose platform is not modelled: no estimate of the free memory, no error.
    assert main(["check-log", "--json", str(log), "--gpu", "b200"]) == 0
    est = json.loads(capsys.readouterr().out)["ranks"][0]["estimated"]
    assert est["avail_mem_before_load_gb"]["predicted"] is None and "Blackwell" in est["avail_mem_before_load_gb"]["cause"]


def test_api_gpu_field():
    with TestClient(create_app()) as client:
        _api_gpu_field(client)


def _api_gpu_field(client):
    text = _synth()
    body = client.post("/v1/check-log", json={"log": text, "gpu": "h100"}).json()
    assert body["estimate_gpu"] == "h100" and body["ranks"][0]["estimated"]["avail_mem_before_load_gb"]["match"] is False
    r = client.post("/v1/check-log", json={"log": text, "gpu": "h300"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["field"] == "gpu" and "unknown GPU" in r.json()["detail"]
    r = client.post("/v1/check-log", json={"log": text, "gpu": "x" * 65})
    assert r.status_code == 422 and r.json()["field"] == "gpu"


def test_the_stated_error_is_the_match_boundary():
    """A logged value exactly at the stated error matches; 0.01 GB beyond it does not."""
    est = Estimate(gpu=gpus.CATALOG["h200"], stage_weights=(10 * GIB,), world_size=1)
    usage = check("weight_mem_usage_gb", 0, 0.0, est, "x")
    predicted, error = usage["predicted"], usage["error_gb"]
    assert (predicted, error) == (10.06, 0.30)  # 10 GiB + 0.06 residue, 3% of it
    assert check("weight_mem_usage_gb", 0, round(predicted + error, 2), est, "x")["match"] is True
    assert check("weight_mem_usage_gb", 0, round(predicted - error - 0.01, 2), est, "x")["match"] is False
    before = check("avail_mem_before_load_gb", 0, 0.0, est, "x")["predicted"]
    assert before == float(f"{(143771 * 2**20 - int(1.19 * GIB)) / GIB:.2f}") == 139.21
    after = check("avail_mem_after_load_gb", 0, 0.0, est, "x")
    assert (after["predicted"], after["error_gb"]) == (round(before - 10.06, 2), 1.30)
    # A stage the weights do not name (a rank beyond the plan's stages) is not guessed.
    assert check("weight_mem_usage_gb", 3, 1.0, est, "x")["predicted"] is None


@pytest.mark.parametrize(
    "model_path, preset, quant",
    [
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia-nemotron-3-nano-30b-a3b", None),
        ("Qwen/Qwen3.5-35B-A3B-Base-X", "qwen3.5-35b-a3b", None),
        ("/data/nvme0n1p1/Qwen3.5-397B-A17B-FP8", "qwen3.5-397b-a17b", "(FP8)"),
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "nvidia-nemotron-3-super-120b-a12b", "(NVFP4)"),
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nvidia-nemotron-3-super-120b-a12b", None),
        ("cyankiwi/Qwen3.5-35B-A3B-AWQ-4bit", "qwen3.5-35b-a3b", "(4BIT/AWQ)"),
    ],
)
def test_a_differently_quantised_checkpoint_is_not_the_presets_weights(model_path, preset, quant):
    assert preset_for_model_path(model_path) == preset
    cause = checkpoint_variant_cause(model_path, preset)
    assert cause is None if quant is None else (f"in another quantisation {quant}" in cause and "--config" in cause)


def test_real_fp8_log_with_cpu_offload_is_not_estimated(tmp_path, capsys):
    """ktransformers#1870: an FP8 checkpoint of the bf16 preset, 400 GB offloaded to the CPU:
    predicting 370 GB of bf16 weights against 3.76 logged would be a false alarm."""
    entry = json.loads((ROOT / "tests/data/bootlogs/qwen3.5-397b-a17b-1.json").read_text())
    log = tmp_path / "kt.log"
    log.write_text(entry["verbatim"])
    main(["check-log", "--json", str(log), "--", *REAL_397B_ARGS])
    est = json.loads(capsys.readouterr().out)["ranks"][0]["estimated"]
    assert est["weight_mem_usage_gb"]["predicted"] is None and "another quantisation (FP8)" in est["weight_mem_usage_gb"]["cause"]
    # The bf16 name with the same offload: the flag is the cause.
    args = ["--model-path", "Qwen/Qwen3.5-397B-A17B", *REAL_397B_ARGS[2:]]
    main(["check-log", "--json", str(log), "--", *args])
    est = json.loads(capsys.readouterr().out)["ranks"][0]["estimated"]
    assert est["weight_mem_usage_gb"]["predicted"] is None
    assert "--cpu-offload-gb (part of the weights live in host memory)" in est["weight_mem_usage_gb"]["cause"]
    assert "--quantization (online / explicit quantization)" in est["weight_mem_usage_gb"]["cause"]


def test_weight_flag_in_the_record_is_named():
    text = _synth().replace("'mem_fraction_static': 0.85", "'mem_fraction_static': 0.85, 'cpu_offload_gb': 10")
    est = check_log(text).data["ranks"][0]["estimated"]
    assert est["avail_mem_after_load_gb"]["predicted"] is None
    assert est["weight_mem_usage_gb"]["cause"] == "weights not estimated: cpu_offload_gb=10 (part of the weights live in host memory)"
    # The free memory before the load does not depend on the weights: still estimated.
    assert est["avail_mem_before_load_gb"]["match"] is True


def test_weights_larger_than_the_gpu_and_unknown_parallelism_are_not_guessed():
    big = Estimate(gpu=gpus.CATALOG["h100"], stage_weights=(100 * GIB,), world_size=1)
    after = check("avail_mem_after_load_gb", 0, 1.0, big, "x")
    assert after["predicted"] is None and "exceed the estimated free memory" in after["cause"]
    assert check("weight_mem_usage_gb", 0, 100.0, big, "x")["match"] is True  # 100.06 ± 3.00
    unknown = Estimate(gpu=gpus.CATALOG["h100"], weights_cause="cannot plan: no model")
    for name in ("avail_mem_before_load_gb", "avail_mem_after_load_gb", "weight_mem_usage_gb"):
        assert check(name, 0, 1.0, unknown, "x") == {"logged": 1.0, "predicted": None, "error_gb": None, "match": None, "cause": "cannot plan: no model"}


def test_speculative_run_estimates_the_target_line_alone():
    """A rank's first 'Load weight end' line (the one the reader keeps) is the target model's:
    SGLang loads the MTP layers in the draft worker after it. The estimate leaves them out."""
    spec = {
        "model": {"preset": "qwen3.5-35b-a3b"},
        "server_args": {"tp_size": 2, "mem_fraction_static": 0.85, "speculative_algorithm": "NEXTN", "speculative_num_steps": 3,
                        "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4},
    }
    spec["budget"] = estimated_budget(spec)
    text, _ = synth_log(spec, "Qwen/Qwen3.5-35B-A3B")
    weights = check_log(text).data["ranks"][0]["estimated"]["weight_mem_usage_gb"]
    lay = layout_from_hf_config(dict(PRESETS["qwen3.5-35b-a3b"].hf_config))
    stages = pp_stages(lay.num_hidden_layers, 1, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    target, with_mtp = (stage_weight_bytes(lay, tp_size=2, pp_size=1, ep_size=1, stages=stages, load_nextn=n)[0] for n in (False, True))
    assert with_mtp > target
    assert weights["predicted"] == float(f"{(target + int(0.06 * GIB)) / GIB:.2f}")
    assert "the target model's: its line comes before the MTP / draft weights load" in weights["cause"]


@pytest.mark.parametrize(
    "given, name, memory_mib",
    [("81559", "h100", 81559), ("143771MiB", "h200", 143771), ("95000", "95000MiB", 95000), ("H200", "h200", 143771)],
)
def test_gpu_by_total_memory(given, name, memory_mib):
    gpu, cause = gpu_named(given)
    assert (gpu.name, gpu.memory_mib, cause) == (name, memory_mib, None)


def test_uncatalogued_capacity_says_hopper_is_assumed_and_silly_ones_are_refused(tmp_path, capsys):
    log = tmp_path / "server.log"
    log.write_text(_synth())
    main(["check-log", "--json", str(log), "--gpu", "95000"])
    data = json.loads(capsys.readouterr().out)
    before = data["ranks"][0]["estimated"]["avail_mem_before_load_gb"]
    assert data["estimate_gpu"] == "95000MiB"
    assert before["predicted"] == float(f"{(95000 * 2**20 - int(2.29 * GIB)) / GIB:.2f}")
    assert "(not a catalog GPU: Hopper's residents assumed)" in before["cause"]
    for silly in ("0", "12", "99999999999999999999", "9" * 50_000):
        assert main(["check-log", str(log), "--gpu", silly]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--gpu: a capacity of" in err
