"""solve(request, layout) -> Plan: the pipeline's plan (plan.py) with, when SGLang would
refuse it, the computed remedies, and when the mamba slots cap an asked concurrency, the
advice (remedies.py). Its own module so that remedies.py, which re-plans through plan.py,
and plan.py do not import each other.
"""

from __future__ import annotations

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import PlanRequest
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.plan import run
from mambasizer.service.solver.remedies import advice_for_target_concurrency, remedies_for


def solve(req: PlanRequest, layout: ModelLayout) -> Plan:
    """Size one deployment of `layout`. Raises PlanInputError for input that cannot be
    sized; returns a Plan (feasible or not) for everything else."""
    if req.vllm_args is not None:  # engine "vllm"'s fields on an SGLang request
        raise PlanInputError("vllm_args", "applies to engine \"vllm\"; set engine to \"vllm\" or pass SGLang flags in server_args / sglang_args")
    if req.budget.kv_cache_memory_gib is not None:
        raise PlanInputError(
            "budget.kv_cache_memory_gib",
            "is vLLM's measured figure; set engine to \"vllm\", or give SGLang's rest_gib / free_gib_before_load + free_gib_after_load",
        )
    result, launch = run(req, layout)
    if not result.feasible and result.error is not None:
        result = result.model_copy(update={"error": result.error.model_copy(update={"remedies": remedies_for(req, layout, launch, result)})})
    elif result.binding_limit == "mamba_slots" and launch.user_set_max_running_requests:
        result = result.model_copy(update={"advice": advice_for_target_concurrency(req, layout, launch, result)})
    return result
