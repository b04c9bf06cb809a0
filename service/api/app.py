"""The FastAPI app factory.

    from mambasizer.service.api.app import create_app
    app = create_app(deployments_path="deployments.yaml")   # what `mambasizer serve` runs

Everything a request needs is built here, once: the metrics registry (one per app), the
deployments snapshot (planned at load, re-planned on SIGHUP), the encoded preset
answers. The request path does no imports and no file reads.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import signal
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.middleware.gzip import GZipMiddleware

from mambasizer.schemas.checklog import MAX_LOG_BODY_BYTES
from mambasizer.service import __version__
from mambasizer.service.api import (
    checklog,
    compare,
    docs_page,
    explorer,
    gpus,
    health,
    jobs,
    metrics,
    openapi,
    plan,
    presets,
    problems,
    recommend,
    recommend_disaggregated,
    sweep,
)
from mambasizer.service.api.deployment_trials import DeploymentTrials, concurrency_from_env
from mambasizer.service.api.deployments import DeploymentsFileError, DeploymentStore
from mambasizer.service.api.metrics import Metrics
from mambasizer.service.api.middleware import CheckpointPolicyMiddleware, ObservabilityMiddleware
from mambasizer.service.api.trials import TrialSettings, TrialSettingsError
from mambasizer.service.api.wire import MAX_BODY_BYTES
from mambasizer.service.api.workpool import HeavyPool, PoolSettingError, PoolSettings
from mambasizer.service.checkpoints.policy import ReadPolicy, serve_policy

log = logging.getLogger("mambasizer.api")
# The smallest answer compressed (for clients that send Accept-Encoding: gzip).
GZIP_MIN_BYTES = 64 * 1024

TrialHook = Callable[[Any, Any, dict], Awaitable[dict | None]]

DESCRIPTION = """\
How SGLang 0.5.23 splits GPU memory between the mamba-state pool and the KV pool for a
hybrid model, per pipeline stage, before anything is deployed.

`POST /v1/plan` answers 200 for every computed plan: `feasible: false` carries SGLang's
own error and the remedies. Input that cannot be sized is a 422 `application/problem+json`
naming the failing `field` and, when known, the `allowed` values.
"""

__all__ = ["DeploymentsFileError", "PoolSettingError", "PoolSettings", "TrialSettings", "TrialSettingsError", "create_app"]


def _trial_hook(worker: Any) -> TrialHook | None:
    if worker is None:
        return None
    hook = getattr(worker, "run_trial", worker)
    if not callable(hook):
        raise TypeError("worker must be an async callable (plan, request, trial_options) or have a run_trial method")
    return hook


def _log_trial_settings(settings: TrialSettings) -> None:
    fields = {"event": "trials_configured", "enabled": settings.enabled, "credential_required": settings.token is not None,
              "embedded_memory_gib": settings.memory_gib}
    log.info("trial settings", extra={"fields": fields})
    if settings.enabled and settings.token is None:
        log.warning(
            "trials are enabled without a client credential: any client that reaches the API can run one "
            "(set MAMBASIZER_TRIAL_TOKEN or --trial-token-file)",
            extra={"fields": {"event": "trials_open"}},
        )


def _coalescing_reload(loop: asyncio.AbstractEventLoop, store: DeploymentStore) -> Callable[[], None]:
    """The SIGHUP handler: reload in a worker thread, never on the event loop; signals that
    arrive during a reload are folded into one more reload after it (a burst of SIGHUPs
    is one or two reloads, not a queue of them)."""
    state = {"running": False, "again": False}

    def done(_fut: Any) -> None:
        state["running"] = False
        if state["again"]:
            state["again"] = False
            start()

    def start() -> None:
        if state["running"]:
            state["again"] = True
            return
        state["running"] = True
        loop.run_in_executor(None, store.reload).add_done_callback(done)  # runs on the loop

    return start


def create_app(deployments_path: str | None = None, worker: Any = None,
               trials: TrialSettings | None = None, pool: PoolSettings | None = None,
               checkpoints: ReadPolicy | None = None) -> FastAPI:
    """Build the app. Raises DeploymentsFileError when the deployments file cannot be
    used at start-up (a later SIGHUP reload with a broken file keeps the old one),
    TrialSettingsError when `trials` is None and the trial environment variables cannot
    be used, and PoolSettingError likewise for `pool` (mambasizer.service.api.workpool). Trials are
    off unless `trials.enabled` (mambasizer.service.api.trials)."""
    if trials is None:
        trials = TrialSettings.from_env()
    if pool is None:
        pool = PoolSettings.resolve()
    if checkpoints is None:
        # Where a model path may be read: the model roots and Hub setting of the environment
        # (none by default: only shipped checkpoints, until the operator configures a root or the Hub).
        checkpoints = serve_policy(None, None)
    jobs.warm()
    store = DeploymentStore(deployments_path)
    deployment_trials = DeploymentTrials(trials, _trial_hook(worker), concurrency_from_env())
    store.listeners.append(deployment_trials.on_load)
    store.load()
    app_metrics = Metrics(store, deployment_trials)
    heavy = HeavyPool(pool, app_metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        loop = asyncio.get_running_loop()
        hup = False
        if store.configured and hasattr(signal, "SIGHUP"):
            try:
                loop.add_signal_handler(signal.SIGHUP, _coalescing_reload(loop, store))
                hup = True
            except (NotImplementedError, RuntimeError, ValueError):
                # Not the main thread (e.g. an in-process test client): reload() still works.
                log.info("SIGHUP reload not installed (not on the main thread)", extra={"fields": {"event": "sighup_unavailable"}})
        deployment_trials.start(loop)
        await loop.run_in_executor(None, lambda: heavy.start(wait=True))  # forked before the first request
        # Everything built so far (presets, layouts, the flag table, the app) lives as long as
        # the process: out of the collector's sight, a full collection no longer walks it
        # (88 ms on 2 busy cores, one pause of every in-flight request: it set the p99).
        gc.collect()
        gc.freeze()
        app.state.ready = True
        log.info("mambasizer API ready", extra={"fields": {"event": "ready", "version": __version__, "deployments": len(store.snapshot.deployments)}})
        try:
            yield
        finally:
            app.state.ready = False
            if hup:
                loop.remove_signal_handler(signal.SIGHUP)
            await deployment_trials.stop()
            await loop.run_in_executor(None, heavy.stop)
            closer = getattr(worker, "aclose", None) or getattr(worker, "close", None)
            if closer is not None:
                try:
                    result = closer()
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("trial worker did not close cleanly")
            log.info("mambasizer API stopped", extra={"fields": {"event": "shutdown"}})

    app = FastAPI(
        title="mambasizer",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # FastAPI's loads Swagger UI from a CDN; docs_page serves a local page
        redoc_url=None,
        openapi_tags=[
            {"name": "plan", "description": "Sizing questions."},
            {"name": "presets", "description": "The shipped model layouts and the modelled GPUs."},
            {"name": "operations", "description": "Probes and metrics."},
        ],
    )
    app.state.ready = False
    app.state.deployments = store
    app.state.metrics = app_metrics
    app.state.deployment_trials = deployment_trials
    app.state.worker = worker
    app.state.trial_hook = _trial_hook(worker)
    app.state.trials = trials
    app.state.heavy = heavy
    app.state.checkpoint_policy = checkpoints
    _log_trial_settings(trials)

    problems.install(app)
    for module in (plan, compare, checklog, recommend, recommend_disaggregated, sweep, presets, gpus, health, metrics, explorer, docs_page):
        app.include_router(module.router)
    openapi.install(app)
    # Large answers only (the OpenAPI document the explorer reads on its first view, big sweeps),
    # compressed for clients that ask: small JSON answers stay byte for byte as they were.
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES)
    app.add_middleware(CheckpointPolicyMiddleware)
    app.add_middleware(ObservabilityMiddleware, metrics=app_metrics, max_body_bytes=MAX_BODY_BYTES,
                       large_bodies={"/v1/check-log": MAX_LOG_BODY_BYTES})
    return app
