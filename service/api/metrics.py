"""Prometheus metrics: one CollectorRegistry per app, and `GET /metrics`.

Names follow Prometheus conventions (base units, `_total` counters, bounded labels):

* `mambasizer_http_requests_total{route,method,status}` and
  `mambasizer_http_request_duration_seconds{route,method}`: `route` is the route
  template (`/v1/presets/{name}`), or `unmatched`; `method` is one of the standard
  methods, or `other`.
* `mambasizer_build_info{version,sglang_version}` = 1.
* For each deployment in the `--deployments` file, per pipeline stage:
  `mambasizer_plan_{max_running_requests,max_total_num_tokens,max_mamba_cache_size,
  mamba_pool_bytes,kv_pool_bytes,feasible}{deployment,model_name,pp_rank}`, so they
  join SGLang's own `sglang:max_total_num_tokens{model_name,pp_rank}`.
* The same deployments per release planned (the one each runs, `running="true"`, and each of
  its `upgrade_to` releases, `running="false"`): `mambasizer_plan_release_{max_running_requests,
  max_total_num_tokens,max_mamba_cache_size,slack_bytes,feasible}{deployment,model_name,
  pp_rank,sglang_version,running}` (slack_bytes: free memory after load minus the pools, where
  the budget gives free memory; service/upgrade.py). A release that refuses the model or the
  arguments exports feasible 0 on the running plan's stages and no figures.
* The heavy-work pool (mambasizer.service.api.workpool): `mambasizer_inflight` (jobs running in its
  processes), `mambasizer_queue_depth` (admitted, waiting for a process),
  `mambasizer_heavy_requests_total{kind,outcome,reason}` with `kind` one of plan, compare,
  recommend, sweep; `outcome` completed (reason: ok or the 4xx status), rejected (reason:
  queue_full, client_share, deadline, client_gone, memory_limit) or failed (process_died).
* For each deployment whose entry asks for a trial (mambasizer.service.api.deployment_trials):
  `mambasizer_trial_{measured,predicted}_bytes{deployment,model_name,pp_rank,pool}` and
  `mambasizer_trial_status{deployment,model_name,status}` (1 for the current status).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from mambasizer.schemas.plan import REFERENCE
from mambasizer.service import __version__
from mambasizer.service.upgrade import stage_slack_bytes

if TYPE_CHECKING:  # pragma: no cover
    from mambasizer.schemas import Plan
    from mambasizer.service.api.deployment_trials import DeploymentTrials
    from mambasizer.service.api.deployments import Deployment, DeploymentStore

SGLANG_VERSION = REFERENCE.split("==", 1)[1]
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
# Plans cost ~0.1 ms, remedy searches a few ms, trials seconds.
DURATION_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

PLAN_LABELS = ("deployment", "model_name", "pp_rank")
PLAN_GAUGES = {
    "mambasizer_plan_max_running_requests": "max_running_requests SGLang 0.5.23 would start with (per attention-DP worker).",
    "mambasizer_plan_max_total_num_tokens": "max_total_num_tokens SGLang 0.5.23 would start with (KV-pool tokens, synced across PP stages).",
    "mambasizer_plan_max_mamba_cache_size": "max_mamba_cache_size (mamba-state slots) SGLang 0.5.23 would start with.",
    "mambasizer_plan_mamba_pool_bytes": "Bytes the mamba pool allocates on this PP stage (conv + SSM state, speculative intermediate, ReplaySSM ring).",
    "mambasizer_plan_kv_pool_bytes": "Bytes the KV pool allocates on this PP stage.",
    "mambasizer_plan_feasible": "1 when SGLang 0.5.23 would start with this deployment's plan, 0 when it would refuse.",
}


RELEASE_LABELS = (*PLAN_LABELS, "sglang_version", "running")
RELEASE_GAUGES = {
    "mambasizer_plan_release_max_running_requests": "max_running_requests planned at this SGLang release (per attention-DP worker).",
    "mambasizer_plan_release_max_total_num_tokens": "max_total_num_tokens planned at this SGLang release.",
    "mambasizer_plan_release_max_mamba_cache_size": "max_mamba_cache_size planned at this SGLang release.",
    "mambasizer_plan_release_slack_bytes": "Free bytes after load minus the pools (mamba, KV, req-to-token) on this PP stage at this release.",
    "mambasizer_plan_release_feasible": "1 when this SGLang release would start the deployment, 0 when it would refuse (or cannot load the model).",
}


def _release_of(p: Plan) -> str:
    return p.reference.removeprefix("sglang==")


def _release_samples(fams: dict, d: Deployment) -> None:
    """The deployment's running plan and its upgrade_to plans, one sglang_version label each."""
    running = d.plan
    if running is None:
        return
    model = d.metrics_model_name or running.model_name
    rows: list[tuple[str, str, Plan | None]] = [(_release_of(running), "true", running)]
    rows += [(u.sglang_version, "false", u.plan) for u in d.upgrades]
    for version, is_running, p in rows:
        if p is None:  # the release refuses it: not startable, on the stages the deployment has
            for st in running.stages:
                fams["mambasizer_plan_release_feasible"].add_metric((d.name, model, str(st.pp_rank), version, is_running), 0.0)
            continue
        slack = stage_slack_bytes(p.model_dump(mode="json"))
        for st, free in zip(p.stages, slack, strict=True):
            labels = (d.name, model, str(st.pp_rank), version, is_running)
            fams["mambasizer_plan_release_feasible"].add_metric(labels, 1.0 if p.feasible else 0.0)
            for field in ("max_running_requests", "max_total_num_tokens", "max_mamba_cache_size"):
                value = getattr(p, field)
                if value is not None and p.feasible:
                    fams[f"mambasizer_plan_release_{field}"].add_metric(labels, float(value))
            if free is not None:
                fams["mambasizer_plan_release_slack_bytes"].add_metric(labels, float(free))


class DeploymentsCollector(Collector):
    """Reads the store's current snapshot at scrape time: a reload swaps the whole
    label set at once, and a removed deployment leaves no stale series behind."""

    def __init__(self, store: DeploymentStore) -> None:
        self.store = store

    def describe(self) -> list:
        return []  # names are checked at collect time; registering must not plan anything

    def collect(self) -> Iterator:
        snap = self.store.snapshot
        fams = {name: GaugeMetricFamily(name, doc, labels=PLAN_LABELS) for name, doc in PLAN_GAUGES.items()}
        releases = {name: GaugeMetricFamily(name, doc, labels=RELEASE_LABELS) for name, doc in RELEASE_GAUGES.items()}
        valid = GaugeMetricFamily(
            "mambasizer_deployment_input_valid",
            "1 when the deployment's request can be sized, 0 when it is invalid input (see the log).",
            labels=("deployment",),
        )
        for d in snap.deployments:
            valid.add_metric((d.name,), 0.0 if d.plan is None else 1.0)
            p = d.plan
            if p is None:
                continue
            for st in p.stages:
                labels = (d.name, d.metrics_model_name or p.model_name, str(st.pp_rank))
                fams["mambasizer_plan_feasible"].add_metric(labels, 1.0 if p.feasible else 0.0)
                for field in ("max_running_requests", "max_total_num_tokens", "max_mamba_cache_size"):
                    value = getattr(p, field)
                    if value is not None:
                        fams[f"mambasizer_plan_{field}"].add_metric(labels, float(value))
                if p.feasible:
                    mamba = st.conv_state_bytes + st.ssm_state_bytes + st.intermediate_state_bytes + st.replayssm_ring_bytes
                    fams["mambasizer_plan_mamba_pool_bytes"].add_metric(labels, float(mamba))
                    fams["mambasizer_plan_kv_pool_bytes"].add_metric(labels, float(st.kv_pool_bytes))
            _release_samples(releases, d)
        yield from fams.values()
        yield from releases.values()
        yield valid
        reloads = CounterMetricFamily(
            "mambasizer_deployments_reloads",
            "Loads of the deployments file, by result.",
            labels=("result",),
        )
        reloads.add_metric(("success",), float(self.store.reloads_ok))
        reloads.add_metric(("failure",), float(self.store.reloads_failed))
        yield reloads
        yield GaugeMetricFamily(
            "mambasizer_deployments_last_reload_success",
            "1 when the last load of the deployments file succeeded (a failed reload keeps the previous deployments).",
            value=1.0 if self.store.last_error is None else 0.0,
        )
        yield GaugeMetricFamily(
            "mambasizer_deployments_last_reload_timestamp_seconds",
            "Unix time of the last successful load of the deployments file.",
            value=snap.loaded_at,
        )


TRIAL_LABELS = ("deployment", "model_name", "pp_rank", "pool")


class TrialsCollector(Collector):
    """The deployments file's trials, read at scrape time from the current states: a reload
    that drops a deployment (or its trial) drops its series with it."""

    def __init__(self, trials: DeploymentTrials) -> None:
        self.trials = trials

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator:
        from mambasizer.service.api.deployment_trials import STATUSES

        states = self.trials.states
        measured = GaugeMetricFamily(
            "mambasizer_trial_measured_bytes",
            "Bytes the deployment's trial allocated for a pool (CUDA: allocator growth; CPU: tensor storage), by PP stage.",
            labels=TRIAL_LABELS,
        )
        predicted = GaugeMetricFamily(
            "mambasizer_trial_predicted_bytes",
            "Bytes the plan predicts for the same pool and PP stage of the deployment's trial.",
            labels=TRIAL_LABELS,
        )
        status = GaugeMetricFamily(
            "mambasizer_trial_status",
            "1 for the current status of the deployment's trial (pending, running, ok, oom, rejected, unavailable, "
            "failed, disabled, skipped), 0 for the others.",
            labels=("deployment", "model_name", "status"),
        )
        for st in states.values():
            for word in STATUSES:
                status.add_metric((st.deployment, st.model_name, word), 1.0 if st.status == word else 0.0)
            for f in st.pools:
                labels = (st.deployment, st.model_name, str(f.pp_rank), f.pool)
                predicted.add_metric(labels, float(f.predicted_bytes))
                if f.measured_bytes is not None:
                    measured.add_metric(labels, float(f.measured_bytes))
        yield measured
        yield predicted
        yield status


class Metrics:
    """Every collector of one app, in the app's own registry."""

    def __init__(self, store: DeploymentStore, trials: DeploymentTrials) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "mambasizer_http_requests_total",
            "HTTP requests answered, by route template, method and status code.",
            ("route", "method", "status"),
            registry=r,
        )
        self.duration = Histogram(
            "mambasizer_http_request_duration_seconds",
            "Time from request start to the last response byte, by route template and method.",
            ("route", "method"),
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.build_info = Gauge(
            "mambasizer_build_info",
            "Always 1; the labels name the mambasizer version and the SGLang version it reproduces.",
            ("version", "sglang_version"),
            registry=r,
        )
        self.build_info.labels(__version__, SGLANG_VERSION).set(1)
        self.inflight = Gauge("mambasizer_inflight", "Heavy requests (recommend, sweep, compare, large plans) running in the work pool's processes.", registry=r)
        self.queue_depth = Gauge("mambasizer_queue_depth", "Heavy requests admitted and waiting for a work-pool process.", registry=r)
        self.heavy = Counter(
            "mambasizer_heavy_requests",
            "Heavy requests by kind and outcome: completed (reason ok or the 4xx status), rejected (queue_full, client_share, "
            "deadline, client_gone, memory_limit) or failed (process_died).",
            ("kind", "outcome", "reason"),
            registry=r,
        )
        r.register(DeploymentsCollector(store))
        r.register(TrialsCollector(trials))
        self._children: dict = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        children = self._children.get(key)
        if children is None:
            children = (self.requests.labels(route, method, str(status)), self.duration.labels(route, method))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def heavy_outcome(self, kind: str, outcome: str, reason: str) -> None:
        self.heavy.labels(kind, outcome, reason).inc()

    def heavy_gauges(self, running: int, waiting: int) -> None:
        self.inflight.set(running)
        self.queue_depth.set(waiting)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"description": "Prometheus text exposition format.", "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def get_metrics(request: Request) -> Response:
    return Response(request.app.state.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
