"""recommend_disaggregated(request): the prefill and decode settings, and how many replicas of
each, that reach a disaggregated deployment's targets with the fewest GPUs.

Each role is searched on its own grid (TP, PP, attention DP, DCP, EP / DeepEP, dtypes,
speculative decoding; `--disaggregation-mode` set to the role) by the aggregated recommender's
search (search.recommend_grid: the layer partition, the mamba/KV split, the same plan bound),
which re-plans every setting it returns from its own launch flags through POST /v1/plan's
parsing. A setting's replicas are the least that reach every target of its side over all
replicas; the side's answer is the setting with the fewest GPUs (replicas x tp x pp). The two
answers are then planned once more as POST /v1/plan plans a pair (service/disaggregated.py),
whose side plans must equal the searched ones, and whose summary is the pair's.

SGLang's role rules are the solver's (a setting it refuses is counted under `refused` by its
reason); knobs the request fixes that no setting can satisfy are input errors with SGLang's
reason: PP with speculative decoding on the decode side, a DCP size that does not divide the
TP / fit the attention TP, DeepEP (or EP) on a model without MoE experts.

Targets over replicas: decode `concurrent_requests` against max_running_requests x dp per
replica, `tokens_per_request` x concurrent_requests against logical_max_total_num_tokens x dp
(DCP multiplies the logical tokens, so each DCP size is searched with tokens_per_request /
dcp_size against the per-rank rows the search reads); prefill `in_flight_requests` and
`in_flight_tokens` likewise; `context_length` per worker (one full request fits one pool).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from itertools import product
from typing import Any

from pydantic import ValidationError

from mambasizer.schemas.disaggregated import PairSummary
from mambasizer.schemas.plan import Plan
from mambasizer.schemas.recommend import (
    Candidate,
    Objective,
    RecommendRequest,
    Search,
    Target,
    TargetCheck,
)
from mambasizer.schemas.recommend_disaggregated import (
    MAX_SIDE_GRID,
    DecodeSide,
    PrefillSide,
    RecommendDisaggregatedRequest,
    RecommendDisaggregatedResponse,
    SearchedSide,
    SideChoice,
)
from mambasizer.schemas.request import MAX_CONTEXT, MAX_TOKENS, Budget, PlanRequest, ServerArgs
from mambasizer.service import disaggregated
from mambasizer.service.planner import model_layout
from mambasizer.service.recommend import search
from mambasizer.service.sglang_args import _flags, _release
from mambasizer.service.solver import dcp
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.plan import input_error_from_validation, replan

ROLES = ("prefill", "decode")
# SGLang 0.5.23 check_server_args' words (the solver refuses the same: service/solver/launch.py).
PP_SPEC_PREFILL_ONLY = "PP + speculative decoding (MTP) is only supported on prefill nodes (disaggregation-mode=prefill)"
_DEFAULT_TP = (1, 2, 4, 8)
# search knob -> the ServerArgs field it varies
_KNOBS = {
    "tp_size": "tp_size", "pp_size": "pp_size", "attn_dp_size": "attn_dp_size", "dcp_size": "dcp_size",
    "ep_size": "ep_size", "moe_a2a_backend": "moe_a2a_backend", "kv_cache_dtype": "kv_cache_dtype",
    "mamba_ssm_dtype": "mamba_ssm_dtype", "speculative": "speculative_algorithm",
}
# Plans one side may run (its grid's start checks, partitions and cache bisections together):
# both sides within the heavy pool's deadline on 2 busy cores for the largest presets.
PLANS_PER_SIDE = 600
SECONDS_PER_SIDE = 1.5  # the API's time bound per side (recommend_disaggregated's seconds_per_side)
CHUNK = 2  # settings per search.recommend_grid call (each re-plans its answers once more)
_DEFAULT_ARGS_VALUES = ServerArgs().model_dump()
_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")


# ----------------------------------------------------------------------------- request


def parse(raw: Any) -> RecommendDisaggregatedRequest:
    if isinstance(raw, RecommendDisaggregatedRequest):
        return raw
    if not isinstance(raw, dict):
        raise PlanInputError("request", "must be a JSON object (a RecommendDisaggregatedRequest)")
    if ("gpu" in raw and raw["gpu"] is not None) == ("budget" in raw and raw["budget"] is not None):
        raise PlanInputError("gpu", 'give exactly one of gpu (a GET /v1/gpus name, e.g. "h200": planned from the GPU alone) or budget (a PlanRequest budget)')
    try:
        req = RecommendDisaggregatedRequest.model_validate(raw)
    except ValidationError as exc:
        err = input_error_from_validation(exc)
        if err.message.startswith("unknown field"):
            err = PlanInputError(err.field, "unknown field (not part of the RecommendDisaggregatedRequest contract)", err.allowed)
        raise err from None
    # The model, the GPU (catalog, confirmed capacity) and the budget as /v1/recommend judges them.
    search.parse(_recommend_body(req))
    for role in ROLES:
        side: PrefillSide | DecodeSide = getattr(req, role)
        mode = side.server_args.disaggregation_mode
        if "disaggregation_mode" in side.server_args.model_fields_set and mode != role:
            raise PlanInputError(f"{role}.server_args.disaggregation_mode", f"is {mode!r} on the {role} side; leave it out (the side is {role})", [role])
    return req


def _recommend_body(req: RecommendDisaggregatedRequest) -> dict:
    body: dict = {"model": req.model.model_dump(exclude_defaults=True), "sglang_version": req.sglang_version}
    if req.gpu is not None:
        body["gpu"] = req.gpu
    else:
        assert req.budget is not None
        body["budget"] = req.budget.model_dump(exclude_none=True)
    return body


def _has_experts(layout: Any) -> bool | None:
    """Whether the model has MoE experts (None: its config is not known, an explicit layout)."""
    cfg = layout.hf_text_config
    if not cfg:
        return None
    return any(int(cfg.get(k) or 0) > 0 for k in _EXPERT_KEYS)


def _release_knows(release: str) -> Callable[[str, Any], bool]:
    """Whether `release`'s launch parser takes the flag of a ServerArgs field at this value (the
    search re-plans every answer from its launch line, parsed as that release parses it)."""
    by_option, _ = _flags(_release(release))
    _, ours = _flags()  # launch_flags spells each field as SGLang 0.5.23 does

    def knows(field: str, value: Any) -> bool:
        if value == _DEFAULT_ARGS_VALUES[field]:
            return True  # not passed
        flag = by_option.get(ours[field].options[0])
        return flag is not None and (flag.choices is None or isinstance(value, bool) or str(value) in flag.choices)

    return knows


def _values(role: str, side: PrefillSide | DecodeSide, layout: Any, release: str) -> dict[str, list]:
    """Each knob's values for the side: searched, fixed, or the role's default (a default
    value the release has no flag for is left out; a given one is the request's error)."""
    fixed = side.server_args.model_fields_set
    knows = _release_knows(release)
    if not knows("disaggregation_mode", role):
        raise PlanInputError("sglang_version", f"SGLang {release} has no --disaggregation-mode {role}: recommend a disaggregated deployment under a release that has it")
    for field in sorted(fixed):
        if not knows(field, getattr(side.server_args, field)):
            raise PlanInputError(f"{role}.server_args.{field}", f"is not a launch argument of SGLang {release} at {getattr(side.server_args, field)!r}; leave it out or pick a release that has it")
    out: dict[str, list] = {}
    for knob, field in _KNOBS.items():
        searched = getattr(side.search, knob)
        if searched is not None and field in fixed:
            raise PlanInputError(f"{role}.search.{knob}", f"{role}.server_args fixes {field}={getattr(side.server_args, field)!r}; search it or fix it, not both")
        if searched is not None:
            out[field] = list(dict.fromkeys(searched))
        elif field in fixed:
            out[field] = [getattr(side.server_args, field)]
        elif field == "tp_size":
            out[field] = list(_DEFAULT_TP)
        elif field == "pp_size" and layout.pp_supported:
            out[field] = [1, 2, 4, 8]
        elif field == "dcp_size" and role == "decode":
            out[field] = [1, 2, 4, 8]
        else:
            out[field] = [getattr(side.server_args, field)]
    for knob, field in _KNOBS.items():
        unknown = [v for v in out[field] if not knows(field, v)]
        if unknown and getattr(side.search, knob) is not None:
            raise PlanInputError(f"{role}.search.{knob}", f"{unknown[0]!r} is not a launch argument value of SGLang {release}; leave it out or pick a release that has it")
        out[field] = [v for v in out[field] if knows(field, v)]
    if _has_experts(layout) is False:
        for field, default in (("moe_a2a_backend", "none"), ("ep_size", 1)):
            if any(v != default for v in out[field]):
                where = f"{role}.server_args.{field}" if field in fixed else f"{role}.search.{field}"
                raise PlanInputError(where, f"{layout.name} has no MoE experts: there is nothing for {'DeepEP' if field == 'moe_a2a_backend' else 'expert parallelism'} to shard; leave it out")
    return out


def _fixed_rules(role: str, side: PrefillSide | DecodeSide) -> None:
    """Fixed knobs no setting of the side can satisfy: SGLang's own reason, naming the field."""
    sa, fixed = side.server_args, side.server_args.model_fields_set
    if role == "decode" and {"pp_size", "speculative_algorithm"} <= fixed and sa.pp_size > 1 and sa.speculative_algorithm is not None:
        raise PlanInputError("decode.server_args.speculative_algorithm", f"{PP_SPEC_PREFILL_ONLY} (SGLang 0.5.23 check_server_args); drop it or pp_size on the decode side")
    if {"dcp_size", "tp_size"} <= fixed and sa.tp_size % sa.attn_dp_size == 0:
        try:
            dcp.check(sa.tp_size, sa.tp_size // sa.attn_dp_size, sa.dcp_size)
        except PlanInputError as exc:
            raise PlanInputError(f"{role}.{exc.field}", exc.message) from None


def _grid(role: str, values: dict[str, list]) -> dict[int, list[dict]]:
    """The side's settings, by DCP size. Combinations SGLang's parallel rules exclude are not
    settings (attention DP or DCP not dividing, EP not dividing TP, PP with speculative
    decoding on the decode side): skipped, not planned."""
    fields = list(_KNOBS.values())
    raw = math.prod(len(values[f]) for f in fields)
    if raw > MAX_SIDE_GRID * 8:
        raise PlanInputError(f"{role}.search", f"{raw:,} combinations of the searched knobs; at most {MAX_SIDE_GRID * 8:,} before SGLang's parallel rules filter them: narrow a knob")
    out: dict[int, list[dict]] = {}
    seen = set()
    for combo in product(*(values[f] for f in fields)):
        point = dict(zip(fields, combo, strict=True))
        tp, dp, d = point["tp_size"], point["attn_dp_size"], point["dcp_size"]
        if tp % dp:
            continue  # attention DP must divide TP (SGLang asserts it): not a setting
        try:
            dcp.check(tp, tp // dp, d)
        except PlanInputError:
            continue
        if point["moe_a2a_backend"] == "deepep":
            point["ep_size"] = tp  # SGLang's _a2a_ep_size: DeepEP spans the TP group
        elif tp % point["ep_size"]:
            continue
        if role == "decode" and point["pp_size"] > 1 and point["speculative_algorithm"] is not None:
            continue  # PP_SPEC_PREFILL_ONLY
        key = tuple(sorted(point.items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        out.setdefault(d, []).append(point)
    n = sum(len(v) for v in out.values())
    if n > MAX_SIDE_GRID:
        raise PlanInputError(f"{role}.search", f"{n} settings to search on the {role} side; at most {MAX_SIDE_GRID}: narrow a knob")
    return out


# ----------------------------------------------------------------------------- one side


def _side_request(req: RecommendDisaggregatedRequest, role: str, side: PrefillSide | DecodeSide, d: int) -> RecommendRequest:
    """The aggregated search's request for one DCP size of the side: the role's base flags
    (the grid sets every searched knob), its target per replica as the search reads it."""
    fixed = side.server_args.model_fields_set - set(_KNOBS.values())
    base: dict = {f: getattr(side.server_args, f) for f in fixed}
    base["disaggregation_mode"] = role
    if req.context_length is not None and "context_length" not in fixed:
        base["context_length"] = req.context_length
    mamba_cache = True
    objective: Objective = "most_requests"
    # One full request must fit one worker's pool: C logical tokens are C / dcp per-rank rows.
    ctx = None if req.context_length is None else _ceil(req.context_length, d)
    if isinstance(side, DecodeSide):
        tpr = None if side.tokens_per_request is None else _ceil(side.tokens_per_request, d)
        target = Target(running_requests=side.concurrent_requests, tokens_per_request=tpr, context_length=ctx)
    elif side.in_flight_requests is not None:
        tpr = None if side.in_flight_tokens is None else min(MAX_CONTEXT, _ceil(_ceil(side.in_flight_tokens, side.in_flight_requests), d))
        target = Target(running_requests=side.in_flight_requests, tokens_per_request=tpr, context_length=ctx)
    else:
        # Tokens alone: SGLang's own split per setting, the replicas from its KV.
        target, mamba_cache, objective = Target(context_length=ctx), False, "most_tokens"
    return RecommendRequest(
        model=req.model, gpu=req.gpu, budget=req.budget, target=target, objective=objective,
        search=Search(pp_partition=True, mamba_cache=mamba_cache, mem_fraction_static=False),
        server_args=ServerArgs(**base), env=req.env, draft_model=req.draft_model,
        sglang_version=req.sglang_version, limit=MAX_SIDE_GRID,
    )


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _needs(req: RecommendDisaggregatedRequest, role: str) -> list[tuple[str, int, str]]:
    """(target name, required over all replicas, what one replica contributes: requests|tokens)."""
    if role == "decode":
        dec = req.decode
        out = [("concurrent_requests", dec.concurrent_requests, "requests")]
        if dec.tokens_per_request is not None:
            out.append(("tokens_per_request", min(MAX_TOKENS, dec.concurrent_requests * dec.tokens_per_request), "tokens"))
        return out
    pre = req.prefill
    out = []
    if pre.in_flight_requests is not None:
        out.append(("in_flight_requests", pre.in_flight_requests, "requests"))
    if pre.in_flight_tokens is not None:
        out.append(("in_flight_tokens", pre.in_flight_tokens, "tokens"))
    return out


def _check(required: int, achieved: int) -> TargetCheck:
    return TargetCheck.trusted({"required": required, "achieved": achieved, "margin": achieved - required, "met": achieved >= required})


def _choice(req: RecommendDisaggregatedRequest, role: str, c: Candidate, dropped: Counter) -> tuple[tuple, SideChoice] | None:
    """The setting with the replicas that reach the side's targets, and its rank key (smaller
    is better), or None when no count of replicas does (a request too long for its pool)."""
    p = c.plan
    dp = p.resolved.attn_dp_size
    per = {"requests": (p.max_running_requests or 0) * dp, "tokens": (p.logical_max_total_num_tokens or 0) * dp}
    needs = _needs(req, role)
    if any(per[kind] <= 0 for _, _, kind in needs):
        dropped["holds no request"] += 1
        return None
    replicas = max(_ceil(required, per[kind]) for _, required, kind in needs)
    if replicas > disaggregated.MAX_REPLICAS:
        dropped[f"more than {disaggregated.MAX_REPLICAS} replicas needed"] += 1
        return None
    checks = {name: _check(required, per[kind] * replicas) for name, required, kind in needs}
    if req.context_length is not None:
        served = p.resolved.context_length
        logical = p.logical_max_total_num_tokens or 0
        checks["context_length"] = _check(req.context_length, logical if served >= req.context_length else served)
        if not checks["context_length"].met:
            dropped["context_length does not fit one worker's pool"] += 1
            return None
    gpr = p.resolved.tp_size * p.resolved.pp_size
    headroom = min(per[kind] * replicas / required for _, required, kind in needs)
    choice = SideChoice.trusted({
        "role": role, "replicas": replicas, "gpus_per_replica": gpr, "gpus": gpr * replicas,
        "tp_size": p.resolved.tp_size, "pp_size": p.resolved.pp_size, "attn_dp_size": dp, "dcp_size": p.resolved.dcp_size,
        "ep_size": p.resolved.ep_size, "moe_a2a_backend": p.resolved.moe_a2a_backend,
        "speculative_algorithm": p.resolved.speculative_algorithm, "sglang_args": c.sglang_args, "env": c.env,
        "requests_per_replica": per["requests"], "kv_tokens_per_replica": per["tokens"], "targets": checks,
        "binding_limit": p.binding_limit, "plan": p,
    })
    return (gpr * replicas, -headroom, replicas, len(c.sglang_args)), choice


class _Side:
    def __init__(self) -> None:
        self.searched = 0  # plans run
        self.settings = 0  # grid points
        self.refused: Counter = Counter()
        self.dropped: Counter = Counter()  # startable settings no count of replicas makes reach the targets, by why
        self.ranked: list[tuple[tuple, SideChoice]] = []
        self.warnings: list[str] = []


def _search_side(req: RecommendDisaggregatedRequest, role: str, layout: Any, seconds: float | None) -> _Side:
    side: PrefillSide | DecodeSide = getattr(req, role)
    _fixed_rules(role, side)
    out = _Side()
    grid = _grid(role, _values(role, side, layout, req.sglang_version))
    total = sum(len(v) for v in grid.values())
    # The side's share of the plan bound: search.recommend_grid stops at search.MAX_PLANS.
    spent = search.MAX_PLANS - PLANS_PER_SIDE
    # And of the time, when given (the API's heavy pool: its deadline): a plan of the largest
    # checkpoints costs tens of ms (their weights per stage), so the grid is searched a few
    # settings at a time until the side's seconds are spent.
    stop = math.inf if seconds is None else time.monotonic() + seconds
    done = 0
    for d, points in sorted(grid.items()):
        sreq = _side_request(req, role, side, d)
        for i in range(0, len(points), CHUNK):
            if time.monotonic() >= stop:
                out.warnings.append(
                    f"mambasizer: the {role} search stopped at its time bound of {seconds:g} s after {done} of {total} "
                    f"settings (the rest were not searched): narrow {role}.search"
                )
                out.ranked.sort(key=lambda kv: kv[0])
                return out
            chunk = points[i:i + CHUNK]
            done += len(chunk)
            startable, spent = _startable(sreq, layout, chunk, out, spent)
            if startable:
                spent = _search_chunk(req, role, sreq, startable, out, spent)
    out.ranked.sort(key=lambda kv: kv[0])
    return out


def _search_chunk(req: RecommendDisaggregatedRequest, role: str, sreq: RecommendRequest, points: list[dict], out: _Side, spent: int) -> int:
    try:
        answer, after = search.recommend_grid(sreq, points, spent)
    except PlanInputError as exc:
        # The side's base flags themselves cannot be planned: the side's field.
        where = _side_field(role, exc.field)
        message = exc.message if where != "sglang_version" else f"the {role} side's launch line under SGLang {req.sglang_version}: {exc.message}"
        raise PlanInputError(where, message, exc.allowed if where != "sglang_version" else None) from None
    out.searched += after - spent
    out.refused.update(answer.refused)
    for w in answer.warnings:
        if w not in out.warnings:
            out.warnings.append(w)
    for c in answer.candidates:
        got = _choice(req, role, c, out.dropped)
        if got is not None:
            out.ranked.append(got)
    return after


def _startable(sreq: RecommendRequest, layout: Any, points: list[dict], out: _Side, spent: int) -> tuple[list[dict], int]:
    """The points whose flags SGLang accepts: one plan each. A launch SGLang rejects (DCP on a
    GPU its backend cannot run, TBO without DP, ...) is rejected whatever the layer partition
    or the mamba cache size, so the search spends nothing more on it."""
    budget = Budget(gpu=sreq.gpu) if isinstance(sreq.gpu, str) else sreq.budget  # one catalog GPU (the request's)
    assert budget is not None  # RecommendRequest requires exactly one of them
    keep = []
    for point in points:
        out.settings += 1
        if spent >= search.MAX_PLANS:
            out.refused["not searched (plan bound)"] += 1
            continue
        spent += 1
        out.searched += 1
        args = sreq.server_args.model_copy(update=point)
        preq = PlanRequest(model=sreq.model, server_args=args, env=sreq.env, budget=budget, draft_model=sreq.draft_model,
                           sglang_version=sreq.sglang_version)
        try:
            p = replan(preq, layout)
        except PlanInputError as exc:
            out.refused[f"invalid {exc.field}"] += 1
            continue
        if not p.feasible and p.error is not None and p.error.kind == "launch_rejected" and not args.enable_linear_replayssm_spec:
            out.refused[p.error.kind] += 1
            continue
        keep.append(point)
    return keep, spent


def _side_field(role: str, field: str) -> str:
    if field.startswith(("server_args.", "search.")):
        return f"{role}.{field}"
    if field.startswith("sglang_args"):
        # A searched setting's launch line the release's own parser refuses on re-plan.
        return "sglang_version"
    return field  # the model, the GPU, the budget: shared by both sides


# ----------------------------------------------------------------------------- the pair


def _side_body(req: RecommendDisaggregatedRequest, c: SideChoice) -> dict:
    """The POST /v1/plan body of one replica of the side (as the search re-planned it)."""
    body: dict = {"model": req.model.model_dump(exclude_defaults=True), "sglang_args": list(c.sglang_args),
                  "budget": {"gpu": req.gpu} if req.gpu is not None else req.budget.model_dump(exclude_none=True) if req.budget else {},
                  "sglang_version": req.sglang_version}
    if c.env:
        body["env"] = dict(c.env)
    if req.draft_model is not None:
        body["draft_model"] = req.draft_model.model_dump()
    return body


def _plan_fields(side_json: dict) -> dict:
    return {k: v for k, v in side_json.items() if k in Plan.model_fields}


def recommend_disaggregated(raw: Any, seconds_per_side: float | None = None) -> RecommendDisaggregatedResponse:
    """The answer to a RecommendDisaggregatedRequest. `seconds_per_side` bounds each side's
    search in time too (POST /v1/recommend/disaggregated passes SECONDS_PER_SIDE, to answer
    within the heavy pool's deadline); without it the answer depends only on the request."""
    req = parse(raw)
    budget = {"gpu": req.gpu} if req.gpu is not None else req.budget.model_dump(exclude_none=True) if req.budget else {}
    layout = model_layout(PlanRequest.model_validate({"model": req.model.model_dump(exclude_defaults=True), "budget": budget}))
    sides = {role: _search_side(req, role, layout, seconds_per_side) for role in ROLES}
    best: dict[str, SideChoice | None] = {role: s.ranked[0][1] if s.ranked else None for role, s in sides.items()}
    warnings = [w for s in sides.values() for w in s.warnings]
    pair: PairSummary | None = None
    plan_request: dict | None = None
    pre, dec = best["prefill"], best["decode"]
    if pre is not None and dec is not None:
        plan_request = {"prefill": _side_body(req, pre), "decode": _side_body(req, dec),
                        "prefill_replicas": pre.replicas, "decode_replicas": dec.replicas}
        answer = disaggregated.plan_pair(plan_request)
        for role, chosen in (("prefill", pre), ("decode", dec)):
            assert chosen.plan is not None
            planned = Plan.model_validate(_plan_fields(answer[role]))
            if planned != chosen.plan:  # never seen: the pair path plans each side as the search did
                warnings.append(f"mambasizer: the {role} side planned as a pair differs from its searched plan; the pair's plan is shown")
            best[role] = chosen.model_copy(update={"plan": planned})
        pre, dec = best["prefill"], best["decode"]
        pair = PairSummary.model_validate(answer["pair"])
    alternatives = {
        role: [c.model_copy(update={"plan": None}) for _, c in s.ranked[: req.limit]] for role, s in sides.items()
    }
    return RecommendDisaggregatedResponse.trusted({
        "prefill": pre, "decode": dec, "gpus": None if pre is None or dec is None else pre.gpus + dec.gpus,
        "pair": pair, "plan_request": plan_request, "alternatives": alternatives,
        "searched": {role: SearchedSide.trusted({"searched": s.searched, "settings": s.settings, "refused": dict(sorted(s.refused.items()))})
                     for role, s in sides.items()},
        "why": _why(req, best, pair, sides), "warnings": list(dict.fromkeys(warnings)),
    })


def _layout_text(c: SideChoice) -> str:
    parts = [f"TP {c.tp_size}"]
    if c.pp_size > 1:
        parts.append(f"PP {c.pp_size}")
    if c.attn_dp_size > 1:
        parts.append(f"attention DP {c.attn_dp_size}")
    if c.dcp_size > 1:
        parts.append(f"DCP {c.dcp_size}")
    if c.moe_a2a_backend != "none":
        parts.append(f"{c.moe_a2a_backend} (EP {c.ep_size})")
    elif c.ep_size > 1:
        parts.append(f"EP {c.ep_size}")
    if c.speculative_algorithm:
        parts.append(c.speculative_algorithm)
    return " x ".join(parts[:2]) + (", " + ", ".join(parts[2:]) if len(parts) > 2 else "")


def _side_text(c: SideChoice) -> str:
    reach = ", ".join(f"{name} {t.achieved:,} (target {t.required:,})" for name, t in c.targets.items())
    return f"{c.replicas} x {_layout_text(c)} = {c.gpus} GPUs ({reach})"


def _why(req: RecommendDisaggregatedRequest, best: dict[str, SideChoice | None], pair: PairSummary | None, sides: dict[str, _Side]) -> str:
    parts = []
    for role in ROLES:
        c = best[role]
        if c is None:
            s = sides[role]
            dropped = ", ".join(f"{k} ({v})" for k, v in s.dropped.most_common(3))
            reasons = ", ".join(f"{k} ({v})" for k, v in s.refused.most_common(3)) or "none"
            parts.append(f"{role}: no searched setting reaches its targets ({s.searched} plans"
                         + (f"; the settings that start fall short: {dropped}" if dropped else "")
                         + f"; most often refused: {reasons})")
        else:
            parts.append(f"{role}: {_side_text(c)}")
    text = "; ".join(parts) + "."
    if pair is not None and best["prefill"] is not None and best["decode"] is not None:
        text += f" {best['prefill'].gpus + best['decode'].gpus} GPUs in all; the {pair.binding_side} side binds what the pair sustains."
    searched = sum(s.searched for s in sides.values())
    refused = sum(sum(s.refused.values()) for s in sides.values())
    text += f" {searched} plans searched, {refused} plans refused by SGLang's own checks."
    return text


__all__ = ["PP_SPEC_PREFILL_ONLY", "parse", "recommend_disaggregated"]
