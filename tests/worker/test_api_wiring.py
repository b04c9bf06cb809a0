"""`"trial": {...}` on `POST /v1/plan` runs the trial (embedded worker, CPU here) and the
plan response gets a `trial` field; torch stays off the solver / API import path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from samples import TINY
from serving import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_torch_is_not_imported_by_the_solver_the_api_or_the_worker_modules():
    code = (
        "import sys, importlib\n"
        "mods = ['mambasizer.schemas.trial', 'mambasizer.service.solver', 'mambasizer.service.solver.allocation', 'mambasizer.service.worker.client',\n"
        "        'mambasizer.service.worker.trial', 'mambasizer.service.worker.runner', 'mambasizer.service.worker.app', 'mambasizer.service.api.worker_cmd']\n"
        "for extra in ('mambasizer.service.api.app', 'mambasizer.service.api.trial_seam'):\n"
        "    try:\n"
        "        importlib.import_module(extra)\n"
        "    except ModuleNotFoundError as e:\n"
        "        if not (e.name or '').startswith('mambasizer.service.api'): raise\n"
        "for m in mods: importlib.import_module(m)\n"
        "from mambasizer.service.planner import plan\n"
        f"plan({TINY!r})\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.fixture
def api():
    pytest.importorskip("torch")
    app_mod = pytest.importorskip("mambasizer.service.api.app")
    from fastapi.testclient import TestClient

    from mambasizer.service.api.trials import TrialSettings
    from mambasizer.service.worker import client
    from mambasizer.service.worker.runner import RunnerConfig, TrialRunner

    client.set_embedded_runner(TrialRunner(RunnerConfig(device="cpu", cpu_margin_bytes=0)))
    try:
        with TestClient(app_mod.create_app(trials=TrialSettings(enabled=True))) as c:
            yield c
    finally:
        client.set_embedded_runner(None)


def test_plan_with_trial_runs_the_embedded_worker(api, monkeypatch):
    monkeypatch.delenv("MAMBASIZER_WORKER_URL", raising=False)
    r = api.post("/v1/plan", json={**TINY, "trial": {}})
    assert r.status_code == 200
    body = r.json()
    assert body["feasible"] is True
    trial = body["trial"]
    assert trial["status"] == "ok" and trial["device"] == "cpu" and trial["baseline_restored"] is True
    st = trial["stages"][0]
    assert st["pp_rank"] == 0
    # The embedded CPU worker measures the pools of the very plan that came back.
    assert st["predicted"]["kv_pool_bytes"] == body["stages"][0]["kv_pool_bytes"] == st["measured"]["kv_pool_bytes"]
    assert st["predicted"]["ssm_state_bytes"] == body["stages"][0]["ssm_state_bytes"] == st["measured"]["ssm_state_bytes"]


def test_plan_without_trial_has_no_trial_field(api):
    r = api.post("/v1/plan", json=TINY)
    assert r.status_code == 200 and "trial" not in r.json()


def test_plan_with_a_worker_that_is_down_still_returns_the_plan(api, monkeypatch):
    monkeypatch.setenv("MAMBASIZER_WORKER_URL", f"http://127.0.0.1:{free_port()}")
    r = api.post("/v1/plan", json={**TINY, "trial": {"timeout_s": 5}})
    assert r.status_code == 200
    body = r.json()
    assert body["feasible"] is True and body["max_total_num_tokens"] > 0
    assert body["trial"]["status"] == "unavailable" and "unreachable" in body["trial"]["reason"]


def test_invalid_trial_options_are_rejected_with_the_plan(api, monkeypatch):
    monkeypatch.delenv("MAMBASIZER_WORKER_URL", raising=False)
    r = api.post("/v1/plan", json={**TINY, "trial": {"device": "tpu"}})
    assert r.status_code == 200
    assert r.json()["trial"]["status"] == "rejected" and "trial.device" in r.json()["trial"]["reason"]
