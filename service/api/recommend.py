"""`POST /v1/recommend`: the launch settings that reach a target, searched with the exact solver.

A RecommendRequest in, the ranked candidates (each re-planned from its own launch flags as
POST /v1/plan would), the Pareto front, the plans searched and the refusals by SGLang's reason
out; the body is exactly what `mambasizer recommend --json` prints. A search runs hundreds to
thousands of plans (up to a second or two), so it runs in the heavy-work pool (a worker process
under a deadline and a memory ceiling, behind a bounded queue), never on the event loop.
Invalid input is a 422 problem+json naming the field.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mambasizer.schemas.recommend import RecommendResponse
from mambasizer.service.api.examples import request_body
from mambasizer.service.api.plan import read_body
from mambasizer.service.api.problems import heavy_docs, problem_doc
from mambasizer.service.api.workpool import run_heavy

router = APIRouter(tags=["plan"])

EXAMPLE = {
    "model": {"preset": "kimi-k3"},
    "gpu": "h200",
    "gpus": [8, 16, 32, 64, 128],
    "target": {"running_requests": 512, "context_length": 131072, "tokens_per_request": 16384},
    "objective": "fewest_gpus",
    "search": {
        "tp_size": [4, 8], "pp_size": [1, 2, 4, 8, 16], "attn_dp_size": [1], "kv_cache_dtype": ["auto", "fp8_e4m3"],
        "mamba_ssm_dtype": ["float32", "bfloat16"], "speculative": None, "pp_partition": True, "mamba_cache": True,
    },
    "limit": 10,
}

# Three GPU kinds, priced (README's worked example, examples/recommend-qwen3-next-three-gpus.json).
THREE_GPUS = {
    "model": {"preset": "qwen3-next-80b-a3b-instruct"},
    "gpu": ["h200", "b200", "mi300x"],
    "gpu_prices": {"h200": 3.5, "b200": 5.9, "mi300x": 2.8},
    "target": {"running_requests": 256, "context_length": 131072, "tokens_per_request": 16384},
    "objective": "cheapest",
    "search": {"tp_size": [1, 2, 4, 8], "kv_cache_dtype": ["auto", "fp8_e4m3"]},
    "limit": 8,
}

_RESPONSES: dict[Any, Any] = {
    200: {"model": RecommendResponse, "description": "The ranked candidates (best first), the Pareto front, `searched`, `refused` and `why`."},
    413: problem_doc("The body is larger than 1 MiB."),
    **heavy_docs(),
    422: problem_doc("The request cannot be searched: `field` names the failing field."),
}


async def post_recommend(request: Request) -> Response:
    return await run_heavy(request, "recommend", await read_body(request))


router.add_api_route(
    "/v1/recommend",
    post_recommend,
    methods=["POST"],
    summary="The SGLang 0.5.23 launch settings that reach a target (TP/PP, layer partition, mamba cache, dtypes)",
    operation_id="recommend",
    response_model=None,
    responses=_RESPONSES,
    openapi_extra={"requestBody": request_body("RecommendRequest", {
        "kimi_k3_h200": {"summary": "Kimi-K3, 512 requests at 128k on H200", "value": EXAMPLE},
        "qwen3_next_three_gpus": {"summary": "Qwen3-Next, 256 requests at 128k: the cheapest of H200, B200 and MI300X", "value": THREE_GPUS},
    })},
)

__all__ = ["EXAMPLE", "THREE_GPUS", "post_recommend", "router"]
