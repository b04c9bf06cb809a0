"""The standalone trial worker: a small HTTP app for a GPU node (`mambasizer worker`).

* `POST /v1/trial` `{"request": PlanRequest, "trial": TrialOptions}` -> TrialResult (200 for
  every trial outcome: ok, oom, rejected, unavailable on a timeout);
  400 for two `Authorization` headers, 401 without the bearer token when one is
  configured, 413 for a body over 4 MiB (refused while it streams in), 422 for input that
  cannot be sized, 429 when the device's queue is full, 503 when torch is missing; errors
  are `application/problem+json` (RFC 9457). A caller that disconnects cancels its trial.
* `GET /livez`: the process answers. `GET /readyz`: torch imports and the device is known.

A trial occupies a GPU: with `MAMBASIZER_WORKER_TOKEN` (or `--token-file`) set, `/v1/trial`
requires `Authorization: Bearer <token>`. The probes stay open for the kubelet.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic import ValidationError

from mambasizer.schemas.trial import TrialCall
from mambasizer.service.client_watch import run_watched
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.worker.runner import QueueFull, RunnerConfig, TorchMissing, TrialRunner

log = logging.getLogger("mambasizer.worker")

TOKEN_ENV = "MAMBASIZER_WORKER_TOKEN"
PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:mambasizer:problem:"
MAX_BODY_BYTES = 4 << 20  # a PlanRequest with an inline config.json fits easily
RETRY_AFTER_S = 5

_TITLES = {400: "Bad Request", 401: "Unauthorized", 413: "Content Too Large", 422: "Unprocessable Content", 429: "Too Many Requests", 503: "Service Unavailable"}


def problem(status: int, detail: str, *, type_: str = "about:blank", instance: str | None = None,
            headers: dict | None = None, **extra: Any) -> Response:
    body: dict[str, Any] = {"type": type_, "title": _TITLES.get(status, "Error"), "status": status, "detail": detail}
    if instance is not None:
        body["instance"] = instance
    body.update({k: v for k, v in extra.items() if v is not None})
    return Response(json.dumps(body, separators=(",", ":")).encode(), status_code=status, media_type=PROBLEM_JSON, headers=headers)


def read_token(token_file: str | None = None) -> str | None:
    """The configured bearer token: `--token-file` wins over MAMBASIZER_WORKER_TOKEN; empty
    means none."""
    if token_file:
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
        if not token:
            raise ValueError(f"token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


async def _read_limited(request: Request) -> bytes | None:
    """The body, or None as soon as it passes MAX_BODY_BYTES (declared or streamed): an
    oversize body is refused while it comes in, never buffered whole."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


def create_app(runner: TrialRunner | None = None, token: str | None = None, *, token_from_env: bool = True) -> FastAPI:
    """`token`: required bearer token (None: MAMBASIZER_WORKER_TOKEN when token_from_env)."""
    if token is None and token_from_env:
        token = read_token()
    runner = runner or TrialRunner(RunnerConfig())
    expected = f"Bearer {token}".encode() if token else None

    app = FastAPI(title="mambasizer worker", description=__doc__.split("\n\n")[0], docs_url=None, redoc_url=None)
    app.state.runner = runner
    app.state.auth = expected is not None

    @app.get("/livez")
    async def livez() -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    @app.get("/readyz")
    async def readyz(request: Request) -> Response:
        try:
            import torch
        except ImportError:
            return problem(503, "torch is not installed: this worker cannot run trials", instance=request.url.path)
        try:
            device = runner.resolve_device("auto")
        except ValueError as exc:
            return problem(503, str(exc), instance=request.url.path)
        body = {"status": "ready", "device": device, "torch": torch.__version__, "queues": runner.status(), "auth": expected is not None}
        return Response(json.dumps(body, separators=(",", ":")).encode(), media_type="application/json")

    @app.post("/v1/trial")
    async def post_trial(request: Request) -> Response:
        path = request.url.path
        sent = request.headers.getlist("authorization")
        if len(sent) > 1:  # which one would count is ambiguous: refuse rather than pick
            return problem(400, "send exactly one Authorization header", type_=TYPE_PREFIX + "ambiguous-credentials",
                           instance=path, headers={"Connection": "close"})
        if expected is not None:
            if not hmac.compare_digest(sent[0].encode("latin-1") if sent else b"", expected):
                return problem(401, "this worker requires Authorization: Bearer <token>", type_=TYPE_PREFIX + "unauthorized",
                               instance=path, headers={"WWW-Authenticate": 'Bearer realm="mambasizer-worker"', "Connection": "close"})
        raw = await _read_limited(request)
        if raw is None:
            # Connection: close, so the rest of an oversize body is never read.
            return problem(413, f"the body is larger than {MAX_BODY_BYTES} bytes", instance=path, headers={"Connection": "close"})
        try:
            call = TrialCall.model_validate_json(raw)
        except ValidationError as exc:
            errors = [
                {"field": ".".join(str(p) for p in e["loc"]) or "body", "message": e["msg"]}
                for e in exc.errors(include_url=False)[:20]
            ]
            return problem(422, errors[0]["message"] if errors else "invalid body", type_=TYPE_PREFIX + "invalid-input",
                           instance=path, field=errors[0]["field"] if errors else None, errors=errors)
        try:
            gone, result = await run_watched(request, runner.submit(call.request, call.trial))
        except QueueFull as exc:
            return problem(429, str(exc), type_=TYPE_PREFIX + "trial-queue-full", instance=path,
                           headers={"Retry-After": str(RETRY_AFTER_S)})
        except TorchMissing as exc:
            return problem(503, str(exc), instance=path)
        except PlanInputError as exc:
            return problem(422, exc.message, type_=TYPE_PREFIX + "invalid-input", instance=path,
                           field=f"request.{exc.field}", allowed=exc.allowed)
        if gone:  # the caller went away; the trial was cancelled and releases its memory
            return Response(status_code=499)
        return Response(result.model_dump_json().encode(), media_type="application/json")

    return app
