"""The heavy-work pool: recommend, sweep, compare and large plans run in worker processes,
never on the event loop, each under a deadline and a memory ceiling, behind a bounded queue.

Why processes and not threads: a thread cannot be stopped, shares the server's heap (one
request's 700 MiB of candidate plans took the whole API down) and holds the GIL the event
loop needs for `/livez`. A process can be killed at its deadline or when its client goes
away, has its own address-space ceiling (RLIMIT_AS: a runaway request gets MemoryError in
its own process, not the server's), and runs at a lower CPU priority than the server.

* Admission: at most `workers` jobs run and `queue` more wait; the next one is answered at
  once with 429 problem+json and `Retry-After` (nothing is accepted that cannot be served).
* Fair share: one client (its peer address, or the last value of a header a trusted proxy
  writes, `--heavy-client-header`) has at most `per_client` jobs admitted at once; its next
  is a 429 too, so one client's flood cannot hold every place.
* Deadline: counted from admission (queue wait included), so an answer always comes within
  it; past it the job's process is killed and the answer is 503 `deadline-exceeded`.
* Disconnect: a client that goes away has its job killed the same way.
* A process that dies (its memory ceiling, a crash) is replaced; the request gets 503.
* Processes are recycled every MAX_TASKS jobs, so heap fragmentation cannot accumulate.

The processes are forked from a fork server that preloaded the job code and planned every
preset once (mambasizer.service.api.forkserver_preload), so starting one (at boot, or to replace a
killed one) costs milliseconds, not a second of imports and warm-up.
"""

from __future__ import annotations

import asyncio
import logging
import math
import multiprocessing
import os
import resource
import time
from concurrent.futures import CancelledError
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from pebble import ProcessExpired, ProcessPool
from starlette.responses import Response

from mambasizer.service.api import jobs
from mambasizer.service.api.jobs import CHECKPOINT_POLICY_OPTION
from mambasizer.service.api.parent_watch import die_with_parent
from mambasizer.service.api.pool_settings import PoolSettingError, PoolSettings
from mambasizer.service.api.problems import PROBLEM_JSON, TYPE_PREFIX, memory_problem, problem_bytes
from mambasizer.service.client_watch import disconnected

if TYPE_CHECKING:  # pragma: no cover
    from starlette.requests import Request

    from mambasizer.service.api.metrics import Metrics

log = logging.getLogger("mambasizer.api")

OVERLOADED = TYPE_PREFIX + "overloaded"
DEADLINE_EXCEEDED = TYPE_PREFIX + "deadline-exceeded"

MAX_TASKS = 200
WORKER_NICE = 5  # the event loop (and /livez) first


def _worker_init(memory_mib: int) -> None:
    """Runs in each new worker process: the address-space ceiling, a lower priority, and
    death with the fork server (so with the server: service/api/parent_watch.py)."""
    die_with_parent()
    limit = memory_mib << 20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        os.nice(WORKER_NICE)
    except OSError:  # pragma: no cover - not permitted here; priority is an optimisation
        pass


class Rejected(Exception):
    """The job was not run to completion; `status`, `body` and `headers` are the answer."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None, reason: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.body = body
        self.headers = headers or {}
        self.reason = reason


class ClientGone(Exception):
    """The client disconnected; its job has been killed."""


_CONTEXT: Any = None


def _context() -> Any:
    """The fork-server context, its server preloading the job code (once per interpreter)."""
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["mambasizer.service.api.forkserver_preload"])
        _CONTEXT = ctx
    return _CONTEXT


class HeavyPool:
    """One app's pool. `run()` is called on the event loop; the processes start on first use
    (or `start()`), and `stop()` kills them."""

    def __init__(self, settings: PoolSettings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics
        self._pool: ProcessPool | None = None
        self.admitted = 0  # running + waiting
        self._by_client: dict[str, int] = {}  # admitted per client; a client with none has no entry

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, wait: bool = False) -> None:
        """Create the pool; with `wait`, also fork its processes and wait until one answers
        (blocking: the app's start-up calls it in a thread)."""
        if self._pool is None:
            self._pool = ProcessPool(
                max_workers=self.settings.workers, max_tasks=MAX_TASKS,
                initializer=_worker_init, initargs=(self.settings.memory_mib,), context=_context(),
            )
        if wait:
            self._pool.schedule(jobs.ping).result(timeout=120)

    def stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            pool.join(timeout=5)

    @property
    def running(self) -> int:
        # The pool hands jobs out first come, first served, to any free process.
        return min(self.admitted, self.settings.workers)

    @property
    def waiting(self) -> int:
        return self.admitted - self.running

    # -- one job ---------------------------------------------------------------------------
    async def run(self, request: Request, kind: str, body: bytes, options: dict | None = None) -> jobs.Answer:
        """The job's Answer; Rejected (429 full, 503 deadline / resource) or ClientGone."""
        instance = request.url.path
        s = self.settings
        client = client_of(request, s.client_header)
        full = self.refusal(request, kind, client)
        if full is not None:
            raise full
        self.start()
        assert self._pool is not None
        self.admitted += 1
        self._by_client[client] = self._by_client.get(client, 0) + 1
        self._gauges()
        started = time.monotonic()
        # The server's checkpoint ReadPolicy goes with the job: the pool's processes resolve model
        # paths under the same roots and Hub setting as this one (service/checkpoints/policy.py).
        policy = getattr(request.app.state, "checkpoint_policy", None)
        options = {**(options or {}), CHECKPOINT_POLICY_OPTION: policy} if policy is not None else (options or {})
        try:
            future = self._pool.schedule(jobs.run, args=(kind, body, instance, options), timeout=s.deadline_s)
            try:
                return await self._await(request, kind, future, started)
            finally:
                if not future.done():
                    future.cancel()  # kills the process if it is running the job
        finally:
            self.admitted -= 1
            left = self._by_client.pop(client) - 1
            if left:
                self._by_client[client] = left
            self._gauges()

    def refusal(self, request: Request, kind: str, client: str | None = None) -> Rejected | None:
        """The 429 a job of `kind` gets now (this client's share taken, or every process busy and
        the queue full), or None. A route with a large body asks before reading it (check-log's
        text/plain log)."""
        s = self.settings
        if client is None:
            client = client_of(request, s.client_header)
        if self._by_client.get(client, 0) >= s.per_client:
            self._count("rejected", kind, "client_share")
            retry = max(1, math.ceil(s.deadline_s / 2))
            return Rejected(
                429,
                problem_bytes(
                    429, f"this client already has {s.per_client} heavy requests admitted (the most one client may have "
                    f"at once, so others are served too); retry in {retry} s, or when one of them is answered",
                    type_=OVERLOADED, title="Too many heavy requests from this client", instance=request.url.path,
                ),
                {"Retry-After": str(retry)}, reason="client_share",
            )
        if self.admitted < s.capacity:
            return None
        self._count("rejected", kind, "queue_full")
        retry = max(1, math.ceil(s.deadline_s / 2))
        return Rejected(
            429,
            problem_bytes(
                429, f"the server is running {s.workers} heavy requests and {s.queue} more are waiting; retry in {retry} s",
                type_=OVERLOADED, title="Too many heavy requests", instance=request.url.path,
            ),
            {"Retry-After": str(retry)}, reason="queue_full",
        )

    async def _await(self, request: Request, kind: str, future: Any, started: float) -> jobs.Answer:
        s = self.settings
        waiter = asyncio.wrap_future(future)
        gone = asyncio.ensure_future(disconnected(request))
        try:
            done, _ = await asyncio.wait({waiter, gone}, timeout=s.deadline_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if waiter in done:
            try:
                answer = waiter.result()
            except TimeoutError:  # pebble's own timer (the same deadline, from the job's start)
                raise self._deadline(request, kind, started) from None
            except ProcessExpired as exc:
                self._count("failed", kind, "process_died")
                log.error("heavy-work process died", extra={"fields": {"event": "heavy_process_died", "kind": kind, "exitcode": exc.exitcode}})
                raise Rejected(503, memory_problem(request.url.path, s.memory_mib), reason="process_died") from None
            except BrokenProcessPool:
                # Its processes keep dying at start (e.g. a memory ceiling too small to import
                # the solver): start a fresh pool for the next request.
                self._count("failed", kind, "pool_broken")
                log.error("heavy-work pool broken; restarting it", extra={"fields": {"event": "heavy_pool_broken", "kind": kind}})
                self.stop()
                raise Rejected(503, problem_bytes(503, "the server's work processes failed to start; retry", instance=request.url.path),
                               {"Retry-After": "1"}, reason="pool_broken") from None
            except CancelledError:  # pragma: no cover - cancelled by stop() at shutdown
                raise Rejected(503, problem_bytes(503, "the server is shutting down", instance=request.url.path)) from None
            if answer.status == 503:  # the job's own MemoryError at the ceiling (jobs.run)
                self._count("rejected", kind, "memory_limit")
            else:  # counted once: the shed alert divides by the sum over outcomes
                self._count("completed", kind, "ok" if answer.status == 200 else str(answer.status))
            return answer
        waiter.cancel()
        if gone in done:
            self._count("rejected", kind, "client_gone")
            log.info("cancelled: the client went away", extra={"fields": {"event": "cancelled_on_disconnect", "kind": kind}})
            raise ClientGone()
        raise self._deadline(request, kind, started)

    def _deadline(self, request: Request, kind: str, started: float) -> Rejected:
        s = self.settings
        self._count("rejected", kind, "deadline")
        log.warning("heavy request ran past its deadline", extra={"fields": {"event": "deadline_exceeded", "kind": kind,
                                                                              "seconds": round(time.monotonic() - started, 3)}})
        return Rejected(
            503,
            problem_bytes(
                503,
                f"the {kind} did not finish within this server's {s.deadline_s:g} s deadline and was stopped; "
                "narrow it (fewer search values, sweep points or stages), or ask the operator to raise --request-deadline",
                type_=DEADLINE_EXCEEDED, title="Deadline exceeded", instance=request.url.path,
            ),
            reason="deadline",
        )

    # -- metrics ---------------------------------------------------------------------------
    def _count(self, outcome: str, kind: str, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.heavy_outcome(kind, outcome, reason)

    def _gauges(self) -> None:
        if self.metrics is not None:
            self.metrics.heavy_gauges(self.running, self.waiting)


def client_of(request: Request, header: str | None) -> str:
    """Who a heavy request counts against: the last value of the trusted header (the address
    the operator's proxy saw; earlier values are the client's own claims), else the peer."""
    if header:
        raw = request.headers.get(header, "")
        last = raw.rsplit(",", 1)[-1].strip()
        if last:
            return last[:256]
    return request.client.host if request.client else ""


CLIENT_CLOSED = 499  # nginx's status for a request whose client went away; nobody reads it


def pool_of(request: Request) -> HeavyPool:
    return request.app.state.heavy


async def answer_of(request: Request, kind: str, body: bytes, options: dict | None = None) -> jobs.Answer | Response:
    """The job's Answer from the app's pool, or the Response that says why there is none
    (429 / 503 problem+json, or the 499 nobody reads when the client left)."""
    try:
        return await pool_of(request).run(request, kind, body, options)
    except Rejected as exc:
        return rejection_response(exc)
    except ClientGone:
        return Response(b"", status_code=CLIENT_CLOSED)


async def run_heavy(request: Request, kind: str, body: bytes, options: dict | None = None) -> Response:
    """The route's whole answer, computed in the app's pool."""
    answer = await answer_of(request, kind, body, options)
    if isinstance(answer, Response):
        return answer
    return Response(answer.body, status_code=answer.status, media_type=answer.media_type)


def rejection_response(exc: Rejected) -> Response:
    return Response(exc.body, status_code=exc.status, media_type=PROBLEM_JSON, headers=exc.headers)


__all__ = [
    "CLIENT_CLOSED",
    "ClientGone",
    "HeavyPool",
    "PoolSettingError",
    "PoolSettings",
    "Rejected",
    "answer_of",
    "pool_of",
    "rejection_response",
    "run_heavy",
]
