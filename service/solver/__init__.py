"""The pure sizing solver: no web framework, no torch. `plan(request) -> Plan`."""

from service.solver.errors import PlanInputError, SGLangStartupError
from service.solver.plan import parse_request, plan

__all__ = ["PlanInputError", "SGLangStartupError", "parse_request", "plan"]
