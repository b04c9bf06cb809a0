"""What the heavy-work processes run: one function per route, from the request bytes to the
rendered answer.

Each job decodes, validates, plans and encodes inside the worker process, so the event loop
only moves bytes. A client's own mistake (PlanInputError and its kinds) is rendered here
exactly as the API's handlers render it; anything else propagates and the pool turns it into
a 500 (a bug) or a 503 (the process died or hit its memory ceiling). Only the Answer crosses
back to the server: status, media type, bytes, and for `/v1/plan` with a trial the Plan
object the trial allocates from.

No FastAPI here beyond what the route modules import; `mambasizer.service.api.workpool` has the fork
server preload this module so a replacement process starts in milliseconds.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from mambasizer.schemas import Plan
from mambasizer.schemas.request import PresetModel
from mambasizer.schemas.vllm_plan import VllmPlan
from mambasizer.service import disaggregated
from mambasizer.service.api import wire
from mambasizer.service.api.problems import (
    INVALID_INPUT,
    PROBLEM_JSON,
    input_problem_bytes,
    memory_problem,
    problem_bytes,
)
from mambasizer.service.checkpoints.policy import policy_scope
from mambasizer.service.planner import model_layout, plan_engine
from mambasizer.service.solver import PlanInputError, gpu_budget
from mambasizer.service.sweep import SweepPointError, rows_csv, run_sweep

log = logging.getLogger("mambasizer.api")

APPLICATION_JSON = "application/json"
CSV = "text/csv; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    status: int
    media_type: str
    body: bytes
    plan: Plan | None = None  # /v1/plan only, when the request asks for a trial
    prepared: wire.Prepared | None = None  # idem: the trial needs the request too
    # /v1/plan of a preset from the GPU alone: the weights this process knows for its layout,
    # for the server to add to its own cache (mambasizer.service.solver.gpu_budget.add_known_weights).
    preset_weights: tuple[str, dict] | None = None


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def plan_job(body: bytes, options: dict) -> Answer:
    raw = wire.decode_json(body)
    if disaggregated.is_pair(raw):  # {"prefill": ..., "decode": ...}: both plans and the pair
        return Answer(200, APPLICATION_JSON, _dumps(disaggregated.plan_pair(raw)))
    prepared = wire.prepare(raw)
    req = prepared.request
    result = plan_engine(req)
    out = wire.plan_json(result)
    if isinstance(result, VllmPlan):  # engine "vllm": the plan alone
        return Answer(200, APPLICATION_JSON, out)
    extra = prepared.extra_fields()
    if extra:
        out = wire.with_fields(out, extra)
    weights = None
    if req.budget.estimated and isinstance(req.model, PresetModel):
        weights = (req.model.preset, gpu_budget.known_weights(model_layout(req)))
    if prepared.trial is not None:  # the server runs the trial on its side, from this Plan
        return Answer(200, APPLICATION_JSON, out, plan=result, prepared=prepared, preset_weights=weights)
    return Answer(200, APPLICATION_JSON, out, preset_weights=weights)


def compare_job(body: bytes, options: dict) -> Answer:
    # the route module (its router is already imported in the fork server)
    from mambasizer.service.compare import compare, compare_releases

    raw = wire.decode_json(body)
    # Release mode's fields are CompareRequest's, not PlanRequest's: taken off before prepare().
    releases = compare_releases(raw)
    prepared = wire.prepare(raw, allow_trial=False)
    out = compare(prepared.request, releases=releases)
    out["baseline"] = out["baseline"].model_dump(mode="json")
    out["plan"] = out["plan"].model_dump(mode="json")
    out.update(prepared.extra_fields())
    return Answer(200, APPLICATION_JSON, _dumps(out))


def recommend_job(body: bytes, options: dict) -> Answer:
    from mambasizer.service.recommend import recommend, response_json

    return Answer(200, APPLICATION_JSON, response_json(recommend(wire.decode_json(body))))


def recommend_disaggregated_job(body: bytes, options: dict) -> Answer:
    from mambasizer.service.recommend.disaggregated import SECONDS_PER_SIDE, recommend_disaggregated

    answer = recommend_disaggregated(wire.decode_json(body), seconds_per_side=SECONDS_PER_SIDE)
    return Answer(200, APPLICATION_JSON, answer.model_dump_json().encode())


def sweep_job(body: bytes, options: dict) -> Answer:
    result = run_sweep(wire.decode_json(body, label="sweep body"))
    if options.get("csv"):
        return Answer(200, CSV, rows_csv(result).encode())
    return Answer(200, APPLICATION_JSON, _dumps(result))


def ping() -> int:
    """A job that does nothing: the pool's start-up waits on one to know its processes run."""
    return 1


def warm() -> None:
    """Plan every sizable preset once and read SGLang's flag table once, so the solver's
    preset layouts are built, no request reads a file, and the first real request is as
    fast as the others. The API process calls it at start-up, the pool's fork server at its
    own, so every worker process is forked warm."""
    from mambasizer.service.presets import PRESETS

    wire.parse_sglang_args(["--tp-size", "1"])
    for preset in PRESETS.values():
        if preset.sizable:
            try:
                plan_engine({"model": {"preset": preset.name}, "budget": {"rest_gib": 40.0}})
            except PlanInputError:  # pragma: no cover - a preset the solver cannot size
                log.warning("preset cannot be sized", extra={"fields": {"event": "preset_unsizable", "preset": preset.name}})


def check_log_job(body: bytes, options: dict) -> Answer:
    from mambasizer.service.api.checklog_job import answer

    status, media_type, out = answer(body, options, "/v1/check-log")
    return Answer(status, media_type, out)


# The job option that carries the server's checkpoint ReadPolicy into the pool's processes.
CHECKPOINT_POLICY_OPTION = "_checkpoint_policy"

JOBS = {"plan": plan_job, "check_log": check_log_job, "compare": compare_job, "recommend": recommend_job, "sweep": sweep_job,
        "recommend_disaggregated": recommend_disaggregated_job}


def run(kind: str, body: bytes, instance: str, options: dict) -> Answer:
    """The entry point the pool schedules: the job's Answer, a 422 for input that cannot be
    sized, a 503 problem when the job ran out of the process's memory ceiling."""
    options = dict(options)
    policy = options.pop(CHECKPOINT_POLICY_OPTION, None)
    try:
        with policy_scope(policy):
            return JOBS[kind](body, options)
    except SweepPointError as exc:
        problem = problem_bytes(
            422, exc.message, type_=INVALID_INPUT, title="The request cannot be sized",
            instance=instance, field=exc.field, allowed=exc.allowed, errors=exc.errors,
        )
        return Answer(422, PROBLEM_JSON, wire.with_fields(problem, {"point": exc.point}))
    except PlanInputError as exc:
        return Answer(422, PROBLEM_JSON, input_problem_bytes(exc, instance))
    except MemoryError:
        # The work's own objects are unwound by now, so there is room to say so.
        return Answer(503, PROBLEM_JSON, memory_problem(instance))


__all__ = ["JOBS", "Answer", "run", "warm"]
