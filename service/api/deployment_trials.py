"""Trials the deployments file asks for (`trial: true`, or trial options, per entry).

The file is the operator's, so its trials do not wait for a client: after every load (start-up
and each successful SIGHUP reload) one trial runs per such deployment, and what it measured
is exported per deployment, PP stage and pool (mambasizer.service.api.metrics):

* `mambasizer_trial_predicted_bytes` / `mambasizer_trial_measured_bytes`
  `{deployment, model_name, pp_rank, pool}`;
* `mambasizer_trial_status{deployment, model_name, status}`: 1 for the trial's current
  status, 0 for the others (STATUSES).

Where a trial runs, in the order a careful operator expects:

1. the worker the API is configured with (`MAMBASIZER_WORKER_URL`, or the app's `worker`
   hook): that is what the worker is for, and it does not depend on `--enable-trials`,
   which governs what *clients* may ask;
2. no worker, trials enabled (`--enable-trials`): the embedded worker, in this process, on
   its CPU, capped by `--trial-memory-gib` like a client's trial (a trial larger than the cap
   is `rejected`, it never takes the API's memory);
3. neither: no trial; status `disabled`, and a warning in the log naming the deployments.

A trial answered `unavailable` (the worker is down, still starting, or busy) is tried again
after 5, 10, 20, 40, 80 and 160 s (RETRY_DELAYS_S), so an API that starts before its worker
still gets its trials; the status stays `unavailable` in between.

Trials run as tasks on the event loop that only await (the embedded worker allocates in its
own thread, a remote one over HTTP), at most `MAMBASIZER_DEPLOYMENT_TRIAL_CONCURRENCY`
(default 1: one worker, one device) at a time. A reload cancels the previous load's trials
and drops the series of deployments that no longer ask for one (or are gone); a
deployment's bytes are cleared until its new trial answers, so no series outlives the plan
it measured.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mambasizer.service.api.trials import TrialSettings, TrialSettingsError
from mambasizer.service.settings import flag_or_env
from mambasizer.service.solver.releases.sizing import release_label

if TYPE_CHECKING:  # pragma: no cover
    from mambasizer.service.api.deployments import Deployment, Snapshot

log = logging.getLogger("mambasizer.trials")

CONCURRENCY_ENV = "MAMBASIZER_DEPLOYMENT_TRIAL_CONCURRENCY"
DEFAULT_CONCURRENCY = 1
MAX_CONCURRENCY = 16
WORKER_URL_ENV = "MAMBASIZER_WORKER_URL"  # mambasizer.service.worker.client.URL_ENV (not imported: that pulls pydantic models in)
# Beyond the trial's own timeout_s (the worker answers first, the HTTP client 10 s later):
# a hook that never returns still ends.
GRACE_S = 30.0
RETRY_DELAYS_S = (5.0, 10.0, 20.0, 40.0, 80.0, 160.0)

# pending: waiting for its turn; running; ok / oom / rejected / unavailable: the worker's
# answer (mambasizer.schemas.trial.TrialResult.status); failed: this server's own error; disabled: no
# worker and trials off; skipped: the entry cannot be sized or SGLang would not start it
# (mambasizer_deployment_input_valid / mambasizer_plan_feasible say so).
STATUSES = ("pending", "running", "ok", "oom", "rejected", "unavailable", "failed", "disabled", "skipped")

Hook = Callable[[Any, Any, dict], Awaitable[dict | None]]


@dataclass(frozen=True)
class PoolFigure:
    pp_rank: int
    pool: str
    predicted_bytes: int
    measured_bytes: int | None  # None: the trial did not get to this pool (after an OOM)


@dataclass(frozen=True)
class TrialState:
    deployment: str
    model_name: str
    status: str
    pools: tuple[PoolFigure, ...] = ()
    reason: str | None = None
    finished_at: float | None = None


def _concurrency(raw: str, name: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_CONCURRENCY:
        raise TrialSettingsError(f"{name} must be a whole number from 1 to {MAX_CONCURRENCY}, not {raw[:40]!r}")
    return value


def concurrency_from_env(environ: dict | None = None) -> int:
    return flag_or_env(None, CONCURRENCY_ENV, DEFAULT_CONCURRENCY, _concurrency, environ)


def pool_figures(result: dict) -> tuple[PoolFigure, ...]:
    """Per stage and pool, the predicted and measured bytes of a TrialResult (as a dict)."""
    out = []
    for stage in result.get("stages") or ():
        for line in stage.get("pools") or ():
            out.append(PoolFigure(int(stage["pp_rank"]), str(line["pool"]), int(line["predicted_bytes"]),
                                  None if line.get("measured_bytes") is None else int(line["measured_bytes"])))
    return tuple(out)


class DeploymentTrials:
    """The deployments file's trials: scheduled from DeploymentStore's load listener, run on
    the app's event loop, read by the metrics collector at scrape time."""

    def __init__(self, settings: TrialSettings, hook: Hook | None = None, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        self.settings = settings
        self.hook = hook
        self.concurrency = concurrency
        self.states: dict[str, TrialState] = {}  # replaced whole, never mutated: scrapes see one load's set
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: Snapshot | None = None  # loaded before the loop ran
        self._tasks: set[asyncio.Task] = set()
        self._generation = 0
        self.retry_delays = RETRY_DELAYS_S

    # ------------------------------------------------------------------ wiring

    def on_load(self, snap: Snapshot) -> None:
        """DeploymentStore listener; any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._waiting = snap
            return
        loop.call_soon_threadsafe(self._schedule, snap)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if self._waiting is not None:
            snap, self._waiting = self._waiting, None
            self._schedule(snap)

    async def stop(self) -> None:
        self._loop = None
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=10)

    # ------------------------------------------------------------------ scheduling (on the loop)

    def _where(self) -> str | None:
        if self.hook is not None:
            return "worker"
        if os.environ.get(WORKER_URL_ENV, "").strip():
            return "worker"
        if self.settings.enabled:
            return "embedded"
        return None

    def _schedule(self, snap: Snapshot) -> None:
        self._generation += 1
        generation = self._generation
        for t in list(self._tasks):
            t.cancel()  # the previous load's trials measured plans that may be gone
        wanted = [d for d in snap.deployments if d.trial is not None]
        where = self._where()
        states: dict[str, TrialState] = {}
        runnable = []
        for d in wanted:
            model_name = d.model_name or ""
            if d.plan is None or d.request is None:
                states[d.name] = TrialState(d.name, model_name, "skipped", reason="the entry cannot be sized")
            elif not d.plan.feasible:
                states[d.name] = TrialState(d.name, model_name, "skipped", reason=f"{release_label(d.plan.reference)} would not start this plan")
            elif where is None:
                states[d.name] = TrialState(d.name, model_name, "disabled",
                                            reason="no trial worker is configured and trials are disabled")
            else:
                states[d.name] = TrialState(d.name, model_name, "pending")
                runnable.append(d)
        self.states = states
        disabled = [n for n, s in states.items() if s.status == "disabled"]
        if disabled:
            log.warning(
                "deployments ask for trials, but no trial worker is configured (MAMBASIZER_WORKER_URL) and "
                "trials are disabled (--enable-trials): none runs",
                extra={"fields": {"event": "deployment_trials_disabled", "deployments": disabled[:20], "count": len(disabled)}},
            )
        if not runnable:
            return
        log.info("deployment trials scheduled", extra={"fields": {
            "event": "deployment_trials_scheduled", "count": len(runnable), "where": where, "concurrency": self.concurrency}})
        gate = asyncio.Semaphore(self.concurrency)
        for d in runnable:
            task = asyncio.ensure_future(self._run(generation, gate, d, where))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _set(self, generation: int, state: TrialState) -> None:
        if generation != self._generation or state.deployment not in self.states:
            return  # a reload replaced this trial
        states = dict(self.states)
        states[state.deployment] = state
        self.states = states

    def _call(self, d: Deployment, where: str | None) -> Awaitable[dict | None]:
        assert d.trial is not None
        options = d.trial.model_dump(mode="json")
        if self.hook is not None:
            return self.hook(d.plan, d.request, options)
        from mambasizer.service.api import trial_seam

        budget = self.settings.memory_bytes if where == "embedded" else None
        return trial_seam.run_trial(d.plan, d.request, options, memory_budget_bytes=budget)  # type: ignore[arg-type]

    async def _run(self, generation: int, gate: asyncio.Semaphore, d: Deployment, where: str | None) -> None:
        for delay in (*self.retry_delays, None):
            state = await self._attempt(generation, gate, d, where)
            if state is None or state.status != "unavailable" or delay is None:
                return
            await asyncio.sleep(delay)  # not holding the gate: other deployments go on

    async def _attempt(self, generation: int, gate: asyncio.Semaphore, d: Deployment,
                       where: str | None) -> TrialState | None:
        model_name = d.model_name or ""
        assert d.trial is not None
        async with gate:
            if generation != self._generation:
                return None
            self._set(generation, TrialState(d.name, model_name, "running"))
            started = time.monotonic()
            try:
                out = await asyncio.wait_for(self._call(d, where), timeout=d.trial.timeout_s + GRACE_S)
            except asyncio.CancelledError:
                raise
            except asyncio.TimeoutError:
                out = {"status": "unavailable", "reason": f"the trial did not answer within {d.trial.timeout_s + GRACE_S:g} s"}
            except Exception as exc:  # a trial never takes the API down
                log.error("deployment trial failed", exc_info=exc,
                          extra={"fields": {"event": "deployment_trial_failed", "deployment": d.name}})
                state = TrialState(d.name, model_name, "failed", reason=type(exc).__name__, finished_at=time.time())
                self._set(generation, state)
                return state
        if not isinstance(out, dict):
            out = {"status": "unavailable", "reason": "no trial could run"}
        answered = out.get("status")
        status: str = answered if isinstance(answered, str) and answered in STATUSES else "failed"
        try:
            pools = pool_figures(out)
        except (KeyError, TypeError, ValueError):
            status, pools = "failed", ()
        reason = out.get("reason")
        reason = None if reason is None else str(reason)
        state = TrialState(d.name, model_name, status, pools, reason, time.time())
        self._set(generation, state)
        fields = {"event": "deployment_trial_done", "deployment": d.name, "status": status, "where": where,
                  "elapsed_s": round(time.monotonic() - started, 3)}
        if reason:
            fields["reason"] = reason[:500]
        (log.info if status == "ok" else log.warning)("deployment trial done", extra={"fields": fields})
        return state
