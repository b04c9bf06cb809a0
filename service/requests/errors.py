"""The errors a request can raise before it is planned, and the one line each prints.

Every front (the API's problem+json, `mambasizer plan`, `check`, recommend, sweep) reports a
refusal from these classes, so a field is named the same way wherever the request came in.
"""

from __future__ import annotations

import importlib

from pydantic import ValidationError

from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.plan import input_error_from_validation

MAX_LISTED_ERRORS = 20
# The most of a message an answer carries. Messages quote what the client sent (a model_type,
# a flag, a value); a 1 MB string must not come back in a 422. Past the bound the middle is
# cut, so the start (what is wrong) and the end (the fix) both stay.
MAX_MESSAGE_CHARS = 1000
_ELLIPSIS = " … "


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text`, or its first and last characters around an ellipsis, at most `limit` long."""
    if len(text) <= limit:
        return text
    keep = limit - len(_ELLIPSIS)
    head = keep * 3 // 5
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head):]


class MalformedRequest(PlanInputError):
    """The body is not a JSON object at all (no field to blame beyond `request`)."""


class InvalidRequest(PlanInputError):
    """A PlanRequest that fails validation; `errors` lists every failing field."""

    def __init__(self, field: str, message: str, allowed=None, errors: list[dict] | None = None):
        super().__init__(field, message, allowed)
        self.errors = errors or []


# The solver's own path rule (pydantic's union tags dropped), so `errors` agree with `field`.
_json_path = getattr(importlib.import_module("mambasizer.service.solver.plan"), "_without_union_tags", list)


def _loc(loc: tuple) -> str:
    return ".".join(str(p) for p in _json_path(loc)) or "request"


def validation_error(exc: ValidationError, from_sglang_args: bool = False) -> InvalidRequest:
    """The solver's own mapping for the first error, plus every error listed."""
    first = input_error_from_validation(exc)
    errors = []
    for err in exc.errors(include_url=False)[:MAX_LISTED_ERRORS]:
        msg = err["msg"] if err["type"] != "extra_forbidden" else "unknown field (not part of the PlanRequest contract)"
        errors.append({"field": _loc(err["loc"]), "message": msg})
    message = first.message
    if from_sglang_args and first.field.startswith(("server_args.", "env.")):
        message = f"{message} (the value came from sglang_args)"
    return InvalidRequest(first.field, message, first.allowed, errors)


def input_error_line(exc: PlanInputError) -> str:
    """`<field>: <message> (allowed: ...)`, on one line."""
    text = f"{exc.field}: {exc.message}" if exc.field else str(exc.message)
    if exc.allowed:
        text += f" (allowed: {', '.join(str(a) for a in exc.allowed)})"
    return bounded(" ".join(text.split()), 2 * MAX_MESSAGE_CHARS)
