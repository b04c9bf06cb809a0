"""`POST /v1/recommend/disaggregated`: the prefill and decode settings, and the replicas of each,
that reach a disaggregated deployment's targets with the fewest GPUs
(mambasizer.service.recommend.disaggregated).

Both sides are searched as `/v1/recommend` searches (hundreds of plans), so the job runs in the
same heavy-work pool, under the same deadline and memory ceiling. The answer's `plan_request`
is the POST /v1/plan body of the recommended pair; its plans and `pair` are what that route
answers for it. Invalid input is a 422 problem+json naming the field.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mambasizer.schemas.recommend_disaggregated import RecommendDisaggregatedResponse
from mambasizer.service.api.examples import request_body
from mambasizer.service.api.plan import read_body
from mambasizer.service.api.problems import heavy_docs, problem_doc
from mambasizer.service.api.workpool import run_heavy

router = APIRouter(tags=["plan"])

KIND = "recommend_disaggregated"  # the job in mambasizer.service.api.jobs.JOBS
EXAMPLE = {
    "model": {"preset": "qwen3-next-80b-a3b-instruct"},
    "gpu": "h200",
    "context_length": 131072,
    "prefill": {"in_flight_requests": 256},
    "decode": {"concurrent_requests": 1024, "tokens_per_request": 16384},
}

_RESPONSES: dict[Any, Any] = {
    200: {"model": RecommendDisaggregatedResponse, "description": "Each side's setting and replicas, the pair as POST /v1/plan plans it, the alternatives, `searched` and `why`."},
    413: problem_doc("The body is larger than 1 MiB."),
    **heavy_docs(),
    422: problem_doc("The request cannot be searched: `field` names the failing field (`decode.search.dcp_size`, ...)."),
}


async def post_recommend_disaggregated(request: Request) -> Response:
    return await run_heavy(request, KIND, await read_body(request))


router.add_api_route(
    "/v1/recommend/disaggregated",
    post_recommend_disaggregated,
    methods=["POST"],
    summary="The SGLang 0.5.23 prefill and decode settings (TP/PP, attention DP, DCP, EP) and replicas that reach a disaggregated deployment's targets",
    operation_id="recommend_disaggregated",
    response_model=None,
    responses=_RESPONSES,
    openapi_extra={"requestBody": request_body("RecommendDisaggregatedRequest", {
        "qwen3_next_h200": {"summary": "Qwen3-Next, 1,024 decode requests of 16k tokens at 128k, 256 prefills in flight, on H200", "value": EXAMPLE}})},
)

__all__ = ["EXAMPLE", "KIND", "post_recommend_disaggregated", "router"]
