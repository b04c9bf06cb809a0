"""A disaggregated deployment's two start-up logs, each checked with its role's plan.

    result = check_pair({"prefill": {"text": ..., "sglang_version": None, ...}, "decode": {...}})
    result.data   # {"prefill": <check-log answer>, "decode": <check-log answer>, "pair": PairSummary | None, "notes"}

Each side is mambasizer.service.startlog.compare.check_log with `role` set: a log whose
server_args give no role is planned as its side's; one that names the other role (or
aggregated serving) is refused, naming the side. The pair's summary is the one POST /v1/plan
answers for a pair (mambasizer.service.disaggregated.summarize), from the two plans compared
with, one replica each.
"""

from __future__ import annotations

from typing import Any

from mambasizer.service.startlog.compare import ROLES, CheckResult, check_log


class SideError(ValueError):
    """One side's log or inputs cannot be used: `field` names it inside the pair (`decode.log`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def check_pair(sides: dict[str, dict[str, Any]]) -> CheckResult:
    """Both sides compared; SideError for a side's unreadable log, wrong role or bad input."""
    from mambasizer.service.disaggregated import summarize
    from mambasizer.service.solver import PlanInputError
    from mambasizer.service.startlog.compare import RoleMismatch
    from mambasizer.service.startlog.parse import BootLogError

    results: dict[str, CheckResult] = {}
    for role in ROLES:
        side = sides[role]
        try:
            results[role] = check_log(
                side["text"], side.get("hf_config"), side.get("sglang_args"), side.get("gpu"), side.get("sglang_version"), role=role
            )
        except (BootLogError, RoleMismatch) as exc:
            raise SideError(f"{role}.log", str(exc)) from None
        except PlanInputError as exc:
            raise SideError(f"{role}.{exc.field}", exc.message) from None
    notes: list[str] = []
    releases = {role: r.data["release"]["sglang_version"] for role, r in results.items()}
    if releases["prefill"] != releases["decode"]:
        notes.append(f"the sides are compared with different releases (prefill {releases['prefill']}, decode {releases['decode']})")
    plans = {role: r.plan for role, r in results.items()}
    pair = None
    if all(p is not None for p in plans.values()):
        if plans["prefill"].model_name != plans["decode"].model_name:
            notes.append(
                f"the two logs size different models (prefill {plans['prefill'].model_name}, decode "
                f"{plans['decode'].model_name}): a disaggregated pair serves one checkpoint"
            )
        pair = summarize(plans, {"prefill": 1, "decode": 1}).model_dump(mode="json")
    else:
        missing = [role for role, p in plans.items() if p is None]
        notes.append(f"no pair summary: the {' and '.join(missing)} side has no plan")
    data = {"prefill": results["prefill"].data, "decode": results["decode"].data, "pair": pair, "notes": notes}
    return CheckResult(
        data=data,
        all_match=all(r.all_match for r in results.values()),
        notes=[f"{role}: {n}" for role, r in results.items() for n in r.notes],
    )
