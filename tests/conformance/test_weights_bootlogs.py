"""Predicted weight bytes against real SGLang start-up logs (`Load weight end ... mem usage=X GB`).

The logs in tests/data/bootlogs/ are copies of public SGLang logs (each keeps its `source`;
the index of where they came from is the project's shared bootlog collection). SGLang prints
`mem usage` as (free before - free after) / 2**30, so it is compared with our bytes / 2**30,
within 3%. Every log in the folder must have a decision below: a checked deployment, or the
reason it cannot be checked (a checkpoint whose quantization_config is not in the presets, a
CPU-offloaded load, a log without the figure).
"""

from __future__ import annotations

import json
import pathlib

import pytest

from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes

LOGS = pathlib.Path(__file__).resolve().parents[1] / "data" / "bootlogs"
TOLERANCE = 0.03

# log file -> (preset whose config.json is the logged checkpoint's, tp, pp, ep, figure key)
CHECKED = {
    # NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, TP4 (an XPU build: the weights are the same tensors).
    "nemotron-3-nano-1.json": ("nvidia-nemotron-3-nano-30b-a3b", 4, 1, 1, "weight_mem_usage_gb"),
}
SKIPPED = {
    "nemotron-3-nano-omni-30b-a3b-1.json": "no weight mem usage figure in the log, and the Omni (vision/audio) checkpoint is not a preset",
    "nemotron-3-nano-omni-30b-a3b-2.json": "no weight mem usage figure in the log, and the Omni (vision/audio) checkpoint is not a preset",
    "nemotron-3-super-120b-a12b-1.json": "NVFP4 checkpoint: its hf_quant_config.json as the catalog holds it (aiconfigurator-core 0.12.0) has no group_size, which SGLang 0.5.23's ModelOptFp4Config refuses (ValueError), so it is not shipped as a preset (the shipped Super is the FP8 release)",
    "nemotron-3-super-120b-a12b-2.json": "NVFP4 checkpoint: its hf_quant_config.json as the catalog holds it (aiconfigurator-core 0.12.0) has no group_size, which SGLang 0.5.23's ModelOptFp4Config refuses (ValueError), so it is not shipped as a preset (the shipped Super is the FP8 release)",
    "nemotron-3-ultra-550b-a55b-1.json": "NVFP4 checkpoint: its catalogued hf_quant_config.json has no group_size, which SGLang 0.5.23 refuses; not a preset (the FP8 release is)",
    "qwen3.5-35b-a3b-1.json": "community AWQ-4bit re-quantization: its quantization_config (bits, group, ignore list) is not in the presets",
    "qwen3.5-35b-a3b-2.json": "AutoRound INT4 re-quantization: its quantization_config is not in the presets",
    "qwen3.5-397b-a17b-1.json": "--cpu-offload-gb 400: most weights live in host memory, so mem usage is not the weights",
    "qwen3.6-27b-2.json": "AutoRound INT4 re-quantization: its quantization_config is not in the presets (the preset is the bf16 release)",
}


def _logs():
    return sorted(p.name for p in LOGS.glob("*.json"))


def test_every_log_has_a_decision():
    logs = _logs()
    assert logs, f"no boot logs in {LOGS}"
    for name in logs:
        assert (name in CHECKED) != (name in SKIPPED), f"{name}: say whether it is checked, or why not"
        assert json.loads((LOGS / name).read_text()).get("source"), f"{name}: keep the log's source"


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_weights_within_3_percent_of_boot_log(name):
    log = json.loads((LOGS / name).read_text())
    preset, tp, pp, ep, key = CHECKED[name]
    assert log["parallel"]["tp_size"] == tp and log["parallel"]["pp_size"] == pp
    logged_gib = float(log["figures"][key])
    lay = layout_from_hf_config(dict(PRESETS[preset].hf_config))
    stages = pp_stages(lay.num_hidden_layers, pp, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    predicted_gib = max(stage_weight_bytes(lay, tp_size=tp, pp_size=pp, ep_size=ep, stages=stages, load_nextn=False)) / 2**30
    error = abs(predicted_gib - logged_gib) / logged_gib
    assert error <= TOLERANCE, f"{name}: predicted {predicted_gib:.2f} GiB vs logged {logged_gib} GiB ({error:.1%})"
