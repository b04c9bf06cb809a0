"""`POST /v1/plan` (and `POST /plan`, the name deployment tooling already calls).

A PlanRequest in, the Plan out: 200 for every computed plan, feasible or not; 422
problem+json for input that cannot be sized. The body is parsed whatever its
Content-Type (`curl -d @request.json` sends form encoding), and the response is the Plan
encoded exactly as `mambasizer plan --json` prints it.

`plan()` runs directly on the event loop: a plan costs 45-100 us, less than a hop to
the thread pool (see docs/api-examples.md for the measurement).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from service.api import trial_seam, trials, wire
from service.api.examples import PLAN_EXAMPLES, request_body
from service.api.problems import problem_doc
from service.client_watch import run_watched
from service.planner import plan

log = logging.getLogger("mambasizer.api")
router = APIRouter(tags=["plan"])

_RESPONSES: dict[Any, Any] = {
    200: {"model": wire.PlanResponse, "description": "The plan, feasible or not (`feasible: false` carries SGLang's error and remedies)."},
    413: problem_doc("The body is larger than 1 MiB."),
    422: problem_doc("The request cannot be sized: `field` names the failing field, `allowed` the accepted values when known."),
}


async def read_body(request: Request) -> bytes:
    # The middleware refuses bodies over the limit (declared or streamed) while they are read.
    return await request.body()


async def _trial(request: Request, result, prepared: wire.Prepared) -> dict:
    """The response's `trial` field: refused unless trials are enabled and the client
    presents the trial credential (when one is configured); cancelled when the client goes
    away. A trial never fails the plan."""
    assert prepared.trial is not None  # post_plan calls this only for a request with a trial
    settings: trials.TrialSettings = request.app.state.trials
    if not settings.enabled:
        return trials.refused(trials.DISABLED_DETAIL)
    refusal = trials.credential_refusal(request, settings)
    if refusal is not None:
        log.warning("trial refused: client credential", extra={"fields": {"event": "trial_unauthorized"}})
        return trials.refused(refusal)
    worker = request.app.state.trial_hook
    if worker is None:
        call = trial_seam.run_trial(result, prepared.request, prepared.trial, memory_budget_bytes=settings.memory_bytes)
    else:
        call = worker(result, prepared.request, prepared.trial)
    try:
        gone, out = await run_watched(request, call)
    except Exception as exc:  # a trial never fails the plan
        log.error("trial failed", exc_info=exc, extra={"fields": {"event": "trial_failed", "exc_type": type(exc).__name__}})
        return {"status": "unavailable", "detail": trials.FAILED_DETAIL}
    if gone:  # nobody reads this answer; the trial has been cancelled
        return {"status": "unavailable", "detail": "the client went away; the trial was cancelled"}
    if out is None:
        return {"status": "unavailable"}
    return out


async def post_plan(request: Request) -> Response:
    prepared = wire.prepare(wire.decode_json(await read_body(request)))
    result = plan(prepared.request)
    body = wire.plan_json(result)
    extra: dict[str, Any] = prepared.extra_fields()
    if prepared.trial is not None:
        extra["trial"] = await _trial(request, result, prepared)
    if extra:
        try:
            body = wire.with_fields(body, extra)
        except (TypeError, ValueError):
            log.error("trial result is not JSON-serialisable", extra={"fields": {"event": "trial_bad_result"}})
            extra["trial"] = {"status": "unavailable", "detail": trials.FAILED_DETAIL}
            body = wire.with_fields(wire.plan_json(result), extra)
    return Response(body, media_type="application/json")


_COMMON: dict[str, Any] = dict(
    response_model=None,
    responses=_RESPONSES,
    openapi_extra={"requestBody": request_body("ApiPlanRequest", PLAN_EXAMPLES)},
)

router.add_api_route(
    "/v1/plan",
    post_plan,
    methods=["POST"],
    summary="Size one deployment as SGLang 0.5.23 would",
    operation_id="plan",
    **_COMMON,
)
router.add_api_route(
    "/plan",
    post_plan,
    methods=["POST"],
    summary="Same as POST /v1/plan (the name deployment tooling already calls)",
    operation_id="plan_unversioned",
    **_COMMON,
)

__all__ = ["post_plan", "read_body", "router"]
