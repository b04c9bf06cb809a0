"""solve(request, layout) -> Plan: the pipeline's plan (plan.py) with, when SGLang would
refuse it, the computed remedies, and when the mamba slots cap an asked concurrency, the
advice (remedies.py). Its own module so that remedies.py, which re-plans through plan.py,
and plan.py do not import each other.
"""

from __future__ import annotations

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import PlanRequest
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.plan import run
from mambasizer.service.solver.remedies import advice_for_target_concurrency, remedies_for


def solve(req: PlanRequest, layout: ModelLayout) -> Plan:
    """Size one deployment of `layout`. Raises PlanInputError for input that cannot be
    sized; returns a Plan (feasible or not) for everything else."""
    result, launch = run(req, layout)
    if not result.feasible and result.error is not None:
        result = result.model_copy(update={"error": result.error.model_copy(update={"remedies": remedies_for(req, layout, launch, result)})})
    elif result.binding_limit == "mamba_slots" and launch.user_set_max_running_requests:
        result = result.model_copy(update={"advice": advice_for_target_concurrency(req, layout, launch, result)})
    return result
