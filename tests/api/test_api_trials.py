"""Who may run a trial from POST /v1/plan: off unless enabled, the client's own credential,
the embedded memory budget, cancellation when the client goes away, no internal details."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from api_helpers import assert_no_internals, preset_request
from mambasizer.service.api import trials
from mambasizer.service.api.app import create_app
from mambasizer.service.api.trials import TrialSettings, TrialSettingsError
from mambasizer.service.planner import plan
from samples import TINY

REQ = preset_request(tp_size=4)
PLAN_BYTES = plan(REQ).model_dump_json().encode()


class Recorder:
    """A trial hook that records its calls (and whether it was cancelled)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.calls = 0
        self.cancelled = False
        self.delay_s = delay_s
        self.started = asyncio.Event()

    async def __call__(self, plan_, request, options):
        self.calls += 1
        self.started.set()
        try:
            await asyncio.sleep(self.delay_s)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return {"status": "ok", "device": "cpu", "stages": []}


def _post(app, headers=None) -> tuple[int, bytes]:
    with TestClient(app) as c:
        r = c.post("/v1/plan", json={**REQ, "trial": {}}, headers=headers)
    return r.status_code, r.content


def _split(content: bytes) -> tuple[bytes, dict]:
    """The plan's own bytes and the trial object appended after them."""
    body = json.loads(content)
    trial = body.pop("trial")
    return content[: len(PLAN_BYTES) - 1] + b"}", trial


# --------------------------------------------------------------------------- off by default


def test_trials_are_off_by_default_and_the_plan_is_unaffected(monkeypatch):
    for var in (trials.ENABLED_ENV, trials.TOKEN_ENV, trials.TOKEN_FILE_ENV, trials.MEMORY_ENV):
        monkeypatch.delenv(var, raising=False)
    hook = Recorder()
    status, content = _post(create_app(worker=hook))
    assert status == 200
    plan_bytes, trial = _split(content)
    assert plan_bytes == PLAN_BYTES
    assert trial["status"] == "rejected" and "--enable-trials" in trial["reason"]
    assert set(trial) == {"status", "reason"}
    assert hook.calls == 0


@pytest.mark.parametrize("word", ["true", "1", "yes", "YES"])
def test_the_env_var_enables_trials(monkeypatch, word):
    monkeypatch.setenv(trials.ENABLED_ENV, word)
    monkeypatch.delenv(trials.TOKEN_ENV, raising=False)
    monkeypatch.delenv(trials.TOKEN_FILE_ENV, raising=False)
    hook = Recorder()
    status, content = _post(create_app(worker=hook))
    assert status == 200 and json.loads(content)["trial"] == {"status": "ok", "device": "cpu", "stages": []}
    assert hook.calls == 1


def test_settings_from_env_and_flags(tmp_path):
    assert TrialSettings.from_env({}) == TrialSettings(enabled=False, token=None, memory_gib=2.0)
    s = TrialSettings.from_env({trials.ENABLED_ENV: "no", trials.TOKEN_ENV: " t0k ", trials.MEMORY_ENV: "0.5"})
    assert s == TrialSettings(enabled=False, token="t0k", memory_gib=0.5) and s.memory_bytes == 1 << 29
    f = tmp_path / "token"
    f.write_text("from-file\n")
    # The file wins over the env token; each flag wins over its env var.
    s = TrialSettings.from_env({trials.ENABLED_ENV: "false", trials.TOKEN_ENV: "env", trials.MEMORY_ENV: "9"},
                               enabled=True, token_file=str(f), memory_gib=1.0)
    assert s == TrialSettings(enabled=True, token="from-file", memory_gib=1.0)
    assert TrialSettings.from_env({trials.TOKEN_FILE_ENV: str(f)}).token == "from-file"
    for env, needle in (
        ({trials.ENABLED_ENV: "maybe"}, trials.ENABLED_ENV),
        ({trials.MEMORY_ENV: "-1"}, trials.MEMORY_ENV),
        ({trials.MEMORY_ENV: "nan"}, trials.MEMORY_ENV),
        ({trials.MEMORY_ENV: "lots"}, trials.MEMORY_ENV),
        ({trials.TOKEN_FILE_ENV: str(tmp_path / "missing")}, "trial token file"),
    ):
        with pytest.raises(TrialSettingsError, match=needle):
            TrialSettings.from_env(env)
    (tmp_path / "empty").write_text(" \n")
    with pytest.raises(TrialSettingsError, match="empty"):
        TrialSettings.from_env({}, token_file=str(tmp_path / "empty"))


# --------------------------------------------------------------------------- the client's credential


def test_a_trial_credential_is_required_when_configured():
    hook = Recorder()
    app = create_app(worker=hook, trials=TrialSettings(enabled=True, token="client-s3cret"))
    with TestClient(app) as c:
        def trial_of(headers):
            r = c.post("/v1/plan", json={**REQ, "trial": {}}, headers=headers)
            assert r.status_code == 200  # the plan is never refused for the trial's sake
            plan_bytes, trial = _split(r.content)
            assert plan_bytes == PLAN_BYTES
            assert "client-s3cret" not in r.text
            return trial

        assert trial_of(None) == {"status": "rejected", "reason": trials.NO_CREDENTIAL_DETAIL}
        assert trial_of({"Authorization": "Bearer wrong"}) == {"status": "rejected", "reason": trials.BAD_CREDENTIAL_DETAIL}
        assert trial_of({"Authorization": "client-s3cret"})["status"] == "rejected"  # not a bearer credential
        assert trial_of({"Authorization": "Bearer client-s3cret-and-more"})["status"] == "rejected"
        assert hook.calls == 0
        two = c.post("/v1/plan", json={**REQ, "trial": {}},
                     headers=[("Authorization", "Bearer client-s3cret"), ("Authorization", "Bearer client-s3cret")])
        assert two.status_code == 200 and two.json()["trial"] == {"status": "rejected", "reason": trials.TWO_CREDENTIALS_DETAIL}
        assert hook.calls == 0
        assert trial_of({"Authorization": "Bearer client-s3cret"}) == {"status": "ok", "device": "cpu", "stages": []}
        assert hook.calls == 1
        # A plan without a trial needs no credential.
        assert c.post("/v1/plan", json=REQ).content == PLAN_BYTES


# --------------------------------------------------------------------------- embedded memory budget


@pytest.fixture()
def embedded_cpu():
    pytest.importorskip("torch")
    from mambasizer.service.worker import client
    from mambasizer.service.worker.runner import RunnerConfig, TrialRunner

    runner = TrialRunner(RunnerConfig(device="cpu", cpu_margin_bytes=0))
    client.set_embedded_runner(runner)
    try:
        yield runner
    finally:
        client.set_embedded_runner(None)



def test_embedded_cpu_trials_are_capped_by_the_memory_budget(embedded_cpu, monkeypatch):
    monkeypatch.delenv("MAMBASIZER_WORKER_URL", raising=False)
    need = sum(s.kv_pool_bytes for s in plan(TINY).stages)
    assert need > 1 << 20  # the TINY plan's KV pool alone is over 1 MiB
    small = create_app(trials=TrialSettings(enabled=True, memory_gib=1 / 1024))  # a 1 MiB budget
    with TestClient(small) as c:
        r = c.post("/v1/plan", json={**TINY, "trial": {}})
    assert r.status_code == 200
    trial = r.json()["trial"]
    assert trial["status"] == "rejected" and trial["stages"] == []
    assert "above this server's trial memory budget of 0.000977 GiB" in trial["reason"]
    # The default budget (2 GiB) runs it, measured against predicted.
    with TestClient(create_app(trials=TrialSettings(enabled=True))) as c:
        trial = c.post("/v1/plan", json={**TINY, "trial": {}}).json()["trial"]
    assert trial["status"] == "ok" and trial["baseline_restored"] is True
    assert trial["stages"][0]["measured"]["kv_pool_bytes"] == trial["stages"][0]["predicted"]["kv_pool_bytes"]


# --------------------------------------------------------------------------- the client goes away


async def _call_and_disconnect(app, body: bytes, after_s: float) -> list:
    """Drive the ASGI app as uvicorn would: the body, then (after `after_s`) the client's
    disconnect. Returns what the app sent."""
    sent: list = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.sleep(after_s)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/v1/plan", "raw_path": b"/v1/plan", "query_string": b"", "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000), "state": {},
    }
    await app(scope, receive, send)
    return sent


def test_a_trial_is_cancelled_when_its_client_goes_away():
    hook = Recorder(delay_s=30)
    app = create_app(worker=hook, trials=TrialSettings(enabled=True))
    body = json.dumps({**REQ, "trial": {}}).encode()

    async def scenario():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await _call_and_disconnect(app, body, after_s=0.2)
        return loop.time() - t0

    elapsed = asyncio.run(scenario())
    assert hook.calls == 1 and hook.cancelled, "the disconnect cancels the trial"
    assert elapsed < 10  # not the hook's 30 s


def test_an_embedded_trial_stops_and_frees_when_its_client_goes_away(monkeypatch):
    pytest.importorskip("torch")
    import threading

    from mambasizer.service.worker import client
    from mambasizer.service.worker.devices import CpuBackend
    from mambasizer.service.worker.runner import RunnerConfig, TrialRunner

    class Slow(CpuBackend):
        def __init__(self):
            super().__init__()
            self.allocations = 0
            self.started = threading.Event()

        def zeros(self, shape, dtype):
            self.started.set()
            import time
            time.sleep(0.2)
            self.allocations += 1
            return super().zeros(shape, dtype)

    class Factory:
        has_cuda = False

        def __init__(self, backend):
            self.backend = backend

        def __call__(self, device):
            return self.backend

    backend = Slow()
    runner = TrialRunner(RunnerConfig(queue_max=0), backend_factory=Factory(backend))
    client.set_embedded_runner(runner)
    monkeypatch.delenv("MAMBASIZER_WORKER_URL", raising=False)
    try:
        app = create_app(trials=TrialSettings(enabled=True))
        asyncio.run(_call_and_disconnect(app, json.dumps({**TINY, "trial": {"timeout_s": 60}}).encode(), after_s=0.3))
        # The worker thread stops at its next allocation and gives everything back.
        import time
        deadline = time.monotonic() + 10
        while runner.status()["cpu"]["busy"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runner.status()["cpu"]["busy"] is False
        assert backend.live_bytes() == 0
        total = len(__import__("mambasizer.service.planner", fromlist=["x"]).plan_stage_tensors(
            __import__("mambasizer.schemas", fromlist=["PlanRequest"]).PlanRequest.model_validate(TINY), plan(TINY), "cpu")[0])
        assert backend.allocations < total  # stopped early, not after every tensor
    finally:
        client.set_embedded_runner(None)


# --------------------------------------------------------------------------- no internals


def test_the_worker_url_never_reaches_the_client(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("MAMBASIZER_WORKER_URL", "http://127.0.0.1:9/internal-gpu-pool-7")
    with TestClient(create_app(trials=TrialSettings(enabled=True)), raise_server_exceptions=False) as c:
        r = c.post("/v1/plan", json={**REQ, "trial": {"timeout_s": 3}})
    assert r.status_code == 200
    trial = r.json()["trial"]
    assert trial["status"] == "unavailable" and trial["reason"] == "the trial worker is unreachable"
    for secret in ("internal-gpu-pool-7", "127.0.0.1", ":9", "MAMBASIZER"):
        assert secret not in r.text
    assert_no_internals(r.text)


def test_a_failing_hook_says_nothing_internal():
    async def broken(plan_, request, options):
        raise RuntimeError("http://10.0.0.7:8001 /secret/path exploded")

    status, content = _post(create_app(worker=broken, trials=TrialSettings(enabled=True)))
    assert status == 200
    trial = json.loads(content)["trial"]
    assert trial == {"status": "unavailable", "reason": trials.FAILED_DETAIL}
    assert b"10.0.0.7" not in content and b"RuntimeError" not in content


# --------------------------------------------------------------------------- the CLI


def test_serve_flags_parse_and_bad_settings_are_one_line_exit_2(tmp_path):
    from mambasizer.service.cli import build_parser

    args = build_parser().parse_args(["serve", "--enable-trials", "--trial-token-file", "/t", "--trial-memory-gib", "0.5"])
    assert args.enable_trials is True and args.trial_token_file == "/t" and args.trial_memory_gib == 0.5
    args = build_parser().parse_args(["serve"])
    assert args.enable_trials is None and args.trial_memory_gib is None  # the env var decides
    for argv, needle in (
        (["serve", "--trial-memory-gib", "0"], "--trial-memory-gib"),
        (["serve", "--enable-trials", "--trial-token-file", str(tmp_path / "nope")], "trial token file"),
    ):
        out = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", *argv], capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in out.stderr


def test_the_openapi_documents_the_refusal_with_an_example():
    doc = create_app().openapi()
    schemas = doc["components"]["schemas"]
    refusal = schemas["TrialRefusal"]
    assert set(refusal["properties"]) == {"status", "reason"}
    assert refusal["additionalProperties"] is False
    assert any(e["status"] == "rejected" and "--enable-trials" in e["reason"] for e in refusal["examples"])
    refs = {r.get("$ref") for r in schemas["PlanResponse"]["properties"]["trial"]["anyOf"]}
    assert {"#/components/schemas/TrialResult", "#/components/schemas/TrialRefusal"} <= refs
    # One field says why in every answer under `trial`: the API's refusals and the worker's results.
    assert "reason" in schemas["TrialResult"]["properties"] and "detail" not in schemas["TrialResult"]["properties"]
    assert "--enable-trials" in schemas["ApiPlanRequest"]["properties"]["trial"]["description"]


def test_real_serve_wires_the_trial_flags(tmp_path):
    pytest.importorskip("torch")
    import httpx

    from serving import start_mambasizer

    env = dict.fromkeys((trials.ENABLED_ENV, trials.TOKEN_ENV, trials.TOKEN_FILE_ENV, "MAMBASIZER_WORKER_URL"), "")
    srv = start_mambasizer("serve", cwd=tmp_path, log=tmp_path / "stderr.log", env=env)
    try:
        r = httpx.post(f"{srv.base}/v1/plan", json={**TINY, "trial": {}}, timeout=30)
        assert r.status_code == 200 and r.json()["trial"] == {"status": "rejected", "reason": trials.DISABLED_DETAIL}
    finally:
        srv.stop()
    token = tmp_path / "trial-token"
    token.write_text("t-123\n")
    srv = start_mambasizer("serve", "--enable-trials", "--trial-token-file", str(token), cwd=tmp_path, log=tmp_path / "stderr.log", env=env)
    try:
        url = f"{srv.base}/v1/plan"
        r = httpx.post(url, json={**TINY, "trial": {}}, timeout=30)
        assert r.json()["trial"] == {"status": "rejected", "reason": trials.NO_CREDENTIAL_DETAIL}
        r = httpx.post(url, json={**TINY, "trial": {"device": "cpu"}}, headers={"Authorization": "Bearer t-123"}, timeout=60)
        trial = r.json()["trial"]
        assert trial["status"] == "ok" and trial["device"] == "cpu" and trial["baseline_restored"] is True
    finally:
        srv.stop()


def test_every_trial_refusal_path_says_why_in_reason():
    """Disabled, credential missing, the hook failing, the worker's own refusal (a CPU trial
    over the memory budget): the same field, `reason`, never `detail`."""
    async def broken(plan_, request, options):
        raise RuntimeError("boom")

    answers = [
        json.loads(_post(create_app())[1])["trial"],
        json.loads(_post(create_app(trials=TrialSettings(enabled=True, token="t")))[1])["trial"],
        json.loads(_post(create_app(worker=broken, trials=TrialSettings(enabled=True)))[1])["trial"],
    ]
    with TestClient(create_app(trials=TrialSettings(enabled=True, memory_gib=1 / 1024))) as c:
        answers.append(c.post("/v1/plan", json={**TINY, "trial": {}}).json()["trial"])
    assert [a["status"] for a in answers] == ["rejected", "rejected", "unavailable", "rejected"]
    for a in answers:
        assert "detail" not in a and isinstance(a["reason"], str) and a["reason"], a
