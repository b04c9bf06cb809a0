"""`--model-path` -> the model to size: THE one place a launch's model path is resolved.

Today a model path resolves to a shipped checkpoint: a preset name, or the HF repo id of a
preset's checkpoint (any case), exactly as `model.preset` accepts them. Reading a local
directory, the HF cache or the Hub belongs here too (checkpoint resolution plugs in behind
`resolve_model_path`); every front (the API's `sglang_args`, `plan`, `check`, the preflight)
reaches the model path through this module only.
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


def resolve_model_path(path: str) -> ResolvedModel:
    """The model `--model-path PATH` names."""
    # As given: model.preset answers to a preset name and to a shipped checkpoint's repo id
    # (any case), and an unknown path is quoted by its refusal with the closest names.
    return ResolvedModel({"preset": path}, preset_name(path))


def check_agrees(model: Any, path: str, option: str = "--model-path") -> None:
    """A request that names its model twice (`model.preset`, or `check --preset`, and a launch
    line's `--model-path`) must name one checkpoint: SGLang loads the model path, so sizing the
    other one would answer for a model that never starts. Refused naming both. A path that
    names no shipped checkpoint (a local directory) cannot be compared here and is left alone."""
    if not isinstance(model, dict) or not isinstance(model.get("preset"), str):
        return
    given = model["preset"]
    ours = preset_name(given)
    theirs = resolve_model_path(path).preset
    if ours is None or theirs is None or ours == theirs:
        return
    raise PlanInputError(
        FIELD,
        f"{option} {path} names the checkpoint of preset {theirs!r}, but the request sizes preset {given!r} "
        f"(model.preset / --preset): SGLang would load {path}; name one model (drop --preset, or make {option} "
        "its checkpoint)",
    )
