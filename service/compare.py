"""One request under both accountings, with the deltas (`POST /v1/plan/compare`; the route is
service/api/compare.py, the work runs in the heavy-work pool).

`whole-model` is the accounting before SGLang 0.5.23 (every pipeline stage was charged
for the mamba state of all the model's mamba layers); `sglang-0.5.23` charges each stage
the largest stage's share. Deltas are `sglang-0.5.23` minus `whole-model`.

When the upgrade changes the sizing enough to matter at an unchanged
`--mem-fraction-static` (a headline figure moves by MATERIAL_RELATIVE or more, a pool on
some stage by MATERIAL_BYTES or more, or one side would not start), the answer carries a
warning that says where the memory went, and `pin`: the launch flags that keep the old
sizing (`--max-mamba-cache-size`, `--max-total-tokens`, `--max-running-requests`), checked
by planning them under SGLang 0.5.23's accounting.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mambasizer.schemas import Plan, PlanRequest
from mambasizer.schemas.plan import REFERENCE
from mambasizer.service.planner import plan

BASELINE = "whole-model"
CANDIDATE = "sglang-0.5.23"
MATERIAL_RELATIVE = 0.01
MATERIAL_BYTES = 256 << 20
GIB = float(1 << 30)

TOP_FIELDS = (
    "rest_gib",
    "mamba_ratio",
    "max_mamba_cache_size",
    "mamba_cache_per_req_bytes",
    "kv_budget_bytes",
    "max_total_num_tokens",
    "max_running_requests",
    "pp_max_micro_batch_size",
)
HEADLINE = ("max_mamba_cache_size", "max_total_num_tokens", "max_running_requests")
STAGE_FIELDS = (
    "stage_per_req_bytes",
    "charged_mamba_bytes",
    "mamba_pool_bytes",
    "conv_state_bytes",
    "ssm_state_bytes",
    "intermediate_state_bytes",
    "replayssm_ring_bytes",
    "kv_budget_bytes",
    "kv_cell_bytes",
    "kv_tokens",
    "kv_pool_bytes",
    "req_to_token_bytes",
    "idle_bytes",
)
# The flag that pins each headline figure, in SGLang 0.5.23's spelling.
PIN_FLAGS = {
    "max_mamba_cache_size": "--max-mamba-cache-size",
    "max_total_num_tokens": "--max-total-tokens",
    "max_running_requests": "--max-running-requests",
}
PIN_ARGS = {"max_mamba_cache_size": "max_mamba_cache_size", "max_total_num_tokens": "max_total_tokens", "max_running_requests": "max_running_requests"}

Number = int | float


class CompareRequest(PlanRequest):
    """A PlanRequest (or one with `sglang_args`); `accounting` is ignored, both are computed."""

    sglang_args: list[str] | None = Field(None, description="SGLang launch arguments in place of `server_args`, as for POST /v1/plan.")


class FieldDelta(BaseModel):
    model_config = ConfigDict(extra="forbid")
    whole_model: Number | None = Field(alias="whole-model")
    sglang_0_5_23: Number | None = Field(alias="sglang-0.5.23")
    delta: Number | None = Field(description="sglang-0.5.23 minus whole-model; null when either is unknown.")
    relative: float | None = Field(description="delta / whole-model; null when whole-model is 0 or unknown.")


class StageDelta(BaseModel):
    pp_rank: int
    fields: dict[str, FieldDelta]


class Pin(BaseModel):
    sglang_args: list[str] = Field(description="Flags to add to the launch command to keep the whole-model sizing.")
    server_args: dict[str, int] = Field(description="The same pins as server_args fields.")
    reproduces_whole_model: bool = Field(description="Planning with these pins under sglang-0.5.23 gives the whole-model headline figures and pools.")


class CompareResponse(BaseModel):
    reference: str = REFERENCE
    baseline_accounting: str = BASELINE
    accounting: str = CANDIDATE
    baseline: Plan = Field(description="The plan under the whole-model accounting (before SGLang 0.5.23).")
    plan: Plan = Field(description="The plan under SGLang 0.5.23's accounting.")
    deltas: dict[str, FieldDelta]
    stages: list[StageDelta]
    changed: bool
    material: bool = Field(description="The upgrade changes the sizing enough to matter at an unchanged --mem-fraction-static.")
    warnings: list[str]
    pin: Pin | None
    ignored_sglang_args: list[str] | None = None
    sglang_args_warnings: list[str] | None = None


def _delta(a: Any, b: Any) -> dict:
    if isinstance(a, bool) or isinstance(b, bool):
        a, b = (None if a is None else int(a)), (None if b is None else int(b))
    d = None if a is None or b is None else b - a
    rel = None if d is None or not a else d / a
    return {BASELINE: a, CANDIDATE: b, "delta": d, "relative": rel}


def _stage_values(st) -> dict:
    v = {f: getattr(st, f) for f in STAGE_FIELDS if f != "mamba_pool_bytes"}
    v["mamba_pool_bytes"] = st.conv_state_bytes + st.ssm_state_bytes + st.intermediate_state_bytes + st.replayssm_ring_bytes
    return v


def _gib(n: int) -> str:
    return f"{n / GIB:+.2f} GiB"


def _headline(p: Plan) -> tuple:
    return tuple(getattr(p, f) for f in HEADLINE)


def _pools(p: Plan) -> list[tuple[int, int]]:
    return [(v["mamba_pool_bytes"], v["kv_pool_bytes"]) for v in map(_stage_values, p.stages)]


def compare(request: PlanRequest) -> dict:
    base = plan(request.model_copy(update={"accounting": BASELINE}))
    cand = plan(request.model_copy(update={"accounting": CANDIDATE}))
    deltas = {f: _delta(getattr(base, f), getattr(cand, f)) for f in TOP_FIELDS}
    deltas["feasible"] = _delta(base.feasible, cand.feasible)
    stages: list[dict[str, Any]] = []
    moves = []  # (pp_rank, d_mamba, d_kv, d_idle)
    for sb, sc in zip(base.stages, cand.stages, strict=True):  # one request: the same stages
        vb, vc = _stage_values(sb), _stage_values(sc)
        fields = {f: _delta(vb[f], vc[f]) for f in STAGE_FIELDS}
        stages.append({"pp_rank": sb.pp_rank, "fields": fields})
        if base.feasible and cand.feasible:
            moves.append((sb.pp_rank, vc["mamba_pool_bytes"] - vb["mamba_pool_bytes"], vc["kv_pool_bytes"] - vb["kv_pool_bytes"], vc["idle_bytes"] - vb["idle_bytes"]))

    changed = any(d["delta"] not in (0, None) for d in deltas.values()) or any(
        d["delta"] not in (0, None) for s in stages for d in s["fields"].values()
    )
    flip = base.feasible != cand.feasible
    headline_moved = [
        f for f in HEADLINE
        if deltas[f]["delta"] is not None and deltas[f]["delta"] != 0
        and (deltas[f]["relative"] is None or abs(deltas[f]["relative"]) >= MATERIAL_RELATIVE)
    ]
    pool_moved = [m for m in moves if max(abs(m[1]), abs(m[2]), abs(m[3])) >= MATERIAL_BYTES]
    material = flip or bool(headline_moved) or bool(pool_moved)

    warnings: list[str] = []
    pin = None
    if material:
        pin = _pin(request, base) if base.feasible else None
        warnings.append(_warning(base, cand, headline_moved, pool_moved, pin))
    return {
        "reference": REFERENCE,
        "baseline_accounting": BASELINE,
        "accounting": CANDIDATE,
        "baseline": base,
        "plan": cand,
        "deltas": deltas,
        "stages": stages,
        "changed": changed,
        "material": material,
        "warnings": warnings,
        "pin": pin,
    }


def _pin(request: PlanRequest, base: Plan) -> dict | None:
    pins: dict[str, int] = {}
    for field in ("max_mamba_cache_size", "max_total_num_tokens"):
        value = getattr(base, field)
        if value is not None:
            pins[PIN_ARGS[field]] = value
    if not pins:
        return None

    def pinned(p: dict) -> Plan:
        args = request.server_args.model_copy(update=p)
        return plan(request.model_copy(update={"server_args": args, "accounting": CANDIDATE}))

    trial = pinned(pins)
    if trial.max_running_requests != base.max_running_requests and base.max_running_requests is not None:
        pins["max_running_requests"] = base.max_running_requests
        trial = pinned(pins)
    reproduces = trial.feasible and _headline(trial) == _headline(base) and _pools(trial) == _pools(base)
    flags: list[str] = []
    for field, flag in PIN_FLAGS.items():
        arg = PIN_ARGS[field]
        if arg in pins:
            flags += [flag, str(pins[arg])]
    return {"sglang_args": flags, "server_args": pins, "reproduces_whole_model": reproduces}


def _warning(base: Plan, cand: Plan, headline_moved: list, pool_moved: list, pin: dict | None) -> str:
    parts = []
    # error is set exactly when a plan is infeasible (the solver's invariant)
    if base.feasible and cand.error is not None:
        parts.append(f"SGLang 0.5.23 would refuse to start what the whole-model accounting started: {cand.error.message}")
    elif cand.feasible and base.error is not None:
        parts.append(f"SGLang 0.5.23 starts where the whole-model accounting refused ({base.error.message})")
    else:
        parts.append(
            "SGLang 0.5.23 charges each pipeline stage only the largest stage's share of the mamba state "
            "(the whole-model accounting charged every stage for all mamba layers), so at an unchanged "
            "--mem-fraction-static the sizing changes"
        )
    figures = [
        f"{f} {getattr(base, f)} -> {getattr(cand, f)}"
        for f in (headline_moved or [f for f in HEADLINE if getattr(base, f) != getattr(cand, f)])
    ]
    if figures:
        parts.append(", ".join(figures))
    if pool_moved:
        worst = max(pool_moved, key=lambda m: max(abs(m[1]), abs(m[2]), abs(m[3])))
        rank, dm, dk, di = worst
        where = f"pp_rank {rank}" if len(cand.stages) > 1 else "each GPU"
        text = f"on {where}: mamba pool {_gib(dm)}, KV pool {_gib(dk)}, budgeted but unallocated {_gib(di)}"
        if di < 0 and abs(di) >= MATERIAL_BYTES:
            text += " (memory the old accounting left unallocated is now allocated: less headroom outside the pools)"
        parts.append(text)
    if pin is not None:
        how = " ".join(pin["sglang_args"])
        ok = "" if pin["reproduces_whole_model"] else " (this pins the headline figures; the pools still differ)"
        parts.append(f"to keep the old sizing, pin {how}{ok}")
    return "; ".join(parts) + "."


__all__ = ["CompareRequest", "CompareResponse", "compare"]
