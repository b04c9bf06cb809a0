"""RFC 9457 problem details (`application/problem+json`) for every error the API returns.

Members: `type`, `title`, `status`, `detail`, `instance` (the request path), plus
`field` (the failing field's path, null when no single field is to blame) and `allowed`
(the accepted values, present only when known). Never a stack trace or a file path.
"""

from __future__ import annotations

import json
import logging
import resource
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from mambasizer.service.api.wire import MAX_BODY_BYTES, InvalidRequest, MalformedRequest, bounded
from mambasizer.service.solver import PlanInputError

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:mambasizer:problem:"

INVALID_INPUT = TYPE_PREFIX + "invalid-input"
MALFORMED_JSON = TYPE_PREFIX + "malformed-json"
BODY_TOO_LARGE = TYPE_PREFIX + "body-too-large"
RESOURCE_LIMIT = TYPE_PREFIX + "resource-limit"

log = logging.getLogger("mambasizer.api")

_TITLES = {
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(description="A URI naming the problem class; `about:blank` for plain HTTP errors.")
    title: str
    status: int
    detail: str
    instance: str | None = Field(None, description="The request path.")
    field: str | None = Field(None, description="Path of the failing field, e.g. `server_args.pp_size`.")
    allowed: list[str] | None = Field(None, description="The accepted values, when known.")
    errors: list[dict[str, str]] | None = Field(None, description="Every failing field (schema errors only).")


class BodyTooLarge(Exception):
    """Raised by the body-limit wrapper while a streamed body is being read; `limit` is the
    limit that applied (a route may have its own: check-log's text/plain body)."""

    def __init__(self, limit: int = MAX_BODY_BYTES) -> None:
        super().__init__(limit)
        self.limit = limit


def problem_bytes(
    status: int,
    detail: str,
    *,
    type_: str = "about:blank",
    title: str | None = None,
    instance: str | None = None,
    field: str | None = None,
    allowed: list | None = None,
    errors: list | None = None,
) -> bytes:
    # Every string that can quote client input is bounded here, the one place every problem
    # answer is encoded (wire.bounded: at most MAX_MESSAGE_CHARS, the middle elided).
    body: dict[str, Any] = {
        "type": type_,
        "title": title or _TITLES.get(status, "Error"),
        "status": status,
        "detail": bounded(detail),
    }
    if instance is not None:
        body["instance"] = bounded(instance)
    body["field"] = None if field is None else bounded(field)
    if allowed is not None:
        body["allowed"] = [bounded(str(a)) for a in allowed]
    if errors:
        body["errors"] = [{k: bounded(v) if isinstance(v, str) else v for k, v in e.items()} for e in errors]
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def problem_response(status: int, detail: str, headers: Mapping[str, str] | None = None, **kw: Any) -> Response:
    return Response(problem_bytes(status, detail, **kw), status_code=status, media_type=PROBLEM_JSON, headers=headers)


def input_problem_bytes(exc: PlanInputError, instance: str | None = None) -> bytes:
    """The 422 body for input that cannot be sized (also rendered in the heavy-work processes)."""
    if isinstance(exc, MalformedRequest):
        return problem_bytes(422, exc.message, type_=MALFORMED_JSON, title="Malformed request body", instance=instance, field=exc.field)
    return problem_bytes(
        422,
        exc.message,
        type_=INVALID_INPUT,
        title="The request cannot be sized",
        instance=instance,
        field=exc.field,
        allowed=exc.allowed,
        errors=exc.errors if isinstance(exc, InvalidRequest) else None,
    )


def input_problem(exc: PlanInputError, instance: str | None = None) -> Response:
    return Response(input_problem_bytes(exc, instance), status_code=422, media_type=PROBLEM_JSON)


def too_large_bytes(instance: str | None = None, limit: int = MAX_BODY_BYTES) -> bytes:
    return problem_bytes(
        413,
        f"request bodies are limited to {limit} bytes ({limit >> 20} MiB) here",
        type_=BODY_TOO_LARGE,
        instance=instance,
    )


# --------------------------------------------------------------------------- handlers


async def _plan_input_error(request: Request, exc: PlanInputError) -> Response:
    return input_problem(exc, request.url.path)


async def _request_validation(request: Request, exc: RequestValidationError) -> Response:
    errs = exc.errors()
    first = errs[0] if errs else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "path", "query")]
    return problem_response(
        422,
        str(first.get("msg", "invalid request")),
        type_=INVALID_INPUT,
        title="The request cannot be sized",
        instance=request.url.path,
        field=".".join(loc) or "request",
    )


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def _allowed_methods(request: Request) -> str | None:
    """Every method some route answers on this path: Starlette's 405 names only the first
    matching route's (a path with a GET and a HEAD route would read `Allow: HEAD`). Asked
    through each route's own `matches`, per method, so included routers count too."""
    from starlette.routing import Match

    routes = getattr(request.app, "routes", ())
    methods = [
        m for m in _METHODS
        if any(route.matches({**request.scope, "method": m})[0] == Match.FULL for route in routes)
    ]
    return ", ".join(methods) or None


async def _http_exception(request: Request, exc: StarletteHTTPException) -> Response:
    status = exc.status_code
    if status == 404:
        detail = f"no route {request.url.path}" if exc.detail in (None, "Not Found") else str(exc.detail)
    elif status == 405:
        allow_all = _allowed_methods(request)
        if allow_all:
            exc.headers = {**(exc.headers or {}), "Allow": allow_all}
        allow = (exc.headers or {}).get("Allow", "")
        detail = f"{request.method} is not allowed on {request.url.path}" + (f"; allowed: {allow}" if allow else "")
    else:
        detail = str(exc.detail) if exc.detail else _TITLES.get(status, "Error")
    allowed = None
    if status == 405 and exc.headers and exc.headers.get("Allow"):
        allowed = [m.strip() for m in exc.headers["Allow"].split(",") if m.strip()]
    return problem_response(status, detail, headers=exc.headers, instance=request.url.path, allowed=allowed)


async def _body_too_large(request: Request, exc: BodyTooLarge) -> Response:
    return Response(too_large_bytes(request.url.path, exc.limit), status_code=413, media_type=PROBLEM_JSON, headers={"Connection": "close"})


async def _internal(request: Request, exc: Exception) -> Response:
    # The traceback goes to the server log only; the client learns nothing internal.
    log.error("internal error on %s %s: %s", request.method, request.url.path, type(exc).__name__, exc_info=exc)
    return problem_response(500, "internal error; it has been logged", instance=request.url.path)


def install(app: FastAPI) -> None:
    # Starlette types every handler as taking a bare Exception; it calls each one only with
    # the class it is registered for, so the narrower parameter types hold.
    app.add_exception_handler(PlanInputError, _plan_input_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _request_validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_exception)  # type: ignore[arg-type]
    app.add_exception_handler(BodyTooLarge, _body_too_large)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal)


def memory_problem(instance: str | None, ceiling_mib: int | None = None) -> bytes:
    """The 503 for a job that ran out of its process's memory ceiling (read from the process's
    own limit when not given: this runs in the worker)."""
    mib = _memory_ceiling_mib() if ceiling_mib is None else ceiling_mib
    return problem_bytes(
        503,
        f"the request needed more memory than one request may use on this server ({mib} MiB); "
        "narrow it (fewer search values or sweep points, fewer stages)",
        type_=RESOURCE_LIMIT, title="Request too large for this server", instance=instance,
    )


def _memory_ceiling_mib() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return -1 if soft == resource.RLIM_INFINITY else soft >> 20


def heavy_docs() -> dict:
    """The answers of a route whose work runs in the heavy-work pool (mambasizer.service.api.workpool)."""
    return {
        429: problem_doc("Every heavy-work process is busy and the queue is full; `Retry-After` says when to retry."),
        503: problem_doc(
            "The work did not finish within the server's deadline (`type` ends in `deadline-exceeded`) or needed more "
            "memory than one request may use (`resource-limit`); it was stopped. Narrow the request."
        ),
    }


def problem_doc(description: str) -> dict:
    """An OpenAPI `responses` entry for a problem+json answer (Problem is added to the
    components by `mambasizer.service.api.openapi`)."""
    return {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }
