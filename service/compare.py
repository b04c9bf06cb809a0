"""One request under two accountings or two SGLang releases, with the deltas (`POST
/v1/plan/compare`; the route is service/api/compare.py, the work runs in the heavy-work pool).

Two modes, one answer shape:

* accounting mode (no `baseline_sglang_version`, the seed's question, wire format unchanged):
  the request under the counterfactual `whole-model` accounting against `sglang-0.5.23`'s.
* release mode (`from_version` given, with `to_version`; the older spelling
  `baseline_sglang_version` / `sglang_version` is the same contract): the request planned
  under `from_version` against the request under `to_version`, both with the release's own
  (sglang) accounting; `baseline_accounting` / `accounting` read e.g. "sglang-0.5.16" /
  "sglang-0.5.23", and `upgrade` says whether `to_version` still starts it, the capacity and
  the per-stage slack at both releases (service/upgrade.py).

Every FieldDelta carries `baseline` / `candidate`; the accounting mode also keeps the old
`whole-model` / `sglang-0.5.23` keys (same values), the release mode omits them.

`whole-model` is the accounting before SGLang 0.5.23 (every pipeline stage was charged
for the mamba state of all the model's mamba layers); `sglang-0.5.23` charges each stage
the largest stage's share. Deltas are `sglang-0.5.23` minus `whole-model`.

When the upgrade changes the sizing enough to matter at an unchanged
`--mem-fraction-static` (a headline figure moves by MATERIAL_RELATIVE or more, a pool on
some stage by MATERIAL_BYTES or more, or one side would not start), the answer carries a
warning that says where the memory went, and `pin`: the launch flags that keep the old
sizing (`--mem-fraction-static` and `--mamba-radix-cache-strategy` where the two releases
resolve them differently, then `--max-mamba-cache-size`, `--max-total-tokens`,
`--max-running-requests`), checked by re-planning them under the candidate.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from mambasizer.schemas import Plan, PlanRequest
from mambasizer.schemas.plan import REFERENCE
from mambasizer.schemas.releases import SUPPORTED_RELEASES
from mambasizer.schemas.request import SglangVersion
from mambasizer.service import upgrade
from mambasizer.service.planner import plan
from mambasizer.service.sglang_args import option_for
from mambasizer.service.solver.errors import PlanInputError

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
    "slack_bytes",
)
# How a release-mode warning names each headline figure.
LABELS = {
    "max_mamba_cache_size": "mamba slots (max_mamba_cache_size)",
    "max_total_num_tokens": "KV tokens (max_total_num_tokens)",
    "max_running_requests": "max_running_requests",
}
# The flag that pins each headline figure, in SGLang 0.5.23's spelling.
PIN_FLAGS = {
    "max_mamba_cache_size": "--max-mamba-cache-size",
    "max_total_num_tokens": "--max-total-tokens",
    "max_running_requests": "--max-running-requests",
}
PIN_ARGS = {"max_mamba_cache_size": "max_mamba_cache_size", "max_total_num_tokens": "max_total_tokens", "max_running_requests": "max_running_requests"}
# Resolved settings a release may choose differently at the same flags (0.5.14 resolves `auto`
# to extra_buffer; 0.5.15 lowers Qwen3-Next's mem_fraction_static): pinned first, as the
# baseline resolved them, in the candidate release's spelling of the flag.
# An explicit no_buffer needs --disable-overlap-schedule, which older releases set themselves.
RESOLVED_PINS = ("mem_fraction_static", "mamba_radix_cache_strategy", "disable_overlap_schedule")

Number = int | float
RELEASE_FIELDS = ("from_version", "to_version", "baseline_sglang_version")


class CompareRequest(PlanRequest):
    """A PlanRequest (or one with `sglang_args`); `accounting` is ignored, both sides are computed."""

    sglang_args: list[str] | None = Field(
        None,
        description="SGLang launch arguments in place of `server_args`, as for POST /v1/plan (parsed as the "
        "request's `sglang_version` parses them; the baseline release is planned with the same resolved "
        "server_args).",
    )
    from_version: SglangVersion | None = Field(
        None,
        description="Release mode: the SGLang release the deployment runs (the baseline, planned with its own "
        "accounting), compared with `to_version` at the same flags: what the upgrade (or downgrade) changes. "
        "A release that cannot load the model is a 422 naming the field. Absent (and no "
        "`baseline_sglang_version`): accounting mode, the `whole-model` counterfactual against `sglang-0.5.23`.",
    )
    to_version: SglangVersion | None = Field(
        None,
        description="Release mode: the release to upgrade to (the candidate); the same as `sglang_version` "
        "(give one, or both equal). Needs `from_version`. Default: `sglang_version`, else 0.5.23.",
    )
    baseline_sglang_version: SglangVersion | None = Field(
        None,
        description="The older name of `from_version` (kept working; give one, or both equal).",
    )


class FieldDelta(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline: Number | None = Field(description="The baseline's value (whole-model, or the baseline release).")
    candidate: Number | None = Field(description="The candidate's value (sglang-0.5.23, or the request's sglang_version).")
    whole_model: Number | None = Field(
        None, alias="whole-model", description="Accounting mode only (absent in release mode): the same value as `baseline`."
    )
    sglang_0_5_23: Number | None = Field(
        None, alias="sglang-0.5.23", description="Accounting mode only (absent in release mode): the same value as `candidate`."
    )
    delta: Number | None = Field(description="candidate minus baseline; null when either is unknown.")
    relative: float | None = Field(description="delta / baseline; null when the baseline is 0 or unknown.")


class CapacityChange(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: int | None = Field(alias="from", description="The figure at from_version.")
    to: int | None = Field(description="The figure at to_version.")
    loss: float | None = Field(description="Share of the from_version figure lost (0 when the upgrade gains); null when either side does not start.")


class SlackChange(BaseModel):
    pp_rank: int
    from_bytes: int | None = Field(description="Free bytes after load minus the pools (mamba, KV, req-to-token) on this stage at from_version; null without a free-memory budget.")
    to_bytes: int | None = Field(description="The same at to_version.")
    loss: float | None = Field(description="Share of the from_version slack lost (0 when it grows).")


class Upgrade(BaseModel):
    """Release mode: whether the new release still starts the deployment, and what it keeps."""

    from_version: str
    to_version: str
    started: bool = Field(description="from_version starts it (the baseline plan is feasible).")
    starts: bool = Field(description="to_version starts it, by the plan's own rules (the candidate plan is feasible).")
    start_error: str | None = Field(description="SGLang's error at to_version when it would not start.")
    capacity: dict[str, CapacityChange] = Field(description="max_running_requests and max_total_num_tokens at both releases.")
    slack: list[SlackChange] = Field(description="Per PP stage: the memory left outside the pools once they are allocated, at both releases.")


class StageDelta(BaseModel):
    pp_rank: int
    fields: dict[str, FieldDelta]


class Pin(BaseModel):
    sglang_args: list[str] = Field(
        description="Flags to add to the candidate's launch command to keep the baseline's sizing, in the candidate "
        "release's spelling: --mem-fraction-static and --mamba-radix-cache-strategy where the releases resolve them "
        "differently, then --max-mamba-cache-size, --max-total-tokens, --max-running-requests."
    )
    server_args: dict[str, bool | int | float | str] = Field(description="The same pins as server_args fields.")
    reproduces_baseline: bool = Field(
        description="Planning with these pins under the candidate (sglang-0.5.23's accounting, or the request's "
        "sglang_version in release mode) gives the baseline's headline figures and pools."
    )
    reproduces_whole_model: bool | None = Field(
        None, description="Accounting mode only (absent in release mode): the same value as `reproduces_baseline`."
    )


class CompareResponse(BaseModel):
    reference: str = REFERENCE
    baseline_accounting: str = Field(
        BASELINE, description='"whole-model" in accounting mode; "sglang-<baseline_sglang_version>" in release mode.'
    )
    accounting: str = Field(CANDIDATE, description='"sglang-0.5.23" in accounting mode; "sglang-<sglang_version>" in release mode.')
    baseline: Plan = Field(description="The baseline plan: the whole-model accounting, or the request under baseline_sglang_version.")
    plan: Plan = Field(description="The candidate plan: SGLang 0.5.23's accounting, or the request under its sglang_version.")
    deltas: dict[str, FieldDelta]
    stages: list[StageDelta]
    changed: bool
    material: bool = Field(description="The upgrade changes the sizing enough to matter at an unchanged --mem-fraction-static.")
    warnings: list[str]
    pin: Pin | None
    upgrade: Upgrade | None = Field(None, description="Release mode only: starts, capacity and per-stage slack at both releases.")
    ignored_sglang_args: list[str] | None = None
    sglang_args_warnings: list[str] | None = None


class _Sides(NamedTuple):
    """The two sides' names and how the candidate is planned."""

    baseline: str  # baseline_accounting in the answer
    candidate: str  # accounting in the answer
    release_mode: bool
    candidate_update: dict  # applied to the request to plan the candidate (and its pins)


def _delta(a: Any, b: Any, sides: _Sides) -> dict:
    if isinstance(a, bool) or isinstance(b, bool):
        a, b = (None if a is None else int(a)), (None if b is None else int(b))
    d = None if a is None or b is None else b - a
    rel = None if d is None or not a else d / a
    out = {"baseline": a, "candidate": b}
    if not sides.release_mode:  # the keys accounting-mode clients already read
        out.update({BASELINE: a, CANDIDATE: b})
    return {**out, "delta": d, "relative": rel}


def _stage_values(st, slack: int | None) -> dict:
    v = {f: getattr(st, f) for f in STAGE_FIELDS if f not in ("mamba_pool_bytes", "slack_bytes")}
    v["mamba_pool_bytes"] = st.conv_state_bytes + st.ssm_state_bytes + st.intermediate_state_bytes + st.replayssm_ring_bytes
    v["slack_bytes"] = slack
    return v


def _gib(n: int) -> str:
    return f"{n / GIB:+.2f} GiB"


def _headline(p: Plan) -> tuple:
    return tuple(getattr(p, f) for f in HEADLINE)


def _pools(p: Plan) -> list[tuple[int, int]]:
    return [(v["mamba_pool_bytes"], v["kv_pool_bytes"]) for v in (_stage_values(st, None) for st in p.stages)]


def _as_field(field: str, call, *args) -> Plan:
    """`call(*args)`, with a release refusal (field sglang_version) renamed to `field`: the
    name the client gave the release under."""
    try:
        return call(*args)
    except PlanInputError as exc:
        if exc.field != "sglang_version" or field == "sglang_version":
            raise
        message = exc.message.replace("choose a later sglang_version", f"choose a later {field}")
        raise PlanInputError(field, message, exc.allowed) from None


def _plan_baseline_release(request: PlanRequest, version: str, field: str = "baseline_sglang_version") -> Plan:
    """The request under `version`: a release that cannot load the model (or size the path)
    is refused under `field`, naming the release (the planner's own check)."""
    return _as_field(field, plan, request.model_copy(update={"sglang_version": version, "accounting": CANDIDATE}))


def _release(field: str, value: Any) -> str:
    if not isinstance(value, str) or value not in SUPPORTED_RELEASES:
        raise PlanInputError(
            field, f"{value!r} is not a supported SGLang release; give one of {', '.join(SUPPORTED_RELEASES)}", SUPPORTED_RELEASES,
        )
    return value


class Releases(NamedTuple):
    """Release mode's two releases, and the names the body gave them under (for the 422s)."""

    baseline: str | None
    baseline_field: str = "baseline_sglang_version"
    candidate_field: str = "sglang_version"


def compare_releases(raw: dict) -> Releases:
    """Take `from_version` / `to_version` / `baseline_sglang_version` off a decoded body (they
    are CompareRequest's, not PlanRequest's); `to_version` becomes the body's `sglang_version`.
    A bad or contradictory release is a 422 naming the field."""
    given = {f: raw.pop(f) for f in RELEASE_FIELDS if raw.get(f) is not None}
    for f in RELEASE_FIELDS:
        raw.pop(f, None)
    for field, value in given.items():
        _release(field, value)
    old = given.get("from_version", given.get("baseline_sglang_version"))
    if "from_version" in given and "baseline_sglang_version" in given and given["from_version"] != given["baseline_sglang_version"]:
        raise PlanInputError("from_version", f"{given['from_version']!r} differs from baseline_sglang_version "
                             f"{given['baseline_sglang_version']!r}, its older name: give one")
    candidate_field = "sglang_version"
    if "to_version" in given:
        if old is None:
            raise PlanInputError("to_version", "needs from_version, the release the deployment runs now")
        current = raw.get("sglang_version")
        if current is not None and current != given["to_version"]:
            raise PlanInputError("to_version", f"{given['to_version']!r} differs from sglang_version {current!r}: give one")
        raw["sglang_version"] = given["to_version"]
        candidate_field = "to_version"
    baseline_field = "from_version" if "from_version" in given else "baseline_sglang_version"
    return Releases(old, baseline_field, candidate_field)


def compare_baseline_release(value: Any) -> str | None:
    """`baseline_sglang_version` from a decoded body: None, or a supported release (else a 422
    naming the field and listing the releases)."""
    return None if value is None else _release("baseline_sglang_version", value)


def compare(request: PlanRequest, baseline_sglang_version: str | None = None, releases: Releases | None = None) -> dict:
    """Accounting mode when no baseline release is given, else release mode (the module
    docstring). Raises PlanInputError for input that cannot be sized."""
    if releases is None:
        releases = Releases(baseline_sglang_version)
    baseline_sglang_version = releases.baseline
    if baseline_sglang_version is None:
        sides = _Sides(BASELINE, CANDIDATE, False, {"accounting": CANDIDATE})
        base = plan(request.model_copy(update={"accounting": BASELINE}))
    else:
        sides = _Sides(f"sglang-{baseline_sglang_version}", f"sglang-{request.sglang_version}", True, {"accounting": CANDIDATE})
        base = _plan_baseline_release(request, baseline_sglang_version, releases.baseline_field)
    cand = _as_field(releases.candidate_field, plan, request.model_copy(update=sides.candidate_update))
    base_json, cand_json = base.model_dump(mode="json"), cand.model_dump(mode="json")
    base_slack, cand_slack = upgrade.stage_slack_bytes(base_json), upgrade.stage_slack_bytes(cand_json)
    deltas = {f: _delta(getattr(base, f), getattr(cand, f), sides) for f in TOP_FIELDS}
    deltas["feasible"] = _delta(base.feasible, cand.feasible, sides)
    stages: list[dict[str, Any]] = []
    moves = []  # (pp_rank, d_mamba, d_kv, d_idle)
    for sb, sc, slb, slc in zip(base.stages, cand.stages, base_slack, cand_slack, strict=True):  # one request: the same stages
        vb, vc = _stage_values(sb, slb), _stage_values(sc, slc)
        fields = {f: _delta(vb[f], vc[f], sides) for f in STAGE_FIELDS}
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
        pin = _pin(request, base, cand, sides) if base.feasible else None
        short = pin.pop("_short") if pin is not None else []
        warnings.append(_warning(base, cand, headline_moved, pool_moved, pin, sides, short))
    return {
        "reference": REFERENCE,
        "baseline_accounting": sides.baseline,
        "accounting": sides.candidate,
        "baseline": base,
        "plan": cand,
        "deltas": deltas,
        "stages": stages,
        "changed": changed,
        "material": material,
        "warnings": warnings,
        "pin": pin,
        "upgrade": upgrade.summary(base_json, cand_json, baseline_sglang_version, request.sglang_version)
        if baseline_sglang_version is not None else None,
    }


def _pin(request: PlanRequest, base: Plan, cand: Plan, sides: _Sides) -> dict | None:
    pins: dict[str, Any] = {}
    for field in RESOLVED_PINS:  # what the candidate resolves differently at the same flags
        old, new = getattr(base.resolved, field), getattr(cand.resolved, field)
        if old is not None and new is not None and old != new and old is not False:  # a switch pins only on
            pins[field] = old
    if pins.get("mamba_radix_cache_strategy") == "no_buffer" and not request.server_args.disable_overlap_schedule:
        pins["disable_overlap_schedule"] = True  # an explicit no_buffer asserts it (0.5.14 on); no sizing effect
    for field in ("max_mamba_cache_size", "max_total_num_tokens"):
        value = getattr(base, field)
        if value is not None:
            pins[PIN_ARGS[field]] = value
    if not any(PIN_ARGS[f] in pins for f in ("max_mamba_cache_size", "max_total_num_tokens")):
        return None

    def pinned(p: dict) -> Plan:
        args = request.server_args.model_copy(update=p)
        return plan(request.model_copy(update={**sides.candidate_update, "server_args": args}))

    trial = pinned(pins)
    if trial.max_running_requests != base.max_running_requests and base.max_running_requests is not None:
        pins["max_running_requests"] = base.max_running_requests
        trial = pinned(pins)
    reproduces = trial.feasible and _headline(trial) == _headline(base) and _pools(trial) == _pools(base)
    flags: list[str] = []
    for field in RESOLVED_PINS:
        if field in pins:
            option = option_for(field, request.sglang_version)
            flags += [option] if pins[field] is True else [option, str(pins[field])]
    for field, flag in PIN_FLAGS.items():
        arg = PIN_ARGS[field]
        if arg in pins:
            flags += [flag, str(pins[arg])]
    out: dict[str, Any] = {"sglang_args": flags, "server_args": pins, "reproduces_baseline": reproduces}
    if not sides.release_mode:
        out["reproduces_whole_model"] = reproduces
    # What the pinned re-plan still gives differently (the warning says it; not part of Pin).
    if not trial.feasible and trial.error is not None:
        out["_short"] = [f"a plan that would not start ({trial.error.message})"]
    else:
        out["_short"] = [f"{f} {getattr(trial, f)} (not {getattr(base, f)})" for f in HEADLINE if getattr(trial, f) != getattr(base, f)]
    return out


def _changed(base: Plan, cand: Plan) -> list[str]:
    return [f for f in HEADLINE if getattr(base, f) != getattr(cand, f)]


def _names(sides: _Sides) -> tuple[str, str]:
    """How the warning names the two sides."""
    if sides.release_mode:
        return sides.baseline.replace("sglang-", "SGLang "), sides.candidate.replace("sglang-", "SGLang ")
    return "the whole-model accounting", "SGLang 0.5.23"


def _warning(base: Plan, cand: Plan, headline_moved: list, pool_moved: list, pin: dict | None, sides: _Sides, short: list[str]) -> str:
    old, new = _names(sides)
    parts = []
    # error is set exactly when a plan is infeasible (the solver's invariant)
    if base.feasible and cand.error is not None:
        parts.append(f"{new} would refuse to start what {old} started: {cand.error.message}")
    elif cand.feasible and base.error is not None:
        parts.append(f"{new} starts where {old} refused ({base.error.message})")
    elif sides.release_mode:
        parts.append(f"upgrading from {old} to {new} at an unchanged --mem-fraction-static changes the sizing")
    else:
        parts.append(
            "SGLang 0.5.23 charges each pipeline stage only the largest stage's share of the mamba state "
            "(the whole-model accounting charged every stage for all mamba layers), so at an unchanged "
            "--mem-fraction-static the sizing changes"
        )
    figures = [
        f"{LABELS[f] if sides.release_mode else f} {getattr(base, f)} -> {getattr(cand, f)}"
        for f in (_changed(base, cand) if sides.release_mode else headline_moved or _changed(base, cand))
    ]
    if figures:
        parts.append(", ".join(figures))
    if pool_moved:
        worst = max(pool_moved, key=lambda m: max(abs(m[1]), abs(m[2]), abs(m[3])))
        rank, dm, dk, di = worst
        where = f"pp_rank {rank}" if len(cand.stages) > 1 else "each GPU"
        text = f"on {where}: mamba pool {_gib(dm)}, KV pool {_gib(dk)}, budgeted but unallocated {_gib(di)}"
        if di < 0 and abs(di) >= MATERIAL_BYTES:
            text += (
                f" (memory {old} left unallocated is now allocated: less headroom outside the pools)"
                if sides.release_mode
                else " (memory the old accounting left unallocated is now allocated: less headroom outside the pools)"
            )
        parts.append(text)
    if pin is not None:
        how = " ".join(pin["sglang_args"])
        target = f"{old}'s sizing on {new}" if sides.release_mode else "the old sizing"
        if pin["reproduces_baseline"] or not short:
            ok = "" if pin["reproduces_baseline"] else " (this pins the headline figures; the pools still differ)"
            parts.append(f"to keep {target}, pin {how}{ok}")
        else:  # the pins are checked by re-planning: say what they cannot hold
            parts.append(f"pinning {how} does not keep {target}: re-planned with these pins it still gives {', '.join(short)}")
    return "; ".join(parts) + "."


__all__ = ["CompareRequest", "CompareResponse", "Releases", "compare", "compare_baseline_release", "compare_releases"]
