"""A disaggregated deployment as one request: `{"prefill": BODY, "decode": BODY}` (each an
ordinary POST /v1/plan body, optionally with `prefill_replicas` / `decode_replicas`), both
planned, and what the pair sustains. Shared by POST /v1/plan and `mambasizer check`.

Each side gets its role (`--disaggregation-mode`) when it does not say one; a side that
names the other role, two different models, or an unknown key is input error, with the
field path inside the pair (`prefill.server_args.tp_size`).
"""

from __future__ import annotations

from typing import Any

from mambasizer.schemas.disaggregated import PairSummary
from mambasizer.schemas.plan import Plan
from mambasizer.service.solver import PlanInputError

ROLES = ("prefill", "decode")
REPLICA_KEYS = ("prefill_replicas", "decode_replicas")
MAX_REPLICAS = 4096


def is_pair(raw: Any) -> bool:
    return isinstance(raw, dict) and any(role in raw for role in ROLES) and "model" not in raw


def _with_role(side: dict, role: str) -> dict:
    """The side's body with its role set when it gives none."""
    side = dict(side)
    args = side.get("sglang_args")
    if isinstance(args, list):
        if not any(isinstance(a, str) and a.split("=", 1)[0] == "--disaggregation-mode" for a in args):
            side["sglang_args"] = [*args, "--disaggregation-mode", role]
    elif "sglang_args" not in side or args is None:
        sa = side.get("server_args")
        if sa is None:
            side["server_args"] = {"disaggregation_mode": role}
        elif isinstance(sa, dict) and "disaggregation_mode" not in sa:
            side["server_args"] = {**sa, "disaggregation_mode": role}
    return side


def split(raw: dict) -> tuple[dict[str, dict], dict[str, int]]:
    """({role: that side's plan body, role set}, {role: replicas}); PlanInputError for a bad pair."""
    unknown = sorted(set(raw) - set(ROLES) - set(REPLICA_KEYS))
    if unknown:
        raise PlanInputError(unknown[0], "unknown field of a disaggregated plan request", [*ROLES, *REPLICA_KEYS])
    sides: dict[str, dict] = {}
    for role in ROLES:
        side = raw.get(role)
        if not isinstance(side, dict):
            raise PlanInputError(role, f"a disaggregated plan needs both sides: give '{role}' as a plan request object (the body POST /v1/plan takes)")
        sides[role] = _with_role(side, role)
    replicas: dict[str, int] = {}
    for role, key in zip(ROLES, REPLICA_KEYS, strict=True):
        value = raw.get(key, 1)
        if isinstance(value, float) and value.is_integer():  # JSON's 4.0 is the integer 4 (as everywhere in the schema)
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPLICAS:
            raise PlanInputError(key, f"must be a whole number from 1 to {MAX_REPLICAS} (how many {role} servers the deployment runs)")
        replicas[role] = value
    return sides, replicas


def within(role: str, exc: PlanInputError) -> PlanInputError:
    """A side's input error, with the field path inside the pair."""
    return PlanInputError(f"{role}.{exc.field}", exc.message, exc.allowed)


def check_roles(requests: dict[str, Any]) -> None:
    """Each side's resolved role is its own, and both size the same model."""
    for role, req in requests.items():
        mode = req.server_args.disaggregation_mode
        if mode != role:
            raise PlanInputError(
                f"{role}.server_args.disaggregation_mode",
                f"is {mode!r} on the {role} side of a disaggregated plan; give --disaggregation-mode {role} (or leave it out)",
                [role],
            )
    models = {role: req.model.model_dump(mode="json") for role, req in requests.items()}
    if models["prefill"] != models["decode"]:
        raise PlanInputError("decode.model", "must be the model the prefill side serves: both sides of a disaggregated deployment run one checkpoint")


def summarize(plans: dict[str, Plan], replicas: dict[str, int]) -> PairSummary:
    """What the pair sustains (both plans as SGLang sizes them, times their replicas)."""
    pre, dec = plans["prefill"], plans["decode"]

    def requests(p: Plan, n: int) -> int | None:
        return None if not p.feasible or p.max_running_requests is None else p.max_running_requests * p.resolved.attn_dp_size * n

    def tokens(p: Plan, n: int) -> int | None:
        if not p.feasible or p.logical_max_total_num_tokens is None:
            return None
        return p.logical_max_total_num_tokens * p.resolved.attn_dp_size * n

    decode_n, prefill_n = requests(dec, replicas["decode"]), requests(pre, replicas["prefill"])
    decode_kv, prefill_kv = tokens(dec, replicas["decode"]), tokens(pre, replicas["prefill"])
    notes: list[str] = []
    binding = None
    if decode_n is not None and prefill_n is not None:
        binding = "decode" if decode_n <= prefill_n else "prefill"
        if binding == "prefill":
            notes.append(
                f"the prefill side holds {prefill_n} requests at once, fewer than the {decode_n} the decode side runs: "
                "decode slots wait on prefills; add prefill replicas or memory to fill them"
            )
    if pre.feasible and dec.feasible and pre.resolved.context_length != dec.resolved.context_length:
        notes.append(
            f"the sides resolve different context lengths (prefill {pre.resolved.context_length}, decode "
            f"{dec.resolved.context_length}): a prompt the prefill side takes may not fit the decode side"
        )
    if pre.feasible and dec.feasible and pre.resolved.page_size != dec.resolved.page_size:
        notes.append(f"the sides page the KV differently (prefill page_size {pre.resolved.page_size}, decode {dec.resolved.page_size})")
    for role, p in plans.items():
        if not p.feasible and p.error is not None:
            notes.append(f"the {role} side would not start: {p.error.exception}: {p.error.message}")
    return PairSummary.trusted({
        "prefill_replicas": replicas["prefill"], "decode_replicas": replicas["decode"],
        "decode_concurrency": decode_n, "prefill_in_flight_requests": prefill_n,
        "decode_kv_tokens": decode_kv, "prefill_kv_tokens": prefill_kv,
        "decode_kv_tokens_per_request": None if not decode_kv or not decode_n else decode_kv // decode_n,
        "binding_side": binding, "feasible": pre.feasible and dec.feasible, "notes": notes,
    })


def plan_sides(raw: dict) -> tuple[dict[str, Any], dict[str, Plan], dict[str, int]]:
    """({role: prepared request}, {role: Plan}, {role: replicas}) for a pair body.
    PlanInputError names the side's field."""
    from mambasizer.service.api import wire
    from mambasizer.service.planner import plan

    sides, replicas = split(raw)
    prepared = {}
    for role, side in sides.items():
        try:
            prepared[role] = wire.prepare(side, allow_trial=False)
        except PlanInputError as exc:
            raise within(role, exc) from None
    check_roles({role: p.request for role, p in prepared.items()})
    plans = {}
    for role, p in prepared.items():
        try:
            plans[role] = plan(p.request)
        except PlanInputError as exc:
            raise within(role, exc) from None
    return prepared, plans, replicas


def plan_pair(raw: dict) -> dict:
    """Both plans and the pair's summary, as the JSON object POST /v1/plan answers (each
    side exactly as it answers that side alone). PlanInputError names the side's field."""
    import json

    from mambasizer.service.api import wire

    prepared, plans, replicas = plan_sides(raw)
    out = {}
    for role, p in prepared.items():
        body = wire.plan_json(plans[role])
        extra = p.extra_fields()
        out[role] = json.loads(wire.with_fields(body, extra) if extra else body)
    out["pair"] = summarize(plans, replicas).model_dump(mode="json")
    return out
