"""Probes, /metrics (parsed with prometheus_client's parser), the deployments file and its
reload, the access log, and the committed OpenAPI document."""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api_helpers import assert_problem, preset_request
from mambasizer.service import __version__
from mambasizer.service.api.app import create_app
from mambasizer.service.api.deployments import DeploymentsFileError
from mambasizer.service.api.examples import COMPARE_EXAMPLES, PLAN_EXAMPLES
from mambasizer.service.planner import plan
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
PLAN_GAUGES = (
    "mambasizer_plan_max_running_requests",
    "mambasizer_plan_max_total_num_tokens",
    "mambasizer_plan_max_mamba_cache_size",
    "mambasizer_plan_mamba_pool_bytes",
    "mambasizer_plan_kv_pool_bytes",
    "mambasizer_plan_feasible",
)


def scrape(client) -> dict:
    resp = client.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(resp.text)}


def samples(families: dict, name: str, sample_name: str | None = None) -> dict:
    fam = families[name]
    return {tuple(sorted(s.labels.items())): s.value for s in fam.samples if s.name == (sample_name or name)}


DEPLOYMENTS = """\
kimi-pp2:
  model: {preset: kimi-linear-48b-a3b-instruct}
  server_args: {tp_size: 2, pp_size: 2}
  budget: {free_gib_before_load: 139.6, free_gib_after_load: 94.0, gpu_memory_mib: 143771}
qwen3-next-tp4:
  model: {preset: qwen3-next-80b-a3b-instruct}
  sglang_args: ["--tp-size", "4", "--host", "0.0.0.0"]
  budget: {rest_gib: 30}
too-small:
  model: {preset: qwen3-next-80b-a3b-instruct}
  server_args: {tp_size: 4}
  budget: {rest_gib: 0.1}
broken:
  model: {preset: no-such-model}
  budget: {rest_gib: 30}
"""


@pytest.fixture()
def deployments_file(tmp_path):
    path = tmp_path / "deployments.yaml"
    path.write_text(DEPLOYMENTS)
    return path


# --------------------------------------------------------------------------- probes


def test_livez_and_readyz(client):
    assert client.get("/livez").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ready"}


def test_head_livez_and_readyz_answer_200_without_a_body(client):
    for path in ("/livez", "/readyz"):
        r = client.head(path)
        assert r.status_code == 200, (path, r.status_code)
        assert r.content == b""
        assert r.headers.get("content-length") in (None, "0")


def test_head_readyz_is_503_outside_the_lifespan(app):
    from fastapi.testclient import TestClient

    c = TestClient(app)  # no lifespan: never ready
    assert c.head("/readyz").status_code == 503 and c.head("/readyz").content == b""
    assert c.head("/livez").status_code == 200


def test_readyz_is_503_outside_the_lifespan(app):
    # No `with`: the lifespan has not run (or has finished).
    c = TestClient(app)
    assert_problem(c.get("/readyz"), 503, field=None)
    assert c.get("/livez").status_code == 200
    with TestClient(app) as live:
        assert live.get("/readyz").status_code == 200
    assert_problem(c.get("/readyz"), 503)


def test_readyz_summarises_the_deployments(deployments_file):
    with TestClient(create_app(deployments_path=str(deployments_file))) as c:
        body = c.get("/readyz").json()
    assert body["status"] == "ready"
    d = body["deployments"]
    assert d["count"] == 4
    assert set(d["invalid"]) == {"broken"} and d["invalid"]["broken"]["field"] == "model.preset"
    assert d["infeasible"] == ["too-small"]
    assert d["last_reload_success"] is True and d["last_error"] is None
    assert str(deployments_file.parent) not in json.dumps(body)


# --------------------------------------------------------------------------- metrics


def test_metrics_text_format_and_http_series(client):
    client.post("/v1/plan", json=preset_request())
    client.get("/v1/presets/qwen3-next-80b-a3b-instruct")
    client.get("/v1/presets/nope")
    client.get("/v1/presets/other-nope")
    client.request("BREW", "/livez")
    fams = scrape(client)

    reqs = samples(fams, "mambasizer_http_requests", "mambasizer_http_requests_total")
    assert fams["mambasizer_http_requests"].type == "counter"
    assert reqs[(("method", "POST"), ("route", "/v1/plan"), ("status", "200"))] == 1.0
    # Route templates keep the label set bounded, whatever the path.
    assert reqs[(("method", "GET"), ("route", "/v1/presets/{name}"), ("status", "404"))] == 2.0
    assert reqs[(("method", "GET"), ("route", "/v1/presets/{name}"), ("status", "200"))] == 1.0
    assert reqs[(("method", "other"), ("route", "/livez"), ("status", "405"))] == 1.0

    hist = fams["mambasizer_http_request_duration_seconds"]
    assert hist.type == "histogram"
    counts = samples(fams, "mambasizer_http_request_duration_seconds", "mambasizer_http_request_duration_seconds_count")
    assert counts[(("method", "POST"), ("route", "/v1/plan"))] == 1.0
    buckets = [s for s in hist.samples if s.name.endswith("_bucket") and s.labels["route"] == "/v1/plan"]
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == 1.0

    info = samples(fams, "mambasizer_build_info")
    assert info == {(("sglang_version", "0.5.23"), ("version", __version__)): 1.0}

    # Empty until a deployments-file entry asks for a trial.
    for name in ("mambasizer_trial_measured_bytes", "mambasizer_trial_predicted_bytes", "mambasizer_trial_status"):
        assert fams[name].type == "gauge" and fams[name].samples == []
    for name in PLAN_GAUGES:
        assert fams[name].type == "gauge" and fams[name].samples == []


def test_each_app_has_its_own_registry():
    a, b = create_app(), create_app()
    with TestClient(a) as ca, TestClient(b) as cb:
        ca.get("/livez")
        ca.get("/livez")
        cb.get("/livez")
        ra = samples(scrape(ca), "mambasizer_http_requests", "mambasizer_http_requests_total")
        rb = samples(scrape(cb), "mambasizer_http_requests", "mambasizer_http_requests_total")
    key = (("method", "GET"), ("route", "/livez"), ("status", "200"))
    assert ra[key] == 2.0 and rb[key] == 1.0


def test_trial_gauges_follow_the_deployment_trials(app):
    from mambasizer.service.api.deployment_trials import PoolFigure, TrialState

    with TestClient(app) as c:
        app.state.deployment_trials.states = {"d": TrialState("d", "m", "ok", (PoolFigure(0, "kv_pool", 124, 123),))}
        fams = scrape(c)
    key = (("deployment", "d"), ("model_name", "m"), ("pool", "kv_pool"), ("pp_rank", "0"))
    assert samples(fams, "mambasizer_trial_measured_bytes") == {key: 123.0}
    assert samples(fams, "mambasizer_trial_predicted_bytes") == {key: 124.0}
    status = samples(fams, "mambasizer_trial_status")
    assert status[(("deployment", "d"), ("model_name", "m"), ("status", "ok"))] == 1.0
    assert sum(status.values()) == 1.0 and len(status) == 9


def test_deployment_gauges(deployments_file):
    with TestClient(create_app(deployments_path=str(deployments_file))) as c:
        fams = scrape(c)
    budget = {"free_gib_before_load": 139.6, "free_gib_after_load": 94.0, "gpu_memory_mib": 143771}
    kimi = plan({"model": {"preset": "kimi-linear-48b-a3b-instruct"}, "server_args": {"tp_size": 2, "pp_size": 2}, "budget": budget})
    qwen = plan(preset_request(tp_size=4))
    small = plan(preset_request(budget={"rest_gib": 0.1}, tp_size=4))

    def lab(dep, p, rank):
        return (("deployment", dep), ("model_name", p.model_name), ("pp_rank", str(rank)))

    tokens = samples(fams, "mambasizer_plan_max_total_num_tokens")
    assert tokens[lab("kimi-pp2", kimi, 0)] == tokens[lab("kimi-pp2", kimi, 1)] == kimi.max_total_num_tokens
    assert tokens[lab("qwen3-next-tp4", qwen, 0)] == qwen.max_total_num_tokens
    assert samples(fams, "mambasizer_plan_max_running_requests")[lab("kimi-pp2", kimi, 1)] == kimi.max_running_requests
    assert samples(fams, "mambasizer_plan_max_mamba_cache_size")[lab("kimi-pp2", kimi, 0)] == kimi.max_mamba_cache_size
    for st in kimi.stages:
        mamba = st.conv_state_bytes + st.ssm_state_bytes + st.intermediate_state_bytes + st.replayssm_ring_bytes
        assert samples(fams, "mambasizer_plan_mamba_pool_bytes")[lab("kimi-pp2", kimi, st.pp_rank)] == mamba
        assert samples(fams, "mambasizer_plan_kv_pool_bytes")[lab("kimi-pp2", kimi, st.pp_rank)] == st.kv_pool_bytes

    feasible = samples(fams, "mambasizer_plan_feasible")
    assert feasible[lab("kimi-pp2", kimi, 0)] == 1.0
    assert feasible[lab("too-small", small, 0)] == 0.0
    # A plan SGLang would refuse exports no pool sizes it would never allocate.
    assert lab("too-small", small, 0) not in samples(fams, "mambasizer_plan_kv_pool_bytes")
    assert not any(dict(k)["deployment"] == "broken" for k in feasible)

    valid = samples(fams, "mambasizer_deployment_input_valid")
    assert valid == {(("deployment", "broken"),): 0.0, (("deployment", "kimi-pp2"),): 1.0, (("deployment", "qwen3-next-tp4"),): 1.0, (("deployment", "too-small"),): 1.0}
    assert samples(fams, "mambasizer_deployments_last_reload_success") == {(): 1.0}
    assert samples(fams, "mambasizer_deployments_reloads", "mambasizer_deployments_reloads_total")[(("result", "success"),)] == 1.0


def test_reload_swaps_the_deployments_and_a_broken_file_keeps_them(deployments_file):
    app = create_app(deployments_path=str(deployments_file))
    store = app.state.deployments
    with TestClient(app) as c:
        before = samples(scrape(c), "mambasizer_plan_max_total_num_tokens")
        assert any(dict(k)["deployment"] == "kimi-pp2" for k in before)

        deployments_file.write_text(textwrap.dedent("""\
            qwen3-next-tp4:
              model: {preset: qwen3-next-80b-a3b-instruct}
              server_args: {tp_size: 4}
              budget: {rest_gib: 40}
        """))
        assert store.reload() is True
        after = samples(scrape(c), "mambasizer_plan_max_total_num_tokens")
        assert {dict(k)["deployment"] for k in after} == {"qwen3-next-tp4"}  # removed ones leave no series
        assert list(after.values()) == [plan(preset_request(budget={"rest_gib": 40}, tp_size=4)).max_total_num_tokens]

        deployments_file.write_text("qwen3-next-tp4: [unclosed\n")
        assert store.reload() is False
        fams = scrape(c)
        assert samples(fams, "mambasizer_plan_max_total_num_tokens") == after
        assert samples(fams, "mambasizer_deployments_last_reload_success") == {(): 0.0}
        assert samples(fams, "mambasizer_deployments_reloads", "mambasizer_deployments_reloads_total")[(("result", "failure"),)] == 1.0
        ready = c.get("/readyz").json()
        assert ready["deployments"]["last_reload_success"] is False
        assert "not valid YAML" in ready["deployments"]["last_error"]
        assert str(deployments_file) not in json.dumps(ready)


@pytest.mark.parametrize(
    "content, message",
    [
        ("a: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "must map deployment names"),
        ("'bad name!':\n  budget: {rest_gib: 1}\n", "deployment name"),
    ],
)
def test_unusable_deployments_file_at_start_up(tmp_path, content, message):
    path = tmp_path / "d.yaml"
    path.write_text(content)
    with pytest.raises(DeploymentsFileError, match=message):
        create_app(deployments_path=str(path))
    with pytest.raises(DeploymentsFileError, match="cannot read"):
        create_app(deployments_path=str(tmp_path / "missing.yaml"))


def test_empty_deployments_file(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("")
    with TestClient(create_app(deployments_path=str(path))) as c:
        assert c.get("/readyz").json()["deployments"]["count"] == 0


# --------------------------------------------------------------------------- access log


def test_one_structured_access_line_per_request(client, caplog):
    caplog.set_level(logging.INFO, logger="mambasizer.access")
    client.post("/v1/plan", json=preset_request())
    client.get("/v1/presets/nope")
    lines = [r for r in caplog.records if r.name == "mambasizer.access"]
    assert len(lines) == 2
    first, second = (r.fields for r in lines)
    assert first["method"] == "POST" and first["route"] == "/v1/plan" and first["status"] == 200
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] > 0
    assert second["route"] == "/v1/presets/{name}" and second["status"] == 404

    from mambasizer.service.api.logs import JsonFormatter

    rendered = json.loads(JsonFormatter().format(lines[0]))
    assert {"ts", "level", "logger", "msg", "method", "route", "status", "duration_ms"} <= set(rendered)


# --------------------------------------------------------------------------- OpenAPI


def test_committed_openapi_matches_the_app():
    mod = load_script(ROOT / "scripts" / "export_openapi.py", "export_openapi")
    committed = (ROOT / "openapi.json").read_text(encoding="utf-8")
    assert json.loads(committed) == create_app().openapi(), "run: python scripts/export_openapi.py"
    assert committed == mod.render(), "run: python scripts/export_openapi.py"


def test_openapi_documents_every_route_and_request_form(client):
    doc = client.get("/openapi.json").json()
    assert set(doc["paths"]) == {"/v1/plan", "/plan", "/v1/plan/compare", "/v1/check-log", "/v1/recommend", "/v1/recommend/disaggregated", "/v1/sweep", "/v1/presets", "/v1/presets/{name}", "/v1/gpus", "/livez", "/readyz", "/metrics"}
    examples = doc["paths"]["/v1/plan"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    forms = {json.dumps(e["value"]) for e in examples.values()}
    assert any('"hf_config"' in f for f in forms)
    assert any('"preset"' in f for f in forms)
    assert any('"layout"' in f for f in forms)
    assert any('"sglang_args"' in f for f in forms)
    assert any('"rest_gib"' in f for f in forms)
    assert any('"gpu_memory_mib"' in f for f in forms)
    assert any('"budget": {"gpu": "h200"}' in f for f in forms)
    assert any('"mem_fraction_static"' in f and '"free_gib_after_load"' in f for f in forms)
    assert doc["paths"]["/v1/plan"]["post"]["responses"]["422"]["content"]["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
    schema = doc["components"]["schemas"]["ApiPlanRequest"]
    assert {"model", "server_args", "sglang_args", "budget", "trial"} <= set(schema["properties"])


@pytest.mark.parametrize("route, examples", [("/v1/plan", PLAN_EXAMPLES), ("/plan", PLAN_EXAMPLES), ("/v1/plan/compare", COMPARE_EXAMPLES)])
def test_every_openapi_example_is_answered(route, examples):
    async def worker(plan_, request, options):
        return {"status": "ok"}

    with TestClient(create_app(worker=worker)) as c:
        for name, ex in examples.items():
            resp = c.post(route, json=ex["value"])
            assert resp.status_code == 200, (name, resp.text)


def test_plan_gauges_carry_sglangs_model_name_label(tmp_path):
    """The gauges join sglang:max_total_num_tokens{model_name,pp_rank}: SGLang labels its
    metrics with --served-model-name, else --model-path, and so do we."""
    path = tmp_path / "deployments.yaml"
    path.write_text(textwrap.dedent("""\
        served:
          model: {preset: qwen3-next-80b-a3b-instruct}
          sglang_args: ["--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--served-model-name", "qwen-next", "--tp-size", "4"]
          budget: {rest_gib: 30}
        by-path:
          model: {preset: qwen3-next-80b-a3b-instruct}
          sglang_args: ["--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp-size", "4"]
          budget: {rest_gib: 30}
        plain:
          model: {preset: qwen3-next-80b-a3b-instruct}
          server_args: {tp_size: 4}
          budget: {rest_gib: 30}
        """))
    with TestClient(create_app(deployments_path=str(path))) as client:
        fams = scrape(client)
    names = {dict(k)["deployment"]: dict(k)["model_name"] for k in samples(fams, "mambasizer_plan_max_total_num_tokens")}
    assert names == {"served": "qwen-next", "by-path": "Qwen/Qwen3-Next-80B-A3B-Instruct", "plain": "qwen3-next-80b-a3b-instruct"}


def test_405_allow_names_every_method_of_the_path(client):
    # /livez has a GET and a HEAD route: the 405's Allow (and `allowed`) names both, not the first route's
    r = client.options("/livez")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    assert r.json()["allowed"] == ["GET", "HEAD"]
    assert client.delete("/readyz").headers["allow"] == "GET, HEAD"
    assert client.get("/v1/plan").headers["allow"] == "POST"
