"""--speculative-draft-model-path resolved like the target: its config's num_hidden_layers
prices the draft's KV layers (what draft_model.num_layers says), the plan names what was read,
and says that its weights are not in an estimated budget. The target's own path is its MTP
head; a draft that cannot be read keeps the launch sizable, with the reason."""

from __future__ import annotations

import json

import ckpt_fixtures as F
from mambasizer.service.api import wire
from mambasizer.service.planner import plan

EAGLE = ["--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens", "4"]


def _draft_folder(tmp_path):
    """An EAGLE3 draft folder: one decoder layer (constructed config; only num_hidden_layers is
    read for sizing) and one safetensors file with a real header."""
    d = tmp_path / "eagle3-draft"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
                                               "hidden_size": 5120, "num_hidden_layers": 1, "num_attention_heads": 40,
                                               "num_key_value_heads": 8, "intermediate_size": 17408, "vocab_size": 248320}))
    F.write_safetensors(d / "model.safetensors", [("midlayer.self_attn.q_proj.weight", "BF16", (5120, 10240)),
                                                  ("fc.weight", "BF16", (5120, 15360))])
    return d


def _prepare(target: str, draft: str) -> wire.Prepared:
    return wire.prepare({"sglang_args": ["--model-path", target, "--speculative-draft-model-path", draft, *EAGLE],
                         "budget": {"rest_gib": 40.0}}, allow_trial=False)


def test_a_draft_directory_prices_its_layers(checkpoints, tmp_path):
    draft = _draft_folder(tmp_path)
    p = _prepare(str(checkpoints["fp8"]), str(draft))
    assert p.request.draft_model is not None and p.request.draft_model.num_layers == 1
    assert p.checkpoint is not None
    assert p.checkpoint["draft"]["source"] == "directory"
    assert p.checkpoint["draft"]["files_read"] == ["config.json", "model.safetensors (header)"]
    stored = (5120 * 10240 + 5120 * 15360) * 2
    assert any(f"its weights ({stored:,} bytes stored) are not in an estimated budget" in w for w in p.sglang_args_warnings)
    assert not any("cannot be read without its files" in w for w in p.sglang_args_warnings)
    result = plan(p.request)
    assert "draft_model.num_layers: 1 draft KV layer(s) priced" in result.resolved.draft_kv_layers_reason


def test_the_target_path_as_draft_is_its_mtp_head(checkpoints):
    p = _prepare(str(checkpoints["bf16-mtp"]), str(checkpoints["bf16-mtp"]))
    assert p.request.draft_model is None
    assert "num_nextn_predict_layers" in plan(p.request).resolved.draft_kv_layers_reason


def test_an_unreadable_draft_keeps_the_launch_sizable(checkpoints, tmp_path):
    p = _prepare(str(checkpoints["fp8"]), str(tmp_path / "no-such-draft"))
    assert p.request.draft_model is None
    assert any("was not read" in w and "no such directory" in w for w in p.sglang_args_warnings)


def test_a_draft_checkpoints_weights_move_an_estimated_plan_by_exactly_its_bytes(checkpoints):
    """A GPU-only budget: SGLang loads the draft's weights on every rank before sizing the pools.
    The fixture BF16 checkpoint as the FP8 target's draft (SGLang rebuilds it as its MTP class):
    the last stage's weights grow by exactly draft_weight_bytes at the target's TP, and the free
    memory after load falls by the same bytes."""
    from mambasizer.service.solver.weights.draft import draft_weight_bytes

    args = ["--model-path", str(checkpoints["fp8"]), "--speculative-draft-model-path", str(checkpoints["bf16-mtp"]),
            "--tp-size", "2", *EAGLE]
    p = wire.prepare({"sglang_args": args, "budget": {"gpu": "h200"}}, allow_trial=False)
    assert p.request.draft_model is not None and p.request.draft_model.hf_config is not None
    assert any("its weights on every rank in an estimated budget" in w for w in p.sglang_args_warnings)
    without = p.request.model_copy(update={"draft_model": p.request.draft_model.model_copy(update={"hf_config": None})})
    priced, unpriced = plan(p.request), plan(without)
    draft = draft_weight_bytes(p.request.draft_model.hf_config, tp_size=2, ep_size=1)
    assert draft == 3_020_003_328  # tests/conformance/test_draft_weights.py: SGLang's draft class at tp 2
    assert priced.stages[-1].weights_bytes - unpriced.stages[-1].weights_bytes == draft
    moved = (unpriced.stages[-1].free_gib_after_load - priced.stages[-1].free_gib_after_load) * (1 << 30)
    assert abs(moved - draft) < 1 << 20  # the free GiB are reported rounded
    assert priced.max_total_num_tokens < unpriced.max_total_num_tokens


def test_a_draft_config_the_weights_cannot_be_derived_from_names_the_draft(checkpoints):
    """A draft_model.hf_config whose quant format is not modelled: refused naming the draft's
    field, not the target's model.hf_config."""
    import pytest

    from mambasizer.service.solver.errors import PlanInputError

    config = F.config("bf16-mtp")
    config["quantization_config"] = {"quant_method": "bitsandbytes"}
    body = {"sglang_args": ["--model-path", str(checkpoints["fp8"]), *EAGLE], "budget": {"gpu": "h200"},
            "draft_model": {"num_layers": 1, "hf_config": config}}
    with pytest.raises(PlanInputError) as exc:
        plan(wire.prepare(body, allow_trial=False).request)
    assert exc.value.field == "draft_model.hf_config.quantization_config.quant_method", exc.value
