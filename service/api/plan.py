"""`POST /v1/plan` (and `POST /plan`, the name deployment tooling already calls).

A PlanRequest in, the Plan out: 200 for every computed plan, feasible or not; 422
problem+json for input that cannot be sized. The body is parsed whatever its
Content-Type (`curl -d @request.json` sends form encoding), and the response is the Plan
encoded exactly as `mambasizer plan --json` prints it.

An ordinary plan runs directly on the event loop: it costs 45-250 us (1 to 32 stages),
less than a hop to another process (see docs/api-examples.md for the measurement). A
large one (a body over HEAVY_BODY_BYTES, or more than HEAVY_STAGES pipeline stages) runs
in the heavy-work pool like recommend and sweep (service.api.workpool).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from service.api import trial_seam, trials, wire
from service.api.disconnect import run_watched
from service.api.openapi import PLAN_EXAMPLES, request_body
from service.api.problems import heavy_docs, problem_doc
from service.api.workpool import CLIENT_CLOSED, ClientGone, Rejected, pool_of, rejection_response
from service.solver import plan

# Above these a plan leaves the event loop: a 1,024-stage plan and its JSON take ~10 ms, and
# decoding a 1 MiB body several; an ordinary request stays well below both.
HEAVY_BODY_BYTES = 64 << 10
HEAVY_STAGES = 64

log = logging.getLogger("mambasizer.api")
router = APIRouter(tags=["plan"])

_RESPONSES: dict[Any, Any] = {
    200: {"model": wire.PlanResponse, "description": "The plan, feasible or not (`feasible: false` carries SGLang's error and remedies)."},
    413: problem_doc("The body is larger than 1 MiB."),
    **heavy_docs(),
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


def _stages(prepared: wire.Prepared) -> int:
    return prepared.request.server_args.pp_size


async def post_plan(request: Request) -> Response:
    raw = await read_body(request)
    if len(raw) > HEAVY_BODY_BYTES:
        return await _plan_in_pool(request, raw)
    prepared = wire.prepare(wire.decode_json(raw))
    if _stages(prepared) > HEAVY_STAGES:
        return await _plan_in_pool(request, raw)
    result = plan(prepared.request)
    return await _respond(request, result, prepared, wire.plan_json(result))


async def _plan_in_pool(request: Request, raw: bytes) -> Response:
    try:
        answer = await pool_of(request).run(request, "plan", raw)
    except Rejected as exc:
        return rejection_response(exc)
    except ClientGone:
        return Response(b"", status_code=CLIENT_CLOSED)
    if answer.plan is None or answer.prepared is None:  # no trial asked, or a problem
        return Response(answer.body, status_code=answer.status, media_type=answer.media_type)
    return await _respond(request, answer.plan, answer.prepared, wire.plan_json(answer.plan))


async def _respond(request: Request, result, prepared: wire.Prepared, body: bytes) -> Response:
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
