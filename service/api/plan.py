"""`POST /v1/plan` (and `POST /plan`, the name deployment tooling already calls).

A PlanRequest in, the Plan out: 200 for every computed plan, feasible or not; 422
problem+json for input that cannot be sized. The body is parsed whatever its
Content-Type (`curl -d @request.json` sends form encoding), and the response is the Plan
encoded exactly as `mambasizer plan --json` prints it.

An ordinary plan runs directly on the event loop: it costs 45-250 us (1 to 32 stages),
less than a hop to another process (see docs/api-examples.md for the measurement). A
large one (a body over HEAVY_BODY_BYTES, or more than HEAVY_STAGES pipeline stages) runs
in the heavy-work pool like recommend and sweep (mambasizer.service.api.workpool).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from mambasizer.schemas import PlanRequest
from mambasizer.schemas.request import HFConfigModel, PresetModel
from mambasizer.schemas.vllm_plan import VllmPlan
from mambasizer.service import disaggregated
from mambasizer.service.api import trial_seam, trials, wire
from mambasizer.service.api.examples import PLAN_EXAMPLES, request_body
from mambasizer.service.api.jobs import Answer
from mambasizer.service.api.problems import heavy_docs, problem_doc
from mambasizer.service.api.workpool import answer_of
from mambasizer.service.client_watch import run_watched
from mambasizer.service.planner import model_layout
from mambasizer.service.planner import plan_engine as plan  # both engines (the request's `engine`)
from mambasizer.service.solver import gpu_budget

# Above these a plan leaves the event loop: a 1,024-stage plan and its JSON take ~10 ms, and
# decoding a 1 MiB body several; an ordinary request stays well below both.
HEAVY_BODY_BYTES = 64 << 10
HEAVY_STAGES = 64
# A plan from the GPU alone computes the weights of its (model, parallel layout) once: 5-70 ms
# for Kimi-K3, then ~0.5 ms from the solver's cache. A pasted config is new every request (its
# weights are never cached across requests): the work pool. A preset's first plan at a new
# layout goes to the pool too, which hands back the weights it computed; the server adds them
# to its own cache, so the next plan of that layout is a cache hit on the loop. (A thread of
# this process was tried: the GIL made /livez wait longer than planning on the loop did.)
_WARM_MAX = 4096
_warm: OrderedDict[tuple, None] = OrderedDict()

log = logging.getLogger("mambasizer.api")
router = APIRouter(tags=["plan"])

_RESPONSES: dict[Any, Any] = {
    200: {
        "model": wire.PlanResponse,
        "description": "The plan, feasible or not (`feasible: false` carries SGLang's error and remedies); for a "
        "`{\"prefill\": ..., \"decode\": ...}` body, both plans and what the pair sustains (DisaggregatedPlanResponse).",
    },
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
        return {"status": "unavailable", "reason": trials.FAILED_DETAIL}
    if gone:  # nobody reads this answer; the trial has been cancelled
        return {"status": "unavailable", "reason": "the client went away; the trial was cancelled"}
    if out is None:
        return {"status": "unavailable"}
    return out


def _weights_key(req: PlanRequest) -> tuple | None:
    """What the solver's weights cache is keyed on, for a preset planned from the GPU alone
    (None otherwise): the preset and every input of its (tp, pp, ep, stages, MTP, draft) key."""
    if not req.budget.estimated or not isinstance(req.model, PresetModel):
        return None
    a = req.server_args
    draft = req.draft_model.num_layers if req.draft_model is not None else None
    return (req.model.preset, a.tp_size, a.pp_size, a.ep_size, a.speculative_algorithm, draft, req.env.SGLANG_PP_LAYER_PARTITION)


def _where(prepared: wire.Prepared | None) -> str:
    """"pool" or "loop": where this plan runs (see HEAVY_* and the weights note above)."""
    if prepared is None or prepared.request.server_args.pp_size > HEAVY_STAGES:
        return "pool"
    req = prepared.request
    if req.budget.estimated and isinstance(req.model, HFConfigModel):
        return "pool"
    key = _weights_key(req)
    if key is not None and key not in _warm:
        return "pool"
    return "loop"


async def post_plan(request: Request) -> Response:
    raw = await read_body(request)
    prepared = None
    if len(raw) <= HEAVY_BODY_BYTES:
        body = wire.decode_json(raw)
        if disaggregated.is_pair(body):  # a prefill/decode pair: two plans, in the work pool
            return await _plan_in_pool(request, raw, None)
        prepared = wire.prepare(body)
    if _where(prepared) == "pool":
        return await _plan_in_pool(request, raw, prepared)
    assert prepared is not None
    result = plan(prepared.request)
    if isinstance(result, VllmPlan):  # engine "vllm": no SGLang trial or launch-argument fields
        return Response(wire.plan_json(result), media_type="application/json")
    return await _respond(request, result, prepared, wire.plan_json(result))


def _adopt_weights(prepared: wire.Prepared | None, answer: Answer) -> None:
    """Add the weights the pool computed to this process's cache; mark the layout warm."""
    if prepared is None or answer.preset_weights is None:
        return
    name, entries = answer.preset_weights
    gpu_budget.add_known_weights(model_layout(prepared.request), entries)
    key = _weights_key(prepared.request)
    if key is not None and name == key[0]:
        _warm[key] = None
        if len(_warm) > _WARM_MAX:
            _warm.popitem(last=False)


async def _plan_in_pool(request: Request, raw: bytes, prepared: wire.Prepared | None) -> Response:
    answer = await answer_of(request, "plan", raw)
    if isinstance(answer, Response):
        return answer
    _adopt_weights(prepared, answer)
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
            extra["trial"] = {"status": "unavailable", "reason": trials.FAILED_DETAIL}
            body = wire.with_fields(wire.plan_json(result), extra)
    return Response(body, media_type="application/json")


def _plan_body() -> dict:
    """One deployment (ApiPlanRequest) or a prefill/decode pair (DisaggregatedPlanRequest)."""
    body = request_body("ApiPlanRequest", PLAN_EXAMPLES)
    body["content"]["application/json"]["schema"] = {"oneOf": [
        {"$ref": "#/components/schemas/ApiPlanRequest"}, {"$ref": "#/components/schemas/DisaggregatedPlanRequest"},
    ]}
    return body


_COMMON: dict[str, Any] = dict(
    response_model=None,
    responses=_RESPONSES,
    openapi_extra={"requestBody": _plan_body()},
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
