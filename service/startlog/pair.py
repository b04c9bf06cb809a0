"""A disaggregated deployment's two start-up logs, each checked with its role's plan.

    result = check_pair({"prefill": {"text": ..., "sglang_version": None, ...}, "decode": {...}})
    result.data   # {"prefill": <check-log answer>, "decode": <check-log answer>, "pair": PairSummary | None, "notes"}

Each side is mambasizer.service.startlog.compare.check_log with `role` set: a log whose
server_args give no role is planned as its side's; one that names the other role (or
aggregated serving) is refused, naming the side, and two logs of different models are
refused as POST /v1/plan refuses such a pair (`decode.model`). The pair's summary is the one POST /v1/plan
answers for a pair (mambasizer.service.disaggregated.summarize), from the two plans compared
with, one replica each.
"""

from __future__ import annotations

from typing import Any

from mambasizer.service.startlog.compare import ROLES, CheckResult, check_log


def _same_model(results: dict[str, CheckResult]) -> None:
    """Both sides size one checkpoint, by the rule POST /v1/plan's pair applies to its two
    requests (mambasizer.service.disaggregated.check_roles: the same field, `decode.model`, and
    the same reason): SideError when the requests rebuilt from the two logs name different
    models. A side with no rebuilt request (its log names no model check-log can size) has no
    model to compare; the pair then has no summary and says why."""
    from mambasizer.schemas.request import PlanRequest
    from mambasizer.service.disaggregated import check_roles
    from mambasizer.service.solver import PlanInputError

    requests = {role: r.request for role, r in results.items()}
    if any(req is None for req in requests.values()):
        return
    try:
        check_roles({role: PlanRequest.model_validate(req) for role, req in requests.items()})
    except PlanInputError as exc:
        raise PairRefused(exc) from None


class SideError(ValueError):
    """One side's log or inputs cannot be used: `field` names it inside the pair (`decode.log`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class PairRefused(SideError):
    """The two sides are no pair, by POST /v1/plan's own rule: `error` is the PlanInputError it
    raises for that pair, rendered as it renders it."""

    def __init__(self, error: Any) -> None:
        super().__init__(error.field, error.message)
        self.error = error


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
    _same_model(results)
    notes: list[str] = []
    releases = {role: r.data["release"]["sglang_version"] for role, r in results.items()}
    if releases["prefill"] != releases["decode"]:
        notes.append(f"the sides are compared with different releases (prefill {releases['prefill']}, decode {releases['decode']})")
    plans = {role: r.plan for role, r in results.items()}
    pair = None
    if all(p is not None for p in plans.values()):
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
