"""Checkpoints read where SGLang reads them: a model directory, the Hugging Face cache, the Hub
(through huggingface_hub), within the operator's ReadPolicy. The one entry point for a request
is `model_for` (a model path -> the PlanRequest's `model` and what the plan says about it)."""

from __future__ import annotations

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
    read = f"--speculative-draft-model-path {draft_path[:200]!r}: read from {found.source} ({', '.join(found.files) or 'shipped'})"
    config = dict(found.config)
    if _draft_weights_priced(config):
        # The solver prices the draft's weights per rank from its config (weights/draft.py).
        priced = (f"{read}; its {layers} layer(s) priced as the draft's KV layers, and its weights on every rank in an "
                  "estimated budget (SGLang loads them before sizing the pools)")
        return {"num_layers": layers, "hf_config": config}, info, priced
    held = f"({stored:,} bytes stored) " if stored is not None else ""
    note = (f"{read}; its {layers} layer(s) priced as the draft's KV layers; its weights {held}are not in an "
            f"estimated budget (SGLang builds {_arch(config)}, a draft the weights code does not walk); a measured "
            "one holds them")
    return {"num_layers": layers}, info, note


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
