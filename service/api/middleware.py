"""One pure-ASGI middleware for the whole request path: body limit, metrics, access log.

* Body limit: a declared Content-Length over the limit is refused (413) before any of
  the body is read; a streamed (chunked) body is counted as it is read and refused the
  moment it passes the limit (BodyTooLarge, answered 413 by mambasizer.service.api.problems).
  `large_bodies` gives a path its own limit for a body that is not JSON (check-log's
  text/plain log, which its route reads as a stream, keeping only the start-up lines).
* Metrics: `mambasizer_http_requests_total` / `_duration_seconds` by route template.
* Access log: one JSON line per request on `mambasizer.access` (method, route, path,
  status, duration_ms).
* `X-Content-Type-Options: nosniff` on every answer (JSON, problems, text, the explorer's
  files): a browser never guesses another type than the one declared.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mambasizer.service.api.metrics import METHODS, UNMATCHED, Metrics
from mambasizer.service.api.problems import BodyTooLarge

access_log = logging.getLogger("mambasizer.access")


def _route_of(scope: Scope) -> str:
    path = getattr(scope.get("route"), "path", None)
    # The template as the OpenAPI document names it: `{name:path}` (a repo id has a slash) is `{name}`.
    return path.replace(":path}", "}") if isinstance(path, str) else UNMATCHED


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics, max_body_bytes: int, large_bodies: dict[str, int] | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body = max_body_bytes
        self.large_bodies = large_bodies or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 0  # 0 until the response starts
        limit = self.max_body

        declared = None
        media = b""
        for key, value in scope["headers"]:
            if key == b"content-length" and declared is None:
                try:
                    declared = int(value)
                except ValueError:
                    declared = None
            elif key == b"content-type" and not media:
                media = value.split(b";")[0].strip().lower()
        if scope.get("path") in self.large_bodies and not (media == b"application/json" or media.endswith(b"+json")):
            limit = self.large_bodies[scope["path"]]

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"x-content-type-options"]
                message = {**message, "headers": [*headers, (b"x-content-type-options", b"nosniff")]}
            await send(message)

        received = 0

        async def receive_limited() -> Message:
            # Refuse a declared oversize body before reading any of it, and a streamed
            # one as soon as it passes the limit; routes that read no body never trip it.
            nonlocal received
            if declared is not None and declared > limit:
                raise BodyTooLarge(limit)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        try:
            await self.app(scope, receive_limited, send_wrapper)
        except BaseException:
            if status == 0:  # the server answers 500 (or the client went away)
                status = 500
            raise
        finally:
            elapsed = time.perf_counter() - start
            method = scope["method"] if scope["method"] in METHODS else "other"
            route = _route_of(scope)
            self.metrics.observe(route, method, status, elapsed)
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(
                    "request",
                    extra={
                        "fields": {
                            "method": scope["method"][:16],
                            "route": route,
                            "path": scope.get("path", "")[:512],
                            "status": status,
                            "duration_ms": round(elapsed * 1000.0, 3),
                        }
                    },
                )


class CheckpointPolicyMiddleware:
    """Every request resolves model paths under the server's checkpoint ReadPolicy (its model
    roots and Hub setting, `app.state.checkpoint_policy`, which the work pool's jobs get too),
    whichever route prepares it (service/checkpoints/policy.py)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        from mambasizer.service.checkpoints.policy import policy_scope

        app = scope.get("app")
        with policy_scope(getattr(getattr(app, "state", None), "checkpoint_policy", None)):
            await self.app(scope, receive, send)
