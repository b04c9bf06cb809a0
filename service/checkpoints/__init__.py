"""Checkpoints read where SGLang reads them: a model directory, the Hugging Face cache, the Hub
(through huggingface_hub), within the operator's ReadPolicy. The one entry point for a request
is `model_for` (a model path -> the PlanRequest's `model` and what the plan says about it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambasizer.service.checkpoints.crosscheck import cross_check
from mambasizer.service.checkpoints.inventory import Inventory, Tensor
from mambasizer.service.checkpoints.policy import (
    CLI_POLICY,
    ReadPolicy,
    current_policy,
    policy_scope,
    serve_policy,
)
from mambasizer.service.checkpoints.resolve import CACHE, Checkpoint, CheckpointError, resolve


def model_for(model_path: str, revision: str | None = None, *, field_name: str = "sglang_args") -> tuple[dict, dict]:
    """(the request's `model` for this path, the `checkpoint` object the plan carries).
    A shipped checkpoint stays a preset (the fast path); any other becomes its config.json
    (with hf_quant_config.json), checked against its tensor inventory."""
    found = resolve(model_path, revision, field_name=field_name)
    info = found.describe()
    if found.preset is not None:
        return {"preset": model_path}, info  # as given: the preset lookup takes a name or repo id, any case
    if found.inventory is not None:
        info["cross_check"] = cross_check(found.config, found.inventory)
    return {"hf_config": dict(found.config)}, info

def draft_for(draft_path: str, target_path: str | None) -> tuple[dict | None, dict | None, str]:
    """(the request's `draft_model`, the `checkpoint.draft` object, a note) for
    --speculative-draft-model-path, resolved like the target. The target's own path is its MTP
    head (SGLang builds the draft from the same checkpoint; num_nextn_predict_layers prices it):
    no draft_model. A draft that cannot be read keeps today's answer (its KV unpriced, said in
    the note) rather than refusing the launch: the target is what is sized."""
    if target_path is not None and draft_path.rstrip("/") == target_path.rstrip("/"):
        return None, None, ""
    try:
        found = resolve(draft_path, None, field_name="sglang_args")
    except CheckpointError as exc:
        return None, None, f"--speculative-draft-model-path {draft_path[:200]!r} was not read ({exc.message})"
    text = found.config.get("text_config") if isinstance(found.config.get("text_config"), dict) else found.config
    layers = text.get("num_hidden_layers") if isinstance(text, dict) else None
    info = found.describe()
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 0:
        return None, info, f"--speculative-draft-model-path {draft_path[:200]!r}: its config.json has no num_hidden_layers"
    stored = found.inventory.total_bytes if found.inventory is not None else None
    geometry = _draft_geometry(found.config, text if isinstance(text, dict) else found.config)
    read = f"--speculative-draft-model-path {draft_path[:200]!r}: read from {found.source} ({', '.join(found.files) or 'shipped'})"
    config = dict(found.config)
    if _draft_weights_priced(config):
        # The solver prices the draft's weights per rank from its config (weights/draft.py).
        priced = (f"{read}; its {layers} layer(s) priced as the draft's KV layers, and its weights on every rank in an "
                  "estimated budget (SGLang loads them before sizing the pools)")
        return {"num_layers": layers, "hf_config": config, **geometry}, info, priced
    held = f"({stored:,} bytes stored) " if stored is not None else ""
    note = (f"{read}; its {layers} layer(s) priced as the draft's KV layers; its weights {held}are not in an "
            f"estimated budget (SGLang builds {_arch(config)}, a draft the weights code does not walk); a measured "
            "one holds them")
    return {"num_layers": layers, **geometry}, info, note


def _draft_geometry(config: Mapping[str, Any], text: Mapping[str, Any]) -> dict:
    """What DFLASH / DSPARK read off the draft's config (service/solver/dflash.py): its attention
    geometry for the draft KV cell (ModelConfig: num_key_value_heads, else the attention heads;
    head_dim, else hidden_size // heads), its dtype, and its block size (`dflash_config.block_size`,
    else top-level `block_size`; DSPARK's top-level `dspark_block_size`)."""

    def pos_int(v: object) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    out: dict = {}
    heads = pos_int(text.get("num_attention_heads"))
    kv_heads = pos_int(text.get("num_key_value_heads")) or heads
    head_dim = pos_int(text.get("head_dim"))
    hidden = pos_int(text.get("hidden_size"))
    if head_dim is None and hidden is not None and heads is not None:
        head_dim = hidden // heads
    dtype = text.get("torch_dtype") or text.get("dtype") or config.get("torch_dtype") or config.get("dtype")
    nested_cfg = config.get("dflash_config")
    nested = nested_cfg if isinstance(nested_cfg, dict) else {}
    block = pos_int(nested.get("block_size", config.get("block_size")))
    for key, value in (("num_kv_heads", kv_heads), ("head_dim", head_dim), ("block_size", block),
                       ("dspark_block_size", pos_int(config.get("dspark_block_size")))):
        if value is not None:
            out[key] = value
    if dtype in ("bfloat16", "float16", "float32"):
        out["dtype"] = dtype
    return out


def _arch(config: dict) -> str:
    archs = config.get("architectures")
    return str(archs[0])[:100] if isinstance(archs, list) and archs else "a model without architectures"


def _draft_weights_priced(config: dict) -> bool:
    """Whether the solver can price this draft's weights: its family is one the weights code walks."""
    from mambasizer.service.solver.errors import PlanInputError
    from mambasizer.service.solver.families import layout_from_hf_config

    try:
        layout_from_hf_config(dict(config), path="draft_model.hf_config")
    except PlanInputError:
        return False
    return True


__all__ = [
    "CACHE",
    "CLI_POLICY",
    "Checkpoint",
    "CheckpointError",
    "Inventory",
    "ReadPolicy",
    "Tensor",
    "cross_check",
    "current_policy",
    "draft_for",
    "model_for",
    "policy_scope",
    "resolve",
    "serve_policy",
]
