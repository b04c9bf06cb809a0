"""Run an awaitable while watching the HTTP client: cancel it when the client goes away.

A trial can run for minutes; nobody reads its answer once the client has disconnected,
so it is cancelled (which stops an embedded trial between two allocations and aborts a
call to the remote worker). Used by the API's `POST /v1/plan` and the worker's
`POST /v1/trial`, so it lives beside both packages: the worker imports nothing from the API.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

from starlette.requests import Request

# The API's logger, as before the move: the worker logs this line under it too.
log = logging.getLogger("mambasizer.api")


async def disconnected(request: Request) -> None:
    """Returns when the client has gone away. The body has been read in full by now, so
    the next ASGI message is the disconnect (uvicorn sends it when the socket closes)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def run_watched(request: Request, trial: Awaitable[Any]) -> tuple[bool, Any]:
    """Run `trial` while watching the client; (False, result) when it finished, (True,
    None) when the client went away first and it was cancelled. Call it only after the
    request body has been read."""
    task = asyncio.ensure_future(trial)
    watcher = asyncio.ensure_future(disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task.done():
        return False, task.result()  # the trial's own exception propagates
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception:
        log.exception("failed while being cancelled")
    log.info("cancelled: the client went away", extra={"fields": {"event": "cancelled_on_disconnect", "path": request.url.path[:200]}})
    return True, None


__all__ = ["disconnected", "run_watched"]
