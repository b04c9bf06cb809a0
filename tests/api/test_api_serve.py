"""`mambasizer serve` as a real process on a free port, called over a real socket:
plans, problems, metrics, SIGHUP reload of the deployments file, JSON access logs, and a
graceful SIGTERM shutdown."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from api_helpers import preset_request
from mambasizer.service.planner import plan
from serving import free_port, mambasizer_command, start_mambasizer

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


def _tokens(base: str) -> dict:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    out = {}
    for fam in text_string_to_metric_families(text):
        if fam.name == "mambasizer_plan_max_total_num_tokens":
            for s in fam.samples:
                out[(s.labels["deployment"], s.labels["pp_rank"])] = s.value
    return out


@pytest.fixture()
def server(tmp_path):
    deployments = tmp_path / "deployments.yaml"
    deployments.write_text(
        "qwen:\n  model: {preset: qwen3-next-80b-a3b-instruct}\n  server_args: {tp_size: 4}\n  budget: {rest_gib: 30}\n"
    )
    srv = start_mambasizer("serve", "--deployments", str(deployments), cwd=tmp_path, log=tmp_path / "stderr.log", ready="/readyz")
    try:
        yield srv, deployments
    finally:
        srv.stop()


def test_serve_over_a_real_socket(server):
    srv, deployments = server
    proc, base = srv.proc, srv.base
    req = preset_request(tp_size=4)

    resp = httpx.post(f"{base}/v1/plan", json=req, timeout=10)
    assert resp.status_code == 200
    assert resp.content == plan(req).model_dump_json().encode()

    # `curl -d @request.json` sends form encoding; the body is still a PlanRequest.
    resp = httpx.post(f"{base}/plan", content=json.dumps(req), headers={"content-type": "application/x-www-form-urlencoded"}, timeout=10)
    assert resp.status_code == 200 and resp.content == plan(req).model_dump_json().encode()

    bad = httpx.post(f"{base}/v1/plan", content=b"{", timeout=10)
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
    big = httpx.post(f"{base}/v1/plan", content=b" " * (2 << 20), timeout=10)
    assert big.status_code == 413 and big.headers["content-type"] == "application/problem+json"
    assert httpx.get(f"{base}/nope", timeout=10).status_code == 404
    assert httpx.get(f"{base}/v1/presets", timeout=10).json()["presets"]
    assert httpx.get(f"{base}/livez", timeout=10).json() == {"status": "ok"}
    for probe in ("/livez", "/readyz"):  # HEAD over the real server: 200, no body
        head = httpx.head(f"{base}{probe}", timeout=10)
        assert head.status_code == 200 and head.content == b"", (probe, head.status_code)

    # SIGHUP re-reads the deployments file.
    before = _tokens(base)
    assert before == {("qwen", "0"): float(plan(req).max_total_num_tokens)}
    deployments.write_text(
        "qwen:\n  model: {preset: qwen3-next-80b-a3b-instruct}\n  server_args: {tp_size: 4}\n  budget: {rest_gib: 50}\n"
        "kimi:\n  model: {preset: kimi-linear-48b-a3b-instruct}\n  sglang_args: [--tp-size, '2', --pp-size, '2']\n  budget: {rest_gib: 40}\n"
    )
    proc.send_signal(signal.SIGHUP)
    expected = {
        ("qwen", "0"): float(plan(preset_request(budget={"rest_gib": 50}, tp_size=4)).max_total_num_tokens),
        ("kimi", "0"): float(plan(preset_request("kimi-linear-48b-a3b-instruct", {"rest_gib": 40}, tp_size=2, pp_size=2)).max_total_num_tokens),
    }
    expected[("kimi", "1")] = expected[("kimi", "0")]
    deadline = time.monotonic() + 20
    while _tokens(base) != expected:
        assert time.monotonic() < deadline, _tokens(base)
        time.sleep(0.1)
    assert proc.poll() is None, "SIGHUP must not stop the server"

    # SIGTERM: a graceful stop through the app's shutdown. uvicorn re-raises the signal
    # once it has shut down, so the status is "terminated by SIGTERM" (143 in a shell).
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) in (0, -signal.SIGTERM)
    lines = [json.loads(line) for line in srv.log.read_text().splitlines() if line.strip()]
    access = [rec for rec in lines if rec.get("logger") == "mambasizer.access"]
    assert access, lines
    for line in access:
        assert {"method", "route", "status", "duration_ms", "ts", "level"} <= set(line)
    assert any(rec["route"] == "/v1/plan" and rec["status"] == 413 for rec in access)
    assert any(rec["route"] == "unmatched" and rec["status"] == 404 for rec in access)
    events = [rec.get("event") for rec in lines]
    assert "ready" in events and "shutdown" in events
    assert events.count("deployments_loaded") == 2  # start-up, then the SIGHUP reload


def test_serve_refuses_an_unusable_deployments_file(tmp_path):
    bad = tmp_path / "d.yaml"
    bad.write_text("a: [unclosed\n")
    result = subprocess.run(
        mambasizer_command() + ["serve", "--port", str(free_port()), "--deployments", str(bad)],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("mambasizer: error: --deployments ") and "not valid YAML" in lines[-1]
