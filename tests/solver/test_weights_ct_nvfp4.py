"""compressed-tensors NVFP4 (service/solver/weights/quant/ct_nvfp4.py) beyond its conformance
test: the experts it does not model and the activation layouts SGLang refuses are refused by
field, never priced as something else."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checkpoints"))
import ckpt_fixtures as F


def _bytes(config: dict, tp: int = 1) -> int:
    lay = layout_from_hf_config(config)
    stages = pp_stages(lay.num_hidden_layers, 1, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    return stage_weight_bytes(lay, tp_size=tp, pp_size=1, ep_size=1, stages=stages, load_nextn=False)[0]


def test_nvfp4_experts_are_refused_by_field():
    config = dict(PRESETS["qwen3.5-35b-a3b"].hf_config)
    config.pop("hf_quant_config", None)
    config["quantization_config"] = F.quant_config("nvfp4-ct")
    with pytest.raises(PlanInputError, match="NVFP4 experts are not modelled") as exc:
        _bytes(config)
    assert exc.value.field == "model.hf_config.quantization_config.format"


def test_float4_activations_outside_the_nvfp4_layout_are_sglangs_refusal():
    config = F.config("nvfp4-ct")
    config["quantization_config"]["config_groups"]["group_0"]["input_activations"]["group_size"] = 32
    with pytest.raises(PlanInputError, match="only supported in the NVFP4 layout") as exc:
        _bytes(config)
    assert exc.value.field.endswith("config_groups.input_activations")
