"""The Grafana dashboard: imports without inputs, asks one datasource variable, covers the
planned/live/trial/service views, and uses only metric names that are really exported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from deploy_helpers import DASHBOARD

DS = {"type": "prometheus", "uid": "${datasource}"}
# Metrics the dashboard reads from SGLang itself (not from mambasizer).
SGLANG_METRICS = {"sglang:max_total_num_tokens"}
PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
    "sum", "min", "max", "avg", "count", "rate", "irate", "increase", "histogram_quantile", "clamp_min", "clamp_max",
    "label_values", "le", "inf", "nan",
}


def load() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels(dash: dict) -> list[dict]:
    out = []
    for p in dash["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def exprs(dash: dict) -> list[str]:
    found = [t["expr"] for p in panels(dash) for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        q = var.get("query")
        if var["type"] == "query":
            q = q["query"] if isinstance(q, dict) else q
            # label_values(<series selector>, <label>): only the selector is PromQL
            m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q)
            found.append(m.group(1) if m else q)
    return found


def metric_names(expr: str) -> set[str]:
    """Metric identifiers in a PromQL expression: strip strings, label matchers, grouping
    clauses, range selectors and functions; what is left of [a-zA-Z_:][\\w:]* are metrics."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\$\w+", "", e)
    names = set()
    for m in re.finditer(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def all_metric_names(dash: dict) -> set[str]:
    names: set[str] = set()
    for e in exprs(dash):
        names |= metric_names(e)
    return names


def test_variable_queries_keep_only_the_series_selector():
    dash = {"panels": [], "templating": {"list": [
        {"type": "query", "query": {"query": 'label_values(mambasizer_plan_feasible{deployment=~"$deployment"}, model_name)'}}]}}
    assert exprs(dash) == ['mambasizer_plan_feasible{deployment=~"$deployment"}']
    assert all_metric_names(dash) == {"mambasizer_plan_feasible"}


def test_metric_name_extraction():
    assert metric_names('sum by (le, route) (rate(mambasizer_http_request_duration_seconds_bucket{route=~"a"}[$__rate_interval]))') == {
        "mambasizer_http_request_duration_seconds_bucket"}
    assert metric_names("max by (model_name, pp_rank) (sglang:max_total_num_tokens) / on (model_name, pp_rank) max(x_y)") == {
        "sglang:max_total_num_tokens", "x_y"}


def test_dashboard_loads_with_no_import_inputs():
    text = DASHBOARD.read_text()
    dash = json.loads(text)
    assert "__inputs" not in dash and "__requires" not in dash
    assert "${DS_" not in text and "$DS_" not in text
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    assert "id" not in dash or dash["id"] is None  # importable into any Grafana


def test_datasource_is_a_template_variable_used_everywhere():
    dash = load()
    (ds_var,) = [v for v in dash["templating"]["list"] if v["type"] == "datasource"]
    assert ds_var["name"] == "datasource" and ds_var["query"] == "prometheus"
    for p in panels(dash):
        if p["type"] == "row":
            continue
        assert p["datasource"] == DS, p["title"]
        for t in p["targets"]:
            assert t["datasource"] == DS, p["title"]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            assert v["datasource"] == DS


def test_panels_are_laid_out_and_unique():
    dash = load()
    ids = [p["id"] for p in panels(dash)]
    assert len(ids) == len(set(ids))
    cells = set()
    for p in panels(dash):
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"panel {p['title']!r} overlaps another"
                cells.add((x, y))
        for t in p.get("targets", []):
            assert t["expr"].count("(") == t["expr"].count(")"), t["expr"]


def test_dashboard_covers_planned_live_trial_and_service():
    dash = load()
    names = all_metric_names(dash)
    for needed in [
        "mambasizer_plan_max_running_requests", "mambasizer_plan_max_total_num_tokens",
        "mambasizer_plan_max_mamba_cache_size", "mambasizer_plan_mamba_pool_bytes", "mambasizer_plan_kv_pool_bytes",
        "mambasizer_plan_feasible", "mambasizer_build_info", "mambasizer_http_requests_total",
        "mambasizer_http_request_duration_seconds_bucket", "mambasizer_trial_measured_bytes",
        "mambasizer_trial_predicted_bytes", "mambasizer_trial_status", "sglang:max_total_num_tokens",
    ]:
        assert needed in names, needed
    joined = [e for e in exprs(dash) if "sglang:max_total_num_tokens" in e and "mambasizer_plan" in e]
    assert joined and all(re.search(r"on\s*\(\s*model_name,\s*pp_rank\s*\)", e) for e in joined)
    assert any("mambasizer_trial_measured_bytes" in e and "mambasizer_trial_predicted_bytes" in e for e in exprs(dash))
    assert any('status=~"5.."' in e for e in exprs(dash))


def test_live_metric_is_one_sglang_exports_with_the_join_labels():
    """sglang:max_total_num_tokens exists in the SGLang 0.5.23 wheel with model_name and pp_rank."""
    import importlib.util

    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the sglang wheel is not installed (scripts/test.sh installs it)")
    root = Path(next(iter(spec.submodule_search_locations)))
    src = (root / "srt" / "observability" / "metrics_collector.py").read_text()
    assert 'name="sglang:max_total_num_tokens"' in src
    assert '"model_name":' in src and '"pp_rank":' in src


# --------------------------------------------------------------------------- against the real app


def _exported_names(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names


def _is_exported(name: str, exported: set[str]) -> bool:
    if name in exported:
        return True
    for suffix in ("_bucket", "_sum", "_count", "_total", "_created"):
        if name.endswith(suffix) and name[: -len(suffix)] in exported:
            return True
    return name + "_total" in exported


def _app_client(tmp_path):
    try:
        from mambasizer.service.api.app import create_app
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == "mambasizer.service.api" or exc.name.startswith("mambasizer.service.api")):
            pytest.skip("mambasizer.service.api is not in this tree yet (issue 3): the dashboard's metric names "
                        "are checked against /metrics once it lands")
        raise
    import inspect

    from fastapi.testclient import TestClient

    deployments = tmp_path / "deployments.yaml"
    deployments.write_text(
        "qwen3-next-tp4:\n  model: {preset: qwen3-next-80b-a3b-instruct}\n  server_args: {tp_size: 4}\n"
        "  budget: {rest_gib: 40}\n"
    )
    params = inspect.signature(create_app).parameters
    kwargs = {}
    for name in params:
        if "deployment" in name:
            kwargs[name] = str(deployments)
    return TestClient(create_app(**kwargs)), bool(kwargs)


def test_every_dashboard_metric_is_exported_by_the_app(tmp_path):
    client, _ = _app_client(tmp_path)
    with client:
        client.post("/v1/plan", json={"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"rest_gib": 40}})
        response = client.get("/metrics")
    assert response.status_code == 200
    exported = _exported_names(response.text)
    wanted = {n for n in all_metric_names(load()) if n not in SGLANG_METRICS}
    missing = sorted(n for n in wanted if not _is_exported(n, exported))
    assert not missing, f"dashboard uses metrics /metrics does not export: {missing}"
