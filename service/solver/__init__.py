"""The pure sizing solver: no web framework, no torch, no preset names.
`solve(request, layout) -> Plan`; `mambasizer.service.planner.plan(request)` resolves the model first.

Its value types (Launch, ModelLayout, StageRange, StateSpec, TensorSpec, ...) are immutable
NamedTuples rather than frozen dataclasses: every plan builds dozens of them, and a frozen
dataclass's __init__ (one object.__setattr__ per field) cost several times more.
"""

from mambasizer.service.solver.errors import PlanInputError, SGLangStartupError
from mambasizer.service.solver.plan import parse_request
from mambasizer.service.solver.solve import solve

__all__ = ["PlanInputError", "SGLangStartupError", "parse_request", "solve"]
