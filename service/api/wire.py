"""What is truly HTTP about a request: the body limit and the OpenAPI models of `POST /v1/plan`
(its body with `sglang_args` and `trial`, its response with the launch notes).

Request decoding and preparation live in the front door, `mambasizer.service.requests`, which
every front calls (the API, `plan`, `check`, sweep, recommend, the pair view); the names the
API's modules use are re-exported here so the routes keep one import.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

import mambasizer.schemas.request as request_schema
from mambasizer.schemas import Plan, PlanRequest
from mambasizer.schemas.trial import TrialRefusal, TrialResult
from mambasizer.service.requests import (  # noqa: F401  (re-exported for the routes)
    MAX_LISTED_ERRORS,
    MAX_MESSAGE_CHARS,
    MAX_SGLANG_ARG_CHARS,
    MAX_SGLANG_ARGS,
    NONFINITE_ALLOWED_UNDER,
    InvalidRequest,
    MalformedRequest,
    Prepared,
    bounded,
    decode_json,
    input_error_line,
    plan_json,
    prepare,
    validation_error,
    with_fields,
)
from mambasizer.service.sglang_args import parse_sglang_args  # noqa: F401  (the pool warms it)

MAX_BODY_BYTES = 1 << 20  # 1 MiB: far above any config.json, far below anything harmful
# The largest list the schema allows stays under MAX_BODY_BYTES, so the OpenAPI never calls
# valid a body the server refuses with 413 (tests/api/test_api_openapi_maxima.py sums them).


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
    checkpoint: dict[str, Any] | None = Field(
        None,
        description="Only with `--model-path` in sglang_args: where the checkpoint was found (`source`: shipped, "
        "directory, hf-cache or hub; `repo_id`, `revision`), the files read (`files_read`: config.json, "
        "hf_quant_config.json, the safetensors index and headers), the tensor inventory and its `cross_check` "
        "against SGLang's model classes (a difference loading does not explain is reported there).",
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
    prefill_replicas: Annotated[request_schema.StrictInt, Field(ge=1, le=4096)] = Field(1, description="How many prefill servers the deployment runs.")
    decode_replicas: Annotated[request_schema.StrictInt, Field(ge=1, le=4096)] = Field(1, description="How many decode servers the deployment runs.")
