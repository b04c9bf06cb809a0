"""`/livez` and `/readyz` for the kubelet.

* `/livez`: the process answers (200 while the event loop runs).
* `/readyz`: 200 once start-up finished and, with a `--deployments` file, once it loaded;
  503 problem+json otherwise, and while shutting down. The body summarises the
  deployments (count, the ones that cannot be sized, the ones SGLang would refuse).

Both answer `HEAD` too (the same status, no body), for probes and load balancers that use it.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mambasizer.service.api.problems import problem_doc, problem_response

router = APIRouter(tags=["operations"])

_LIVE = b'{"status":"ok"}'


@router.get("/livez", operation_id="livez", summary="Liveness", responses={200: {"description": '`{"status": "ok"}`'}})
async def livez() -> Response:
    return Response(_LIVE, media_type="application/json")


@router.head("/livez", operation_id="livez_head", summary="Liveness, no body", responses={200: {"description": "Alive (no body)."}})
async def livez_head() -> Response:
    return Response(status_code=200, media_type="application/json")


@router.head(
    "/readyz",
    operation_id="readyz_head",
    summary="Readiness, no body",
    responses={200: {"description": "Ready (no body)."}, 503: {"description": "Not ready (no body)."}},
)
async def readyz_head(request: Request) -> Response:
    return Response(status_code=200 if request.app.state.ready else 503, media_type="application/json")


@router.get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness",
    responses={200: {"description": "Ready; the deployments file is summarised."}, 503: problem_doc("Starting, shutting down, or the deployments file never loaded.")},
)
async def readyz(request: Request) -> Response:
    state = request.app.state
    store = state.deployments
    if not state.ready:
        return problem_response(503, "not ready: starting up or shutting down", instance=request.url.path)
    body: dict[str, Any] = {"status": "ready"}
    if store.configured:
        body["deployments"] = {
            **store.snapshot.summary(),
            "last_reload_success": store.last_error is None,
            "last_error": store.last_error,
        }
    return Response(json.dumps(body, separators=(",", ":")).encode(), media_type="application/json")
