"""`--model-path` -> the model to size: THE one place a launch's model path is resolved.

A model path resolves as SGLang resolves it (service/checkpoints): a shipped checkpoint (a preset
name, or the HF repo id of a preset's checkpoint, any case: the fast path, no file read), else a
local directory, the HF cache or the Hub, within the ReadPolicy in force. Every front (the API's
`sglang_args`, `plan`, `check`, the preflight) reaches the model path through this module only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mambasizer.service.presets import preset_name
from mambasizer.service.solver import PlanInputError

FIELD = "sglang_args"


@dataclass(frozen=True)
class ResolvedModel:
    """What a model path names: the request's `model` section, and the shipped preset it is
    (None when it names no shipped checkpoint: the plan then refuses `model.preset` by name)."""

    model: dict
    preset: str | None
    # Where it was found and what was read (the plan's `checkpoint` object).
    checkpoint: dict | None = None


def resolve_model_path(path: str, revision: str | None = None) -> ResolvedModel:
    """The model `--model-path PATH` (at `--revision`) names."""
    from mambasizer.service.checkpoints import model_for

    model, info = model_for(path, revision)
    return ResolvedModel(model, preset_name(path), info)


def resolve_draft_path(draft_path: str, target_path: str | None) -> tuple[dict | None, dict | None, str]:
    """`--speculative-draft-model-path`, resolved like the target: (draft_model, checkpoint.draft, note)."""
    from mambasizer.service.checkpoints import draft_for

    return draft_for(draft_path, target_path)


def check_agrees(model: Any, path: str, option: str = "--model-path") -> None:
    """A request that names its model twice (`model.preset`, or `check --preset`, and a launch
    line's `--model-path`) must name one checkpoint: SGLang loads the model path, so sizing the
    other one would answer for a model that never starts. Refused naming both. A path that
    names no shipped checkpoint (a local directory) cannot be compared here and is left alone."""
    if not isinstance(model, dict) or not isinstance(model.get("preset"), str):
        return
    given = model["preset"]
    ours = preset_name(given)
    theirs = preset_name(path)  # by name only: no file is read to compare two names
    if ours is None or theirs is None or ours == theirs:
        return
    raise PlanInputError(
        FIELD,
        f"{option} {path} names the checkpoint of preset {theirs!r}, but the request sizes preset {given!r} "
        f"(model.preset / --preset): SGLang would load {path}; name one model (drop --preset, or make {option} "
        "its checkpoint)",
    )
