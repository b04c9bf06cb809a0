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


# Words in a checkpoint's name that say its weights are quantised some way.
_QUANT_WORDS = frozenset(
    "fp8 fp4 nvfp4 mxfp4 mxfp8 int4 int8 awq gptq autoround w4a16 w8a8 w4a8 w8a16 4bit 8bit bnb gguf exl2 quantized".split()
)


def _last_part(path: str) -> str:
    return path.strip().rstrip("/").rsplit("/", 1)[-1].lower()


@dataclass(frozen=True)
class LoggedModel:
    """What a start-up log's `model_path` is sized as (`resolve_logged_model_path`)."""

    resolved: ResolvedModel
    # Set when the name was matched leniently (a suffix after a shipped checkpoint's name):
    # which preset it was taken as, said in check-log's notes.
    lenient_note: str | None = None
    # Why the preset's weights are not the logged checkpoint's (another quantisation), or None.
    weights_cause: str | None = None


def lenient_preset(model_path: str) -> str | None:
    """The shipped preset whose name or checkpoint id `model_path`'s last part starts with,
    followed by a suffix (`Qwen3.5-397B-A17B-FP8`, `...-Base-X`); the longest match wins."""
    from mambasizer.service.presets import PRESETS, repo_id

    base = _last_part(model_path)
    best: tuple[int, str] | None = None
    for name, preset in PRESETS.items():
        if not preset.sizable:
            continue
        for candidate in {name.lower(), _last_part(repo_id(preset))}:
            if candidate and (base == candidate or base.startswith(candidate + "-")):
                if best is None or len(candidate) > best[0]:
                    best = (len(candidate), name)
    return best[1] if best else None


def variant_weights_cause(model_path: str, preset_name_: str) -> str | None:
    """Why a `model_path` naming a preset with a quantisation suffix its own checkpoint does not
    carry (`...-FP8`, `...-AWQ-4bit`) cannot take the preset's weights; None when it can."""
    import re

    from mambasizer.service.presets import PRESETS, repo_id

    base = _last_part(model_path)
    preset = PRESETS[preset_name_]
    model_id = _last_part(repo_id(preset))
    for candidate in sorted({preset_name_.lower(), model_id}, key=len, reverse=True):
        if base == candidate or base.startswith(candidate + "-"):
            marks = set(re.split(r"[-_.]", base[len(candidate):])) & _QUANT_WORDS
            missing = marks - set(re.split(r"[-_.]", model_id))
            if missing:
                return (
                    f"model_path {model_path!r} is preset {preset_name_!r} ({repo_id(preset)}) in another "
                    f"quantisation ({'/'.join(sorted(missing)).upper()}): its weights are not the preset's; give its config.json "
                    "(--config / hf_config) to estimate them"
                )
            return None
    return None


def resolve_logged_model_path(path: str, revision: str | None = None) -> LoggedModel | None:
    """The model a start-up log's `model_path` is sized as, or None (give its config.json).

    A shipped checkpoint (a preset name or its HF repo id, any case) resolves exactly as
    `resolve_model_path` resolves it. The fallback, for logs only: a name that is a shipped
    checkpoint's followed by a suffix (`/data/Qwen3.5-397B-A17B-FP8`) is taken as that preset,
    said in the note, with its weights flagged when the suffix names another quantisation.
    A log's path names a checkpoint on the machine that wrote it, so no directory, cache or
    Hub is read here for it (a directory of the same name on this machine may be another)."""
    if preset_name(path) is not None:
        return LoggedModel(resolve_model_path(path, revision))
    preset = lenient_preset(path)
    if preset is None:
        return None
    note = (
        f"model_path {path!r} names no shipped checkpoint exactly; taken as preset {preset!r}, whose checkpoint's "
        "name it starts with (check-log's lenient match for logs; give the config.json to size it exactly)"
    )
    return LoggedModel(ResolvedModel({"preset": preset}, preset, None), note, variant_weights_cause(path, preset))
