"""The pure sizing solver: no web framework, no torch. `plan(request) -> Plan`.

Its value types (Launch, ModelLayout, StageRange, StateSpec, TensorSpec, ...) are immutable
NamedTuples rather than frozen dataclasses: every plan builds dozens of them, and a frozen
dataclass's __init__ (one object.__setattr__ per field) cost several times more.
"""

from service.solver.errors import PlanInputError, SGLangStartupError
from service.solver.plan import parse_request, plan

__all__ = ["PlanInputError", "SGLangStartupError", "parse_request", "plan"]
