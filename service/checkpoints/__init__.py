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

__all__ = ["CACHE", "CLI_POLICY", "Checkpoint", "CheckpointError", "Inventory", "ReadPolicy", "Tensor", "cross_check",
           "current_policy", "model_for", "policy_scope", "resolve", "serve_policy"]
