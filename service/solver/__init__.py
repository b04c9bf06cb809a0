"""The pure sizing solver: no web framework, no torch, no preset names.
`solve(request, layout) -> Plan`; `service.planner.plan(request)` resolves the model first.

Its value types (Launch, ModelLayout, StageRange, StateSpec, TensorSpec, ...) are immutable
NamedTuples rather than frozen dataclasses: every plan builds dozens of them, and a frozen
dataclass's __init__ (one object.__setattr__ per field) cost several times more.
"""

from service.solver.errors import PlanInputError, SGLangStartupError
from service.solver.plan import parse_request
from service.solver.solve import solve

__all__ = ["PlanInputError", "SGLangStartupError", "parse_request", "solve"]
