"""The fixture checkpoints (tests/checkpoints/ckpt_fixtures.py: an FP8 block checkpoint whose
modules_to_not_convert names the GDN in_proj_a / in_proj_b shards, a GPTQ INT4 one, the BF16
one with its MTP head, and a compressed-tensors NVFP4 (`nvfp4-pack-quantized`) one), read from their folders by the
resolver (service/checkpoints): per-rank weights equal SGLang 0.5.23's model classes built on
the meta device for the config read (tests/conformance/weights_ref.py), and the tensor
inventory's cross-check is printed."""

from __future__ import annotations

import os
import sys

import pytest

import weights_ref as W
from mambasizer.service.checkpoints import cross_check, resolve
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checkpoints"))
import ckpt_fixtures as F


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("fixture-checkpoints")
    return {s: F.write_checkpoint(root / s, s) for s in F.SCHEMES}


def _ours(config: dict, tp: int) -> int:
    lay = layout_from_hf_config(dict(config))
    stages = pp_stages(lay.num_hidden_layers, 1, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
    return stage_weight_bytes(lay, tp_size=tp, pp_size=1, ep_size=1, stages=stages, load_nextn=False)[0]


@pytest.mark.parametrize("tp", (1, 2))
@pytest.mark.parametrize("scheme", ("fp8", "int4-gptq", "bf16-mtp", "nvfp4-ct"))
def test_fixture_weights_equal_sglang_model_classes(folders, scheme, tp):
    found = resolve(str(folders[scheme]))
    theirs, _ = W.rank_bytes(dict(found.config), tp=tp, pp=1)
    ours = _ours(found.config, tp)
    assert ours == theirs, f"{scheme} tp {tp}: ours {ours} != SGLang {theirs} ({ours - theirs:+})"
    check = cross_check(found.config, found.inventory)
    print(f"\n{scheme} tp {tp}: {ours:,} bytes per rank = SGLang's; inventory: {check['note']}")
    assert check["agrees"] is True


def test_weight_only_nvfp4_equals_sglang():
    """nvfp4a16 (the NVFP4 fixture without input_activations): CompressedTensorsW4A16Fp4 without
    input_global_scale."""
    config = F.config("nvfp4-ct")
    del config["quantization_config"]["config_groups"]["group_0"]["input_activations"]
    theirs, _ = W.rank_bytes(dict(config), tp=2, pp=1)
    assert _ours(config, 2) == theirs
