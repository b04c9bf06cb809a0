"""Trials the deployments file asks for: run after each load on the configured worker (or the
embedded CPU worker when trials are enabled), at most N at a time, exported as
mambasizer_trial_{predicted,measured}_bytes / mambasizer_trial_status, stale series dropped
on reload. The end-to-end test runs a real `mambasizer worker` and a real `mambasizer serve`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import textwrap
import time

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mambasizer.service.api import deployment_trials
from mambasizer.service.api.app import create_app
from mambasizer.service.api.trials import TrialSettings, TrialSettingsError
from samples import TINY
from serving import mambasizer_command, start_mambasizer

# A few MiB, as the body of a deployments-file entry.
TINY_YAML = textwrap.indent(yaml.safe_dump(TINY, sort_keys=False), "  ")
POOLS = ("req_to_token", "conv_state", "ssm_state", "side_tables", "kv_pool")


def _entry(name: str, trial: str = "true", extra: str = "") -> str:
    return f"{name}:\n{TINY_YAML}{extra}  trial: {trial}\n"


def _scrape(text: str) -> dict:
    """{metric name: {frozenset(labels): value}}"""
    out: dict = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def _status(fams: dict, deployment: str) -> str | None:
    for labels, value in fams.get("mambasizer_trial_status", {}).items():
        d = dict(labels)
        if d["deployment"] == deployment and value == 1.0:
            return d["status"]
    return None


def _poll(get, until, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        value = get()
        if until(value):
            return value
        assert time.monotonic() < deadline, f"not reached within {timeout_s} s: {value}"
        time.sleep(0.1)


class FakeWorker:
    """An async trial hook answering a TrialResult with known bytes, counting how many
    trials overlap."""

    def __init__(self, delay_s: float = 0.05) -> None:
        self.delay_s = delay_s
        self.running = 0
        self.most = 0
        self.calls: list[tuple[str, dict]] = []

    async def __call__(self, plan, request, options):
        self.calls.append((plan.model_name, options))
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.running -= 1
        return {"status": "ok", "device": "cpu", "stages": [{"pp_rank": 0, "pools": [
            {"pool": "kv_pool", "predicted_bytes": 1000, "measured_bytes": 1010},
            {"pool": "conv_state", "predicted_bytes": 200, "measured_bytes": None},
        ]}]}


def _client(path, worker=None, trials=None) -> TestClient:
    return TestClient(create_app(deployments_path=str(path), worker=worker, trials=trials or TrialSettings()))


def test_file_trials_run_on_the_worker_and_are_exported(tmp_path, monkeypatch):
    monkeypatch.setenv(deployment_trials.CONCURRENCY_ENV, "2")
    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("a") + _entry("b", "{timeout_s: 30, device: cpu}") + _entry("c", "{timeout_s: 30}")
                    + _entry("plain", "false"))
    worker = FakeWorker(delay_s=0.2)
    with _client(path, worker) as c:  # trials disabled: the worker still runs the operator's trials
        fams = _poll(lambda: _scrape(c.get("/metrics").text),
                     lambda f: all(_status(f, d) == "ok" for d in "abc"))
    assert worker.most == 2  # three trials, two at a time
    assert sorted(o.get("timeout_s") for _, o in worker.calls) == [30.0, 30.0, 120.0]
    assert {"device": "cpu"}.items() <= next(o for _, o in worker.calls if o["device"] == "cpu").items()
    kv = {"deployment": "a", "model_name": "explicit-layout", "pp_rank": "0", "pool": "kv_pool"}  # the plan's model name
    assert fams["mambasizer_trial_predicted_bytes"][frozenset(kv.items())] == 1000.0
    assert fams["mambasizer_trial_measured_bytes"][frozenset(kv.items())] == 1010.0
    conv = frozenset({**kv, "pool": "conv_state"}.items())
    assert fams["mambasizer_trial_predicted_bytes"][conv] == 200.0
    assert conv not in fams["mambasizer_trial_measured_bytes"]  # not reached: no series, not a 0
    assert {dict(k)["deployment"] for k in fams["mambasizer_trial_status"]} == {"a", "b", "c"}  # not "plain"
    assert len(fams["mambasizer_trial_status"]) == 3 * len(deployment_trials.STATUSES)


def test_concurrency_one_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv(deployment_trials.CONCURRENCY_ENV, raising=False)
    path = tmp_path / "deployments.yaml"
    path.write_text("".join(_entry(f"d{i}") for i in range(3)))
    worker = FakeWorker(delay_s=0.1)
    with _client(path, worker) as c:
        _poll(lambda: _scrape(c.get("/metrics").text), lambda f: all(_status(f, f"d{i}") == "ok" for i in range(3)))
    assert worker.most == 1 and len(worker.calls) == 3


def test_a_reload_reruns_trials_and_drops_stale_series(tmp_path):
    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("keep") + _entry("gone") + _entry("untrialled"))
    worker = FakeWorker()
    app = create_app(deployments_path=str(path), worker=worker, trials=TrialSettings())
    with TestClient(app) as c:
        _poll(lambda: _scrape(c.get("/metrics").text), lambda f: all(_status(f, d) == "ok" for d in ("keep", "gone", "untrialled")))
        path.write_text(_entry("keep") + _entry("untrialled", "false"))
        assert app.state.deployments.reload() is True  # what SIGHUP runs, off the loop
        fams = _poll(lambda: _scrape(c.get("/metrics").text), lambda f: _status(f, "keep") == "ok" and _status(f, "gone") is None)
    for name in ("mambasizer_trial_predicted_bytes", "mambasizer_trial_measured_bytes", "mambasizer_trial_status"):
        assert {dict(k)["deployment"] for k in fams[name]} == {"keep"}, name
    assert len(worker.calls) == 4  # keep, gone, untrialled; then keep again only


def test_without_a_worker_and_with_trials_off_nothing_runs(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("MAMBASIZER_WORKER_URL", raising=False)
    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("a"))
    with caplog.at_level("WARNING", logger="mambasizer.trials"), _client(path) as c:
        fams = _poll(lambda: _scrape(c.get("/metrics").text), lambda f: _status(f, "a") is not None)
    assert _status(fams, "a") == "disabled"
    assert "mambasizer_trial_measured_bytes" not in fams
    assert any(getattr(r, "fields", {}).get("event") == "deployment_trials_disabled" for r in caplog.records)


def test_embedded_cpu_trial_when_trials_are_enabled_without_a_worker(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.delenv("MAMBASIZER_WORKER_URL", raising=False)
    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("small", "{device: cpu}") + _entry("big", "{device: cpu}").replace("rest_gib: 0.02", "rest_gib: 4"))
    with _client(path, trials=TrialSettings(enabled=True, memory_gib=0.5)) as c:
        fams = _poll(lambda: _scrape(c.get("/metrics").text),
                     lambda f: _status(f, "small") == "ok" and _status(f, "big") not in (None, "pending", "running"))
    assert _status(fams, "big") == "rejected"  # larger than --trial-memory-gib: refused before allocating
    pred = {dict(k)["pool"]: v for k, v in fams["mambasizer_trial_predicted_bytes"].items() if dict(k)["deployment"] == "small"}
    meas = {dict(k)["pool"]: v for k, v in fams["mambasizer_trial_measured_bytes"].items() if dict(k)["deployment"] == "small"}
    assert set(POOLS) <= set(pred) and pred == meas and pred["kv_pool"] > 0


def test_infeasible_and_invalid_entries_are_skipped(tmp_path):
    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("tiny-budget").replace("rest_gib: 0.02", "rest_gib: 0.000001")
                    + _entry("bad-trial", "{timeout_s: -1}") + _entry("not-a-bool", "maybe"))
    worker = FakeWorker()
    with _client(path, worker) as c:
        fams = _poll(lambda: _scrape(c.get("/metrics").text), lambda f: _status(f, "tiny-budget") is not None)
        ready = c.get("/readyz").json()
    assert _status(fams, "tiny-budget") == "skipped" and worker.calls == []
    valid = {dict(k)["deployment"]: v for k, v in fams["mambasizer_deployment_input_valid"].items()}
    assert valid["bad-trial"] == 0.0 and valid["not-a-bool"] == 0.0
    text = str(ready)
    assert "trial.timeout_s" in text and "must be true, false or a mapping" in text


def test_a_failing_hook_is_status_failed_and_the_api_keeps_serving(tmp_path):
    async def broken(plan, request, options):
        raise RuntimeError("boom")

    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("a"))
    with _client(path, broken) as c:
        fams = _poll(lambda: _scrape(c.get("/metrics").text), lambda f: _status(f, "a") not in (None, "pending", "running"))
        assert c.get("/livez").status_code == 200
    assert _status(fams, "a") == "failed"


def test_an_unavailable_worker_is_tried_again(tmp_path):
    """An API that starts before its worker: `unavailable` is retried after a delay."""
    answers = [{"status": "unavailable", "reason": "the trial worker is unreachable"}] * 2
    worker = FakeWorker()

    async def flaky(plan, request, options):
        if answers:
            return answers.pop()
        return await worker(plan, request, options)

    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("a"))
    app = create_app(deployments_path=str(path), worker=flaky, trials=TrialSettings())
    app.state.deployment_trials.retry_delays = (0.2, 0.2, 0.2)
    seen = set()
    with TestClient(app) as c:
        def look():
            f = _scrape(c.get("/metrics").text)
            seen.add(_status(f, "a"))
            return f
        _poll(look, lambda f: _status(f, "a") == "ok", timeout_s=30)
    assert "unavailable" in seen and len(worker.calls) == 1


def test_retries_end(tmp_path):
    calls = []

    async def down(plan, request, options):
        calls.append(1)
        return {"status": "unavailable", "reason": "the trial worker is unreachable"}

    path = tmp_path / "deployments.yaml"
    path.write_text(_entry("a"))
    app = create_app(deployments_path=str(path), worker=down, trials=TrialSettings())
    app.state.deployment_trials.retry_delays = (0.05, 0.05)
    with TestClient(app) as c:
        _poll(lambda: len(calls), lambda n: n >= 3, timeout_s=30)
        time.sleep(0.5)
        assert _status(_scrape(c.get("/metrics").text), "a") == "unavailable"
    assert len(calls) == 3  # the first try and two retries


@pytest.mark.parametrize("raw", ["0", "17", "two"])
def test_bad_concurrency_is_a_named_error(raw):
    with pytest.raises(TrialSettingsError, match=deployment_trials.CONCURRENCY_ENV):
        deployment_trials.concurrency_from_env({deployment_trials.CONCURRENCY_ENV: raw})


def test_serve_refuses_a_bad_concurrency_in_one_line(tmp_path):
    out = subprocess.run(mambasizer_command() + ["serve", "--port", "1"], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path, env={**os.environ, deployment_trials.CONCURRENCY_ENV: "0"})
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith(f"mambasizer: error: {deployment_trials.CONCURRENCY_ENV} must be")
    assert "Traceback" not in out.stderr


# --------------------------------------------------------------------------- end to end


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
def test_end_to_end_with_the_real_cpu_worker(tmp_path):
    pytest.importorskip("torch")
    worker = start_mambasizer("worker", "--device", "cpu", cwd=tmp_path, log=tmp_path / "worker.log")
    path = tmp_path / "deployments.yaml"
    # two PP stages: one series per stage and pool
    pp2 = "  sglang_args: [--pp-size, '2', --served-model-name, tiny-pp2]\n"
    path.write_text(_entry("tiny", "{device: cpu}") + _entry("tiny-pp2", "{device: cpu}", pp2))
    env = {"MAMBASIZER_WORKER_URL": worker.base, "MAMBASIZER_TRIALS_ENABLED": ""}
    srv = start_mambasizer("serve", "--deployments", str(path), cwd=tmp_path, log=tmp_path / "stderr.log", env=env)
    proc, port = srv.proc, srv.port
    metrics = f"http://127.0.0.1:{port}/metrics"
    try:
        fams = _poll(lambda: _scrape(httpx.get(metrics, timeout=10).text),
                     lambda f: _status(f, "tiny") == "ok" and _status(f, "tiny-pp2") == "ok", timeout_s=120)
        pred = fams["mambasizer_trial_predicted_bytes"]
        meas = fams["mambasizer_trial_measured_bytes"]
        assert pred == meas  # CPU: the tensors' storage is exactly what the plan predicts
        stages = {(dict(k)["deployment"], dict(k)["model_name"], dict(k)["pp_rank"]) for k in pred}
        assert ("tiny-pp2", "tiny-pp2", "0") in stages and ("tiny-pp2", "tiny-pp2", "1") in stages
        assert {dict(k)["pool"] for k in pred} >= set(POOLS)
        # the plan's own pool gauges agree with the trial's predictions
        plan_kv = {dict(k)["pp_rank"]: v for k, v in fams["mambasizer_plan_kv_pool_bytes"].items() if dict(k)["deployment"] == "tiny-pp2"}
        assert sorted(plan_kv) == ["0", "1"] and sum(plan_kv.values()) > 0
        for rank, value in plan_kv.items():
            trial_kv = [v for k, v in pred.items() if dict(k)["deployment"] == "tiny-pp2" and dict(k)["pp_rank"] == rank and dict(k)["pool"] == "kv_pool"]
            assert trial_kv == ([value] if value else [])  # a stage without attention layers has no KV pool

        path.write_text(_entry("tiny", "false"))
        proc.send_signal(signal.SIGHUP)
        fams = _poll(lambda: _scrape(httpx.get(metrics, timeout=10).text),
                     lambda f: "mambasizer_trial_status" not in f and "mambasizer_trial_predicted_bytes" not in f)
        assert {dict(k)["deployment"] for k in fams["mambasizer_deployment_input_valid"]} == {"tiny"}
    finally:
        srv.stop()
        worker.stop()
    stderr_text = srv.log.read_text()
    assert "deployment_trial_done" in stderr_text
