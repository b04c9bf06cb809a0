"""The deployments file's `upgrade_to`: each entry planned at the releases it names, exported as
`mambasizer_plan_release_*{sglang_version, running}` beside the running release's figures (what
the chart's MambasizerUpgradeRegression alert reads; tests/deploy/test_deploy_alerts.py runs it)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mambasizer.service.api.app import create_app
from mambasizer.service.planner import plan

NEMOTRON = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2, "pp_size": 4, "mem_fraction_static": 0.88},
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 110.0}}
DEPLOYMENTS = """\
nemotron-pp4:
  model: {preset: nemotron-h-56b-base-8k}
  sglang_args: ["--tp-size", "2", "--pp-size", "4", "--mem-fraction-static", "0.88"]
  budget: {free_gib_before_load: 139.6, free_gib_after_load: 110.0}
  sglang_version: "0.5.16"
  upgrade_to: ["0.5.17", "0.5.23"]
kimi-k3:
  model: {preset: kimi-k3}
  server_args: {tp_size: 8, pp_size: 8}
  budget: {rest_gib: 30}
  upgrade_to: "0.5.16"
plain:
  model: {preset: qwen3-next-80b-a3b-instruct}
  server_args: {tp_size: 4}
  budget: {rest_gib: 30}
twice:
  model: {preset: qwen3-next-80b-a3b-instruct}
  server_args: {tp_size: 4}
  budget: {rest_gib: 30}
  upgrade_to: ["0.5.22", "0.5.22"]
itself:
  model: {preset: qwen3-next-80b-a3b-instruct}
  server_args: {tp_size: 4}
  budget: {rest_gib: 30}
  upgrade_to: "0.5.23"
"""


def metrics(tmp_path):
    path = tmp_path / "deployments.yaml"
    path.write_text(DEPLOYMENTS)
    with TestClient(create_app(deployments_path=str(path))) as c:
        ready = c.get("/readyz").json()
        fams = {f.name: f for f in text_string_to_metric_families(c.get("/metrics").text)}
    return ready, fams


def values(fams, name, deployment):
    return {(s.labels["sglang_version"], s.labels["running"], s.labels["pp_rank"]): s.value
            for s in fams[name].samples if s.labels["deployment"] == deployment}


def test_every_release_named_is_planned_and_exported(tmp_path):
    ready, fams = metrics(tmp_path)
    plans = {v: plan({**NEMOTRON, "sglang_version": v}) for v in ("0.5.16", "0.5.17", "0.5.23")}
    tokens = values(fams, "mambasizer_plan_release_max_total_num_tokens", "nemotron-pp4")
    requests = values(fams, "mambasizer_plan_release_max_running_requests", "nemotron-pp4")
    assert set(tokens) == {(v, "true" if v == "0.5.16" else "false", str(r)) for v in plans for r in range(4)}
    for v, p in plans.items():
        running = "true" if v == "0.5.16" else "false"
        assert tokens[(v, running, "0")] == p.max_total_num_tokens
        assert requests[(v, running, "3")] == p.max_running_requests
    # The README's figures: 0.5.16 -> 0.5.23 plans 8646665 -> 8594402 KV tokens, 25 -> 99 requests.
    assert (tokens[("0.5.16", "true", "1")], tokens[("0.5.23", "false", "1")]) == (8646665, 8594402)
    assert (requests[("0.5.16", "true", "1")], requests[("0.5.23", "false", "1")]) == (25, 99)
    slack = values(fams, "mambasizer_plan_release_slack_bytes", "nemotron-pp4")
    assert (slack[("0.5.16", "true", "1")], slack[("0.5.23", "false", "1")]) == (53561167456, 21364060608)
    # The running release's own gauges are unchanged (no release label).
    own = {s.labels["pp_rank"]: s.value for s in fams["mambasizer_plan_max_total_num_tokens"].samples
           if s.labels["deployment"] == "nemotron-pp4"}
    assert own == {str(r): 8646665 for r in range(4)} and "sglang_version" not in fams["mambasizer_plan_feasible"].samples[0].labels
    assert "nemotron-pp4" not in ready["deployments"]["invalid"]


def test_a_release_that_cannot_load_the_model_exports_feasible_0(tmp_path):
    _, fams = metrics(tmp_path)
    feasible = values(fams, "mambasizer_plan_release_feasible", "kimi-k3")
    assert feasible == {**{("0.5.23", "true", str(r)): 1.0 for r in range(8)}, **{("0.5.16", "false", str(r)): 0.0 for r in range(8)}}
    assert not any(k[0] == "0.5.16" for k in values(fams, "mambasizer_plan_release_max_total_num_tokens", "kimi-k3"))


def test_without_upgrade_to_only_the_running_release(tmp_path):
    _, fams = metrics(tmp_path)
    assert set(values(fams, "mambasizer_plan_release_feasible", "plain")) == {("0.5.23", "true", "0")}


def test_bad_upgrade_to_is_invalid_input_naming_the_field(tmp_path):
    ready, _ = metrics(tmp_path)
    invalid = ready["deployments"]["invalid"]
    assert invalid["twice"] == {"field": "upgrade_to", "message": "names a release twice"}
    assert invalid["itself"]["field"] == "upgrade_to" and "is the release the deployment runs" in invalid["itself"]["message"]
