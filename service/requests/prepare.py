"""A decoded request (a JSON object: a PlanRequest, optionally with `sglang_args` in place of
`server_args` and `--model-path` naming the model) -> the PlanRequest to size plus its notes.
Every front calls `prepare`: what one refuses, all refuse, with the same field named."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from mambasizer.schemas import PlanRequest
from mambasizer.service.requests.errors import validation_error
from mambasizer.service.requests.launch_line import take_sglang_args, weight_moving
from mambasizer.service.requests.model_path import (
    check_agrees,
    resolve_draft_path,
    resolve_model_path,
)
from mambasizer.service.solver import PlanInputError


@dataclass(frozen=True)
class Prepared:
    request: PlanRequest
    ignored_sglang_args: list[str] | None  # None when the request did not use sglang_args
    trial: dict | None  # None when no trial was asked for
    sglang_args_warnings: tuple[str, ...] = ()
    # The model_name SGLang's own metrics carry (from sglang_args), so gauges can join them.
    metrics_model_name: str | None = None
    # Where --model-path was found and what was read (service/checkpoints), when it was given.
    checkpoint: dict | None = None

    def extra_fields(self) -> dict:
        """The fields a response adds to the Plan for this request's sglang_args."""
        out: dict = {}
        if self.checkpoint is not None:
            out["checkpoint"] = self.checkpoint
        if self.ignored_sglang_args is not None:
            out["ignored_sglang_args"] = self.ignored_sglang_args
        if self.sglang_args_warnings:
            out["sglang_args_warnings"] = list(self.sglang_args_warnings)
        return out


def prepare(raw: dict, allow_trial: bool = True) -> Prepared:
    """A decoded body -> the PlanRequest to size, the ignored launch flags and the trial
    options. Raises PlanInputError (InvalidRequest for schema errors) for input that
    cannot be sized."""
    raw = dict(raw)
    trial = raw.pop("trial", None)
    if trial is not None:
        if not allow_trial:
            raise PlanInputError("trial", "is only accepted by POST /v1/plan")
        if not isinstance(trial, dict):
            raise PlanInputError("trial", "must be a JSON object (the trial options; {} for the defaults)")
    parsed = None
    if "sglang_args" in raw:
        value = raw.pop("sglang_args")
        if value is not None:
            raw, parsed = take_sglang_args(raw, value)
    ignored = list(parsed.ignored or []) if parsed is not None else []
    checkpoint = None
    if parsed is not None and parsed.model_path:
        if "model" not in raw:
            # `--model-path` names the checkpoint when the body does not.
            resolved = resolve_model_path(parsed.model_path, parsed.revision)
            raw["model"], checkpoint = resolved.model, resolved.checkpoint
            ignored = [a for a in ignored if a not in ("--model-path", "--model", "--revision")]
        else:
            check_agrees(raw["model"], parsed.model_path)
    elif parsed is not None and "model" not in raw:
        raise PlanInputError(
            "model", "is required: give model (a preset or hf_config; `check --preset`), or --model-path in the launch arguments (sglang_args)"
        )
    draft_note = ""
    if parsed is not None and parsed.draft_model_path and "draft_model" not in raw:
        draft, draft_info, draft_note = resolve_draft_path(parsed.draft_model_path, parsed.model_path)
        if draft is not None:
            raw["draft_model"] = draft
        if draft_info is not None and checkpoint is not None:
            checkpoint = {**checkpoint, "draft": draft_info}
    try:
        request = PlanRequest.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, from_sglang_args=parsed is not None) from None
    if parsed is None:
        return Prepared(request, None, trial)
    warnings = tuple(parsed.warnings or ())
    if draft_note:
        if "draft_model" in raw:  # read: the "cannot be read without its files" warning no longer holds
            warnings = tuple(w for w in warnings if "cannot be read without its files" not in w)
        warnings += (draft_note,)
    if parsed.weight_moving:
        warnings += weight_moving(request, parsed.weight_moving)
    return Prepared(request, ignored, trial, warnings, parsed.metrics_model_name, checkpoint)
