"""SweepRequest / SweepResponse: one plan request varied along one or two axes.

`POST /v1/sweep` takes `{"base": <a POST /v1/plan body>, "axes": [{"field": "server_args.tp_size",
"values": [1, 2, 4]}]}` and answers one row per point (the cartesian product of the axes, the
first axis varying slowest). Every point is validated as the PlanRequest it makes; a point that
fails schema validation refuses the whole sweep (422) naming the point and the field, a point
the solver cannot size (SGLang asserts on the layout, an unmodelled GPU) is a row with
`error_kind: "invalid_input"`, and a point SGLang would refuse to start is a row with SGLang's
error kind, as `POST /v1/plan` answers it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, WithJsonSchema, field_validator

MAX_POINTS = 10_000
# The work of a sweep is its stages, not its points: every point plans pp_size stages and
# answers a row per stage. The pp_size of all points together is bounded (10,000 points at
# pp 10, or 97 points at pp 1,024), checked on the validated points before any is planned.
MAX_STAGES = 100_000
MAX_AXES = 2
MAX_PATH_CHARS = 128
MAX_PATH_DEPTH = 4
MAX_VALUE_CHARS = 256
# An axis of numbers, booleans and nulls has up to MAX_POINTS values; one with a string
# (a GPU, a preset, a dtype: a few names) up to MAX_STRING_VALUES. So the largest body the
# schema allows, two axes at their maxima beside the largest base, fits in the 1 MiB body
# limit (10,000 strings of 256 characters would be 2.5 MiB).
MAX_STRING_VALUES = 1_000

# The PlanRequest sections an axis may enter. A model axis is limited to the preset name (and
# its allow_unverified flag): a pasted config varied per point would be re-read per point.
AXIS_SECTIONS = ("server_args", "env", "budget", "draft_model")
AXIS_TOP_FIELDS = ("accounting", "sglang_version")
AXIS_MODEL_FIELDS = ("model.preset", "model.allow_unverified")
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,3}$"

AxisValue = StrictBool | int | float | Annotated[str, Field(max_length=MAX_VALUE_CHARS)] | None

ErrorKind = Literal[
    "mamba_cache_too_small",
    "no_memory_for_kv",
    "not_enough_memory",
    "state_cache_serves_no_request",
    "launch_rejected",
    "weights_do_not_fit",
    "checkpoint_pool_does_not_fit",
    "invalid_input",  # the solver cannot size this point (POST /v1/plan would answer 422)
]


_SCALAR_SCHEMAS: list[dict] = [{"type": "boolean"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}]
_VALUES_SCHEMA = {
    "anyOf": [
        {"type": "array", "minItems": 1, "maxItems": MAX_POINTS, "items": {"anyOf": _SCALAR_SCHEMAS}},
        {"type": "array", "minItems": 1, "maxItems": MAX_STRING_VALUES,
         "items": {"anyOf": [*_SCALAR_SCHEMAS, {"type": "string", "maxLength": MAX_VALUE_CHARS}]}},
    ],
    "title": "Values",
}


class SweepAxis(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    field: Annotated[str, Field(max_length=MAX_PATH_CHARS, pattern=FIELD_PATTERN)] = Field(
        description="A dotted PlanRequest path: `server_args.<flag>`, `env.<VAR>`, `budget.<field>`, "
        "`draft_model.num_layers`, `accounting`, `model.preset` or `model.allow_unverified`.",
        examples=["server_args.context_length"],
    )
    values: Annotated[list[AxisValue], Field(min_length=1, max_length=MAX_POINTS), WithJsonSchema(_VALUES_SCHEMA)] = Field(
        description=f"The values the field takes, in order (JSON scalars; null unsets the field): up to {MAX_POINTS} numbers, "
        f"booleans or nulls, or up to {MAX_STRING_VALUES} values when one is a string."
    )

    @field_validator("values")
    @classmethod
    def _few_strings(cls, v: list) -> list:
        if len(v) > MAX_STRING_VALUES and any(isinstance(x, str) for x in v):
            raise ValueError(f"has {len(v)} values with a string among them; an axis with strings has at most {MAX_STRING_VALUES}")
        return v


class SweepRequest(BaseModel):
    """The body of `POST /v1/sweep` (`base` is a `POST /v1/plan` body, without `trial`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: dict = Field(description="A POST /v1/plan body (any budget form, `sglang_args` allowed); see ApiPlanRequest.")
    axes: Annotated[list[SweepAxis], Field(min_length=1, max_length=MAX_AXES)] = Field(
        description=f"One or two axes; the product of their lengths is at most {MAX_POINTS} points, and the points' "
        f"pp_size summed over them (the stages planned) at most {MAX_STAGES}."
    )


class SweepStage(BaseModel):
    pp_rank: int
    weights_bytes: int | None = Field(description="Parameter bytes on the stage's largest TP rank (estimated budget only).")
    mamba_pool_bytes: int = Field(description="Conv + SSM state + speculative intermediates + ReplaySSM ring the stage allocates.")
    kv_pool_bytes: int
    req_to_token_bytes: int
    idle_bytes: int = Field(description="Budgeted but not allocated on this stage.")
    kv_tokens: int | None


class SweepRow(BaseModel):
    point: dict[str, AxisValue] = Field(description="The value of each axis field at this point.")
    feasible: bool
    error_kind: ErrorKind | None = Field(description="Why SGLang would not start (the plan's error kind), or invalid_input.")
    error_field: str | None = Field(description="invalid_input only: the request field the solver refused.")
    error_message: str | None = Field(description="SGLang's own message, or the solver's for invalid_input.")
    max_running_requests: int | None
    max_total_num_tokens: int | None
    max_mamba_cache_size: int | None
    pp_max_micro_batch_size: int | None
    binding_limit: str | None
    gpu_memory_mib: int | None = Field(description="The GPU capacity the plan used, when known.")
    stages: list[SweepStage] = Field(description="Per-stage pool bytes (empty for invalid_input).")


class SweepResponse(BaseModel):
    reference: str = "sglang==0.5.23"
    axes: list[str] = Field(description="The axis fields, in request order.")
    points: int
    rows: list[SweepRow]
