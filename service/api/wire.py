"""Request decoding and Plan encoding shared by the HTTP API and `mambasizer plan`.

No web framework here: `mambasizer plan` imports this module without paying for FastAPI.
Both front ends decode the same bytes the same way and encode a Plan with the same
serializer, so `POST /v1/plan` answers byte for byte what `mambasizer plan --json` prints.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, ValidationError

import mambasizer.schemas.request as request_schema
from mambasizer.schemas import Plan, PlanRequest
from mambasizer.schemas.releases import DEFAULT_RELEASE
from mambasizer.schemas.trial import TrialRefusal, TrialResult
from mambasizer.schemas.vllm_plan import VllmPlan
from mambasizer.service.sglang_args import parse_sglang_args
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.plan import input_error_from_validation

MAX_BODY_BYTES = 1 << 20  # 1 MiB: far above any config.json, far below anything harmful
# The largest list the schema allows stays under MAX_BODY_BYTES, so the OpenAPI never calls
# valid a body the server refuses with 413 (tests/api/test_api_openapi_maxima.py sums them).
MAX_SGLANG_ARGS = request_schema.MAX_SGLANG_ARGS
MAX_SGLANG_ARG_CHARS = request_schema.MAX_SGLANG_ARG_CHARS
MAX_LISTED_ERRORS = 20


class ApiPlanRequest(PlanRequest):
    """The body of `POST /v1/plan`: a PlanRequest, optionally with SGLang launch arguments
    in place of `server_args`, and optionally a trial allocation on the GPU worker."""

    sglang_args: Annotated[list[Annotated[str, Field(max_length=MAX_SGLANG_ARG_CHARS)]], Field(max_length=MAX_SGLANG_ARGS)] | None = Field(
        None,
        description="SGLang 0.5.23 launch arguments exactly as passed to `sglang.launch_server` "
        "(flag names and aliases as SGLang spells them), in place of `server_args`. Flags that do "
        "not change sizing are ignored and listed in the response's `ignored_sglang_args`; a flag "
        "that changes sizing but is not modelled is refused (422) by name.",
    )
    trial: dict[str, Any] | None = Field(
        None,
        description="Run a trial allocation of this plan (TrialOptions; `{}` for the defaults) and return it "
        "under `trial` in the response. The server runs trials only when its operator enabled them "
        "(`--enable-trials`), and may require `Authorization: Bearer <trial token>`; otherwise the plan "
        'still comes back, with `trial: {"status": "rejected", "detail": ...}`.',
    )


class PlanResponse(Plan):
    """The Plan, exactly as `mambasizer plan --json` prints it; `ignored_sglang_args` is
    present only when the request used `sglang_args`, `trial` only when it asked for one."""

    ignored_sglang_args: list[str] | None = Field(
        None, description="Launch arguments that do not change sizing and were ignored (only with `sglang_args`)."
    )
    sglang_args_warnings: list[str] | None = Field(
        None, description="What the launch arguments imply beyond the plan (only with `sglang_args`, when there is any)."
    )
    trial: TrialResult | TrialRefusal | None = Field(
        None,
        description="Only with `trial`: the TrialResult, or a TrialRefusal "
        '(`{"status": "rejected", "detail": ...}`) when this server ran none: trials disabled, '
        "the trial credential missing or wrong.",
    )


class DisaggregatedPlanRequest(request_schema.Strict):
    """A disaggregated deployment as one body of `POST /v1/plan`: each side is an ordinary
    plan body; a side that gives no `--disaggregation-mode` gets its own role."""

    prefill: ApiPlanRequest
    decode: ApiPlanRequest
    prefill_replicas: Annotated[int, Field(ge=1, le=4096)] = Field(1, description="How many prefill servers the deployment runs.")
    decode_replicas: Annotated[int, Field(ge=1, le=4096)] = Field(1, description="How many decode servers the deployment runs.")


# The most of a message an answer carries. Messages quote what the client sent (a model_type,
# a flag, a value); a 1 MB string must not come back in a 422. Past the bound the middle is
# cut, so the start (what is wrong) and the end (the fix) both stay.
MAX_MESSAGE_CHARS = 1000
_ELLIPSIS = " … "


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text`, or its first and last characters around an ellipsis, at most `limit` long."""
    if len(text) <= limit:
        return text
    keep = limit - len(_ELLIPSIS)
    head = keep * 3 // 5
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head):]


class MalformedRequest(PlanInputError):
    """The body is not a JSON object at all (no field to blame beyond `request`)."""


class InvalidRequest(PlanInputError):
    """A PlanRequest that fails validation; `errors` lists every failing field."""

    def __init__(self, field: str, message: str, allowed=None, errors: list[dict] | None = None):
        super().__init__(field, message, allowed)
        self.errors = errors or []


@dataclass(frozen=True)
class Prepared:
    request: PlanRequest
    ignored_sglang_args: list[str] | None  # None when the request did not use sglang_args
    trial: dict | None  # None when no trial was asked for
    sglang_args_warnings: tuple[str, ...] = ()
    # The model_name SGLang's own metrics carry (from sglang_args), so gauges can join them.
    metrics_model_name: str | None = None

    def extra_fields(self) -> dict:
        """The fields a response adds to the Plan for this request's sglang_args."""
        out: dict = {}
        if self.ignored_sglang_args is not None:
            out["ignored_sglang_args"] = self.ignored_sglang_args
        if self.sglang_args_warnings:
            out["sglang_args_warnings"] = list(self.sglang_args_warnings)
        return out


class _WithDuplicate(dict):
    """A JSON object that named a key twice (`duplicate`): Python's json keeps the last
    silently, so which value a client meant is unknown."""

    duplicate: str = ""


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    out = _WithDuplicate(obj)
    out.duplicate = dup
    return out


class _Constants:
    """json's parse_constant: Infinity, -Infinity and NaN read as Python's json reads them
    (a real config.json carries them: Nemotron-H's `time_step_limit: [0.0, Infinity]`);
    whether one may stand where it stands is decided after the parse (`_check_numbers`)."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, name: str) -> float:
        self.seen = True
        return float(name)

    def number(self, text: str) -> float:
        """json's parse_float: a literal too large for a float (1e400) reads as Infinity too."""
        value = float(text)
        if value in (math.inf, -math.inf):
            self.seen = True
        return value


# The JSON objects inside which non-finite numbers are accepted: a model's config.json,
# read as Python's json and transformers read it (its integer keys that size the model
# must still be finite integers: mambasizer.service.solver.families.check_config_integers).
NONFINITE_ALLOWED_UNDER = "hf_config"


def _path(parts: list) -> str:
    return ".".join(str(p) for p in parts) or "request"


def _check_numbers(obj: Any, check_finite: bool, check_dupes: bool) -> None:
    """The first duplicated key, or non-finite number outside an hf_config, as a
    PlanInputError naming its path (walked only when the parse saw one)."""
    stack: list[tuple[Any, list, bool]] = [(obj, [], False)]
    while stack:
        node, parts, in_config = stack.pop()
        if isinstance(node, dict):
            if check_dupes and isinstance(node, _WithDuplicate):
                raise PlanInputError(
                    _path([*parts, node.duplicate]),
                    f"is given more than once in the same JSON object ({node.duplicate[:100]!r}); give each key once",
                )
            for key, value in reversed(node.items()):
                stack.append((value, [*parts, key], in_config or key == NONFINITE_ALLOWED_UNDER))
        elif isinstance(node, list):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], [*parts, i], in_config))
        elif check_finite and not in_config and isinstance(node, float) and not math.isfinite(node):
            raise PlanInputError(
                _path(parts),
                f"is {_constant_name(node)}: numbers must be finite here (only a model's hf_config, a config.json, may carry Infinity or NaN)",
            )


def _constant_name(value: float) -> str:
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


def decode_json(data: bytes | str, label: str = "request body") -> dict:
    """The body as a JSON object, or MalformedRequest naming what is wrong with it; a key
    given twice in one object, or Infinity / NaN outside an hf_config, is a PlanInputError
    naming its path."""
    constants = _Constants()
    dupes: list[bool] = []

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj = _object(items)
        if isinstance(obj, _WithDuplicate):
            dupes.append(True)
        return obj

    try:
        obj = json.loads(data, parse_constant=constants, parse_float=constants.number, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise MalformedRequest("request", f"{label} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise MalformedRequest("request", f"{label} is nested too deeply") from None
    except ValueError as exc:  # bad UTF-8, an integer with too many digits
        raise MalformedRequest("request", f"{label} is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedRequest("request", f"{label} must be a JSON object (a PlanRequest), not {_json_type(obj)}")
    if constants.seen or dupes:
        _check_numbers(obj, constants.seen, bool(dupes))
    return obj


def _json_type(obj: Any) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "a boolean"
    if isinstance(obj, (int, float)):
        return "a number"
    if isinstance(obj, str):
        return "a string"
    if isinstance(obj, list):
        return "an array"
    return type(obj).__name__


# The solver's own path rule (pydantic's union tags dropped), so `errors` agree with `field`.
_json_path = getattr(importlib.import_module("mambasizer.service.solver.plan"), "_without_union_tags", list)


def _loc(loc: tuple) -> str:
    return ".".join(str(p) for p in _json_path(loc)) or "request"


def validation_error(exc: ValidationError, from_sglang_args: bool = False) -> InvalidRequest:
    """The solver's own mapping for the first error, plus every error listed."""
    first = input_error_from_validation(exc)
    errors = []
    for err in exc.errors(include_url=False)[:MAX_LISTED_ERRORS]:
        msg = err["msg"] if err["type"] != "extra_forbidden" else "unknown field (not part of the PlanRequest contract)"
        errors.append({"field": _loc(err["loc"]), "message": msg})
    message = first.message
    if from_sglang_args and first.field.startswith(("server_args.", "env.")):
        message = f"{message} (the value came from sglang_args)"
    return InvalidRequest(first.field, message, first.allowed, errors)


def _take_sglang_args(raw: dict, value: Any) -> tuple[dict, Any]:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise PlanInputError("sglang_args", "must be a list of strings, as a shell would pass them (e.g. [\"--tp-size\", \"8\"])")
    if len(value) > MAX_SGLANG_ARGS:
        raise PlanInputError("sglang_args", f"has {len(value)} entries; at most {MAX_SGLANG_ARGS} are accepted")
    for i, arg in enumerate(value):
        if len(arg) > MAX_SGLANG_ARG_CHARS:
            raise PlanInputError(f"sglang_args.{i}", f"is longer than {MAX_SGLANG_ARG_CHARS} characters")
    if "server_args" in raw:
        raise PlanInputError("sglang_args", "give either server_args or sglang_args, not both")
    # Parsed as the release the request names parses it (its flags, aliases, choices).
    parsed = parse_sglang_args(list(value), raw.get("sglang_version") or DEFAULT_RELEASE)
    env = raw.get("env")
    if env is None:
        env = {}
    elif not isinstance(env, dict):
        raise PlanInputError("env", "must be a JSON object")
    merged = dict(env)
    for key, val in (parsed.env or {}).items():
        if key in merged and merged[key] != val:
            raise PlanInputError(f"env.{key}", f"is {merged[key]!r} in env but sglang_args set it to {val!r}")
        merged[key] = val
    raw["server_args"] = dict(parsed.server_args)
    if merged or "env" in raw:
        raw["env"] = merged
    return raw, parsed


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
            raw, parsed = _take_sglang_args(raw, value)
    ignored = list(parsed.ignored or []) if parsed is not None else []
    if parsed is not None and parsed.model_path and "model" not in raw:
        # `--model-path ID` names the checkpoint when the body does not: a preset name or HF repo id.
        raw["model"] = {"preset": parsed.model_path}
        ignored = [a for a in ignored if a not in ("--model-path", "--model")]
    try:
        request = PlanRequest.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, from_sglang_args=parsed is not None) from None
    if parsed is None:
        return Prepared(request, None, trial)
    warnings = tuple(parsed.warnings or ())
    if parsed.weight_moving:
        warnings += _weight_moving(request, parsed.weight_moving)
    return Prepared(request, ignored, trial, warnings, parsed.metrics_model_name)


def _checkpoint_is_quantized(request: PlanRequest) -> bool:
    from mambasizer.schemas.request import HFConfigModel, PresetModel
    from mambasizer.service.presets import get_preset
    from mambasizer.service.solver.checkpoint_quant import quant_config_of

    m = request.model
    if isinstance(m, PresetModel):
        try:
            hf = dict(get_preset(m.preset).hf_config)
        except PlanInputError:
            return False  # the plan names the unknown preset
    elif isinstance(m, HFConfigModel):
        hf = dict(m.hf_config)
    else:
        return False
    text = hf.get("text_config") if isinstance(hf.get("text_config"), dict) else hf
    return quant_config_of(hf, text).config is not None


def _weight_moving(request: PlanRequest, flags: list) -> tuple[str, ...]:
    """Flags that change what a rank loads: refused in a GPU-only (estimated) budget, whose
    weights are the checkpoint's own on the GPU; noted in a measured one, whose free memory
    after load already holds their effect."""
    if _checkpoint_is_quantized(request):
        # --quantization on a pre-quantized checkpoint names its serialized format: the
        # weights are the checkpoint's own either way (a mismatch is SGLang's error, not a size).
        flags = [(o, v) for o, v in flags if o != "--quantization"]
        if not flags:
            return ()
    given = " ".join(f"{o} {v}" if v is not True else o for o, v in flags)
    if request.budget.estimated:
        option = flags[0][0]
        raise PlanInputError(
            "sglang_args",
            f"{given}: changes the weights each GPU loads (online quantization, CPU offload, redundant experts or "
            f"draft quantization), which a GPU-only estimate does not model; remove {option}, or give a measured "
            "budget (free_gib_before_load and free_gib_after_load from a boot log), which already holds its effect",
        )
    return (f"{given}: changes the weights each GPU loads; ignored here because the measured budget already holds its effect",)


def plan_json(plan: Plan | VllmPlan) -> bytes:
    """THE encoding of a Plan (or an engine "vllm" VllmPlan): the API body and `mambasizer plan --json` both use it."""
    return plan.model_dump_json().encode()


def with_fields(body: bytes, fields: dict) -> bytes:
    """Append top-level fields to an encoded JSON object, leaving its bytes untouched."""
    if not fields:
        return body
    extra = json.dumps(fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    return body[:-1] + b"," + extra[1:]


def input_error_line(exc: PlanInputError) -> str:
    """`<field>: <message> (allowed: ...)`, on one line."""
    text = f"{exc.field}: {exc.message}" if exc.field else str(exc.message)
    if exc.allowed:
        text += f" (allowed: {', '.join(str(a) for a in exc.allowed)})"
    return bounded(" ".join(text.split()), 2 * MAX_MESSAGE_CHARS)
