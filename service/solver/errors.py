"""The two ways a question can fail.

* PlanInputError: the request cannot be sized (bad field, unknown preset, a layout SGLang
  would reject before sizing). API: 422 problem+json; CLI: exit 2 with one line.
* SGLangStartupError: the request is well-formed but SGLang 0.5.23 would refuse to start
  (it raises during sizing or resolution). This is an answer, not a failure: the Plan
  comes back with feasible=false, SGLang's own message and computed remedies.
"""

from __future__ import annotations

from collections.abc import Sequence


class PlanInputError(ValueError):
    def __init__(self, field: str, message: str, allowed: Sequence[str] | None = None):
        self.field = field
        self.message = message
        self.allowed = list(allowed) if allowed is not None else None
        super().__init__(f"{field}: {message}")


class SGLangStartupError(Exception):
    """Raised inside the pipeline exactly where SGLang raises; carries SGLang's wording."""

    def __init__(self, kind: str, exception: str, message: str):
        self.kind = kind
        self.exception = exception
        self.message = message
        super().__init__(message)
