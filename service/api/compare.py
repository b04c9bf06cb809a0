"""`POST /v1/plan/compare`: the route. The comparison itself is service/compare.py, run in the
heavy-work pool (mambasizer.service.api.jobs.compare_job)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mambasizer.service.api.examples import COMPARE_EXAMPLES, request_body
from mambasizer.service.api.problems import heavy_docs, problem_doc
from mambasizer.service.api.workpool import run_heavy
from mambasizer.service.compare import CompareRequest, CompareResponse, compare

router = APIRouter(tags=["plan"])


@router.post(
    "/v1/plan/compare",
    summary="The same request under two accountings (whole-model, SGLang 0.5.23) or two SGLang releases, with deltas",
    operation_id="compare",
    response_model=None,
    responses={
        200: {"model": CompareResponse, "description": "Both plans, the per-field deltas, and a warning when the upgrade matters."},
        413: problem_doc("The body is larger than 1 MiB."),
        **heavy_docs(),
        422: problem_doc("The request cannot be sized."),
    },
    openapi_extra={"requestBody": request_body("CompareRequest", COMPARE_EXAMPLES)},
)
async def post_compare(request: Request) -> Response:
    # Two plans, a pin search and their dumps: in the heavy-work pool (mambasizer.service.api.jobs.compare_job).
    return await run_heavy(request, "compare", await request.body())


__all__ = ["CompareRequest", "CompareResponse", "compare", "post_compare", "router"]
