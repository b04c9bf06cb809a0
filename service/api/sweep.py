"""`POST /v1/sweep`: one plan request varied along one or two axes, one row per point.

JSON by default; `Accept: text/csv` gives the same rows as CSV. The points are expanded,
validated and planned in the thread pool (a 10,000-point sweep is CPU work of a second or
more, which must not stall the event loop), at most MAX_CONCURRENT sweeps at a time; the
others wait their turn.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from schemas.json_schema import standard_bounds
from schemas.sweep import MAX_POINTS, MAX_STAGES, SweepRequest, SweepResponse
from service.api import wire
from service.api.plan import read_body
from service.api.problems import INVALID_INPUT, PROBLEM_JSON, problem_bytes, problem_doc
from service.sweep import SweepPointError, rows_csv, run_sweep

MAX_CONCURRENT = 2
_slots: dict[int, asyncio.Semaphore] = {}  # one per event loop (tests run several apps)

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


def _slot() -> asyncio.Semaphore:
    loop_id = id(asyncio.get_running_loop())
    sem = _slots.get(loop_id)
    if sem is None:
        _slots.clear()  # a new loop (a test app); the old ones are gone
        sem = _slots[loop_id] = asyncio.Semaphore(MAX_CONCURRENT)
    return sem


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
        422: problem_doc(
            f"The sweep cannot run: `field` names the axis value (`axes.0.values.3`), the axis or the base field at fault; "
            f"more than {MAX_POINTS} points, or {MAX_STAGES} pipeline stages (the points' pp_size summed); a point that is not a "
            "valid PlanRequest (`point` gives its values)."
        ),
    },
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": _REQUEST_SCHEMA, "examples": EXAMPLES}}}},
)
async def post_sweep(request: Request) -> Response:
    body = wire.decode_json(await read_body(request), label="sweep body")
    async with _slot():
        try:
            result = await run_in_threadpool(run_sweep, body)
        except SweepPointError as exc:
            problem = problem_bytes(
                422, exc.message, type_=INVALID_INPUT, title="The request cannot be sized",
                instance=request.url.path, field=exc.field, allowed=exc.allowed, errors=exc.errors,
            )
            return Response(wire.with_fields(problem, {"point": exc.point}), status_code=422, media_type=PROBLEM_JSON)
        if wants_csv(request):
            text = await run_in_threadpool(rows_csv, result)
            return Response(text, media_type="text/csv; charset=utf-8")
        data = await run_in_threadpool(lambda: json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
    return Response(data, media_type="application/json")


__all__ = ["post_sweep", "router"]
