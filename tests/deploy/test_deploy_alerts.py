"""The chart's PrometheusRule: rendered by real Helm, its rule groups checked and unit-tested
by Prometheus' own promtool (kubernetes-validate has no schema for this CRD).

tests/data/prometheus/alerts_test.yaml holds the promtool unit tests: each alert fires on
the series it names and stays silent on its neighbours."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from deploy_helpers import CHART, FULL_VALUES, ROOT, by_kind, documents, one, render

ALERTS_TEST = ROOT / "tests" / "data" / "prometheus" / "alerts_test.yaml"
ALERTS = {
    "MambasizerPlanInfeasible", "MambasizerUpgradeRegression", "MambasizerDeploymentsReloadFailed", "MambasizerLiveCapacityDiffersFromPlan",
    "MambasizerTrialDrift", "MambasizerTrialFailed", "MambasizerHighErrorRate", "MambasizerHeavyRequestsShed",
}


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool is not installed (scripts/test.sh installs Debian's prometheus package)")
    return path


def rule_groups(values: dict, **kw) -> list[dict]:
    return one(documents(render(CHART, values, **kw)), "PrometheusRule")["spec"]["groups"]


def run_promtool(tmp_path: Path, groups: list[dict], *args: str) -> subprocess.CompletedProcess:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    shutil.copy(ALERTS_TEST, tmp_path / ALERTS_TEST.name)
    target = rules if args[0] == "check" else tmp_path / ALERTS_TEST.name
    return subprocess.run([promtool(), *args, str(target)], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def with_values(**overrides) -> dict:
    values = copy.deepcopy(FULL_VALUES)
    values.setdefault("prometheusRule", {}).update(overrides)
    return values


def test_rule_follows_the_service_monitor():
    assert by_kind(documents(render(CHART)), "PrometheusRule") == []  # default: no ServiceMonitor
    assert by_kind(documents(render(CHART, with_values(enabled=False))), "PrometheusRule") == []
    no_sm = copy.deepcopy(FULL_VALUES)
    no_sm["serviceMonitor"]["enabled"] = False
    assert by_kind(documents(render(CHART, no_sm)), "PrometheusRule") == []


def test_rule_metadata_and_every_alert_has_a_runbook(full_docs):
    rule = one(full_docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["name"] == "ms-mambasizer" and rule["metadata"]["namespace"] == "sizing"
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert set(alerts) == ALERTS
    for name, r in alerts.items():
        ann = r["annotations"]
        assert ann["summary"] and ann["description"], name
        assert len(ann["runbook"]) > 60 and "\n" not in ann["runbook"], name
        assert r["labels"]["severity"] in {"critical", "warning"}, name
    # this release's series only, and the join SGLang's own metric allows
    assert 'job="ms-mambasizer", namespace="sizing"' in alerts["MambasizerPlanInfeasible"]["expr"]
    live = alerts["MambasizerLiveCapacityDiffersFromPlan"]["expr"]
    assert "sglang:max_total_num_tokens" in live and "on (model_name, pp_rank)" in live


def test_values_reach_the_rules():
    values = with_values(
        labels={"release": "kube-prometheus-stack"},
        additionalAlertLabels={"team": "inference"},
        liveCapacity={"tolerancePercent": 2.5, "for": "30m", "severity": "critical"},
        errorRate={"thresholdPercent": 1, "window": "10m", "for": "2m", "severity": "warning"},
    )
    rule = one(documents(render(CHART, values)), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    live = alerts["MambasizerLiveCapacityDiffersFromPlan"]
    assert live["for"] == "30m" and live["labels"] == {"severity": "critical", "team": "inference"}
    assert live["expr"].endswith("* 100 > 2.5")
    err = alerts["MambasizerHighErrorRate"]
    assert "[10m]" in err["expr"] and err["expr"].endswith("* 100 > 1") and err["for"] == "2m"


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"liveCapacity": {"tolerancePercent": -1, "for": "15m", "severity": "warning"}}, "/prometheusRule/liveCapacity/tolerancePercent"),
        ({"errorRate": {"thresholdPercent": 5, "window": "five minutes", "for": "10m", "severity": "warning"}}, "/prometheusRule/errorRate/window"),
        ({"trialDrift": {"tolerancePercent": 1, "for": "5m", "severity": "page me"}}, "/prometheusRule/trialDrift/severity"),
        ({"planInfeasible": {"for": "5m", "severity": ""}}, "/prometheusRule/planInfeasible/severity"),
        ({"runbooks": True}, "/prometheusRule"),
    ],
)
def test_bad_rule_values_are_refused_by_the_schema(overrides, path):
    with pytest.raises(Exception) as exc:
        render(CHART, with_values(**overrides))
    assert path.split("/")[-1] in str(exc.value), str(exc.value)


def test_promtool_checks_the_rendered_rules(tmp_path):
    out = run_promtool(tmp_path, rule_groups(FULL_VALUES), "check", "rules")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in out.stdout


def test_promtool_unit_tests_pass_on_the_rendered_rules(tmp_path):
    out = run_promtool(tmp_path, rule_groups(FULL_VALUES), "test", "rules")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_promtool_unit_tests_catch_a_changed_threshold(tmp_path):
    """The unit tests are tight: at a 3 % tolerance the 2 % live difference no longer fires."""
    groups = rule_groups(with_values(liveCapacity={"tolerancePercent": 3, "for": "15m", "severity": "warning"}))
    out = run_promtool(tmp_path, groups, "test", "rules")
    assert out.returncode == 1
    assert "MambasizerLiveCapacityDiffersFromPlan" in out.stdout + out.stderr


def test_promtool_unit_tests_catch_a_changed_upgrade_tolerance(tmp_path):
    """At a 1 % tolerance the 0.6 % KV-token loss of Nemotron-H 0.5.16 -> 0.5.23 no longer fires."""
    groups = rule_groups(with_values(upgradeRegression={"tolerancePercent": 1, "for": "5m", "severity": "warning"}))
    out = run_promtool(tmp_path, groups, "test", "rules")
    assert out.returncode == 1
    assert "MambasizerUpgradeRegression" in out.stdout + out.stderr and "nemotron-pp4" in out.stdout + out.stderr


def test_upgrade_regression_values_reach_the_rule():
    rule = one(documents(render(CHART, with_values(upgradeRegression={"tolerancePercent": 2.5, "for": "1h", "severity": "critical"}))),
               "PrometheusRule")
    alert = next(r for g in rule["spec"]["groups"] for r in g["rules"] if r["alert"] == "MambasizerUpgradeRegression")
    assert alert["for"] == "1h" and alert["labels"]["severity"] == "critical"
    assert alert["expr"].count("* (1 - 2.5 / 100)") == 2
    assert 'mambasizer_plan_release_feasible{job="ms-mambasizer", namespace="sizing", running="false"}' in alert["expr"]
