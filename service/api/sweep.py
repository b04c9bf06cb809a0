"""`POST /v1/sweep`: one plan request varied along one or two axes, one row per point.

JSON by default; `Accept: text/csv` gives the same rows as CSV. The points are expanded,
validated, planned and encoded in the heavy-work pool (mambasizer.service.api.workpool: a worker
process under a deadline and a memory ceiling, behind a bounded queue), never on the event
loop.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import TypeAdapter

from mambasizer.schemas.json_schema import standard_bounds
from mambasizer.schemas.sweep import MAX_POINTS, MAX_STAGES, SweepRequest, SweepResponse
from mambasizer.service.api.plan import read_body
from mambasizer.service.api.problems import heavy_docs, problem_doc
from mambasizer.service.api.workpool import run_heavy

EXAMPLES: dict[str, dict[str, Any]] = {
    "context_length": {
        "summary": "Requests and tokens against the context length, from the GPU alone",
        "value": {
            "base": {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}},
            "axes": [{"field": "server_args.context_length", "values": [8192, 32768, 131072, 262144]}],
        },
    },
    "two_axes": {
        "summary": "Two axes: GPU x TP (4 points, the first axis varying slowest)",
        "value": {
            "base": {"model": {"preset": "nemotron-h-56b-base-8k"}, "budget": {"gpu": "h100"}},
            "axes": [
                {"field": "budget.gpu", "values": ["h100", "h200"]},
                {"field": "server_args.tp_size", "values": [2, 4]},
            ],
        },
    },
    "measured": {
        "summary": "A measured budget, sweeping the mamba/KV split ratio",
        "value": {
            "base": {"model": {"preset": "kimi-linear-48b-a3b-instruct"}, "server_args": {"tp_size": 2, "pp_size": 2}, "budget": {"rest_gib": 40.0}},
            "axes": [{"field": "server_args.mamba_full_memory_ratio", "values": [0.5, 0.9, 2.0]}],
        },
    },
}

# The axis schema inlined (a request-only model), `base` pointing at the plan body's schema.
_REQUEST_SCHEMA = standard_bounds(TypeAdapter(SweepRequest).json_schema(mode="validation"))
_AXIS_SCHEMA = _REQUEST_SCHEMA.pop("$defs")["SweepAxis"]
_REQUEST_SCHEMA["properties"]["base"] = {"$ref": "#/components/schemas/ApiPlanRequest", "description": "A POST /v1/plan body (without `trial`)."}
_REQUEST_SCHEMA["properties"]["axes"]["items"] = _AXIS_SCHEMA
# A point is a PlanRequest only once the axes are applied: its validity (and the base's
# semantic rules, as POST /v1/plan declares them) is decided per point.
_REQUEST_SCHEMA["x-semantic-fields"] = ["base", "axes"]

router = APIRouter(tags=["plan"])


def wants_csv(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "text/csv" in accept.lower()


@router.post(
    "/v1/sweep",
    summary="One plan request varied along one or two axes: a row of headline figures and pool bytes per point",
    operation_id="sweep",
    response_model=None,
    responses={
        200: {
            "model": SweepResponse,
            "description": "One row per point (the first axis varying slowest); `Accept: text/csv` gives CSV.",
            "content": {"text/csv": {"schema": {"type": "string"}}},
        },
        413: problem_doc("The body is larger than 1 MiB."),
        **heavy_docs(),
        422: problem_doc(
            f"The sweep cannot run: `field` names the axis value (`axes.0.values.3`), the axis or the base field at fault; "
            f"more than {MAX_POINTS} points, or {MAX_STAGES} pipeline stages (the points' pp_size summed); a point that is not a "
            "valid PlanRequest (`point` gives its values)."
        ),
    },
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": _REQUEST_SCHEMA, "examples": EXAMPLES}}}},
)
async def post_sweep(request: Request) -> Response:
    return await run_heavy(request, "sweep", await read_body(request), {"csv": wants_csv(request)})


__all__ = ["post_sweep", "router"]
