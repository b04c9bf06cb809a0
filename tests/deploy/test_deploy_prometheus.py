"""The dashboard and the alert rules on a real Prometheus (Debian's `prometheus` package;
scripts/test.sh installs it).

One Prometheus process (its own config, storage in tmp, a loopback port, a 1 s scrape and
evaluation interval) scrapes:

* a real `mambasizer serve` with a deployments file (a Kimi-Linear PP2 deployment, and a tiny
  one with `trial: {device: cpu}` that runs on a real `mambasizer worker` on the CPU), as two
  targets with different `replica` labels: two API replicas exporting the same plans;
* a static endpoint serving tests/data/prometheus/sglang-0.5.23-metrics.prom, what SGLang
  0.5.23's own SchedulerMetricsCollector exports for that deployment's two stages
  (record_sglang_metrics.py; live capacity 2 % under the plan);

and evaluates the chart's alert rules (rendered by Helm, release "ms" in namespace "sizing").
Then every PromQL expression of the Grafana dashboard is evaluated through the HTTP API:
each succeeds, returns data, and carries no per-replica label (panels aggregate replicas).
Every loop is bounded; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from deploy_helpers import CHART, DASHBOARD, FULL_VALUES, ROOT, documents, one, render
from samples import TINY
from serving import free_port, mambasizer_command, wait_http

SGLANG_EXPOSITION = ROOT / "tests" / "data" / "prometheus" / "sglang-0.5.23-metrics.prom"
RELEASE, NAMESPACE = "ms", "sizing"
JOB = f"{RELEASE}-mambasizer"  # the API Service's name: the ServiceMonitor's job label
RATE_INTERVAL = "10s"  # what Grafana's $__rate_interval becomes at a 1 s scrape interval
DEADLINE_S = 120.0

# The deployments file: the Kimi-Linear deployment the SGLang exposition was recorded for, and
# a tiny explicit layout (a few MiB) whose trial runs on the CPU worker.
DEPLOYMENTS = {
    "kimi-pp2": {
        "model": {"preset": "kimi-linear-48b-a3b-instruct"},
        "sglang_args": ["--tp-size", "2", "--pp-size", "2", "--served-model-name", "kimi-linear"],
        "budget": {"rest_gib": 40},
    },
    "tiny": {**TINY, "trial": {"device": "cpu"}},
}


class _Procs:
    """Processes this test started; each stopped by its own handle."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], log: Path, cwd: Path, env: dict | None = None) -> subprocess.Popen:
        with log.open("w") as fh:
            proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


def _static_metrics_server(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target, with Grafana's variables as Grafana sends them
    for "All"."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    panels = [p for top in dash["panels"] for p in [top, *top.get("panels", [])]]
    for p in panels:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$__rate_interval", RATE_INTERVAL)
            expr = re.sub(r"\$\{?(deployment|model_name)\}?", ".*", expr)
            out.append((f"{p['title']} [{t['refId']}]", expr))
    return out


def dashboard_variables() -> list[tuple[str, str, str]]:
    """(variable, series selector, label) of each label_values() variable."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for v in dash["templating"]["list"]:
        if v["type"] != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q)
        assert m, q
        out.append((v["name"], re.sub(r"\$\{?(deployment|model_name)\}?", ".*", m.group(1)), m.group(2)))
    return out


def test_dashboard_queries_are_found():
    queries = dashboard_queries()
    assert len(queries) >= 20 and not any("$" in q for _, q in queries)
    assert {name for name, _, _ in dashboard_variables()} == {"deployment", "model_name"}


def test_the_recorded_sglang_exposition_is_sglangs_own():
    """Every family of the recorded file is declared, with that name, in SGLang 0.5.23's
    metrics_collector.py, and the capacity gauge carries the labels the join uses."""
    import importlib.util

    from prometheus_client.parser import text_string_to_metric_families

    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the sglang wheel is not installed (scripts/test.sh installs it)")
    root = Path(next(iter(spec.submodule_search_locations)))
    src = (root / "srt" / "observability" / "metrics_collector.py").read_text()
    text = SGLANG_EXPOSITION.read_text()
    declared = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(declared) > 50 and all(n.startswith("sglang:") for n in declared)
    for name in declared:  # prometheus_client adds a <name>_created gauge beside counters and histograms
        base = name.removesuffix("_created")
        assert any(f'name="{n}"' in src for n in (name, base, f"{base}_total")), name
    fams = list(text_string_to_metric_families(text))
    (tokens,) = [f for f in fams if f.name == "sglang:max_total_num_tokens"]
    assert {s.labels["pp_rank"] for s in tokens.samples} == {"0", "1"}
    assert all(set(s.labels) == {"model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"} for s in tokens.samples)
    assert {s.labels["model_name"] for s in tokens.samples} == {"kimi-linear"}


def _query(base: str, expr: str) -> dict:
    r = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10)
    return r.json()


def test_dashboard_and_rules_on_a_real_prometheus(tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.skip("prometheus is not installed (scripts/test.sh installs Debian's package)")
    pytest.importorskip("torch")  # the CPU trial worker
    procs = _Procs()
    sglang = _static_metrics_server(SGLANG_EXPOSITION.read_bytes())
    try:
        worker_port = free_port()
        worker = procs.start(mambasizer_command() + ["worker", "--host", "127.0.0.1", "--port", str(worker_port), "--device", "cpu"],
                             tmp_path / "worker.log", tmp_path)
        wait_http(f"http://127.0.0.1:{worker_port}/livez", worker, tmp_path / "worker.log", "mambasizer worker")
        deployments = tmp_path / "deployments.yaml"
        deployments.write_text(yaml.safe_dump(DEPLOYMENTS, sort_keys=False))
        api_port = free_port()
        api = procs.start(mambasizer_command() + ["serve", "--host", "127.0.0.1", "--port", str(api_port), "--deployments", str(deployments)],
                          tmp_path / "api.log", tmp_path,
                          env={"MAMBASIZER_WORKER_URL": f"http://127.0.0.1:{worker_port}", "MAMBASIZER_TRIALS_ENABLED": ""})
        wait_http(f"http://127.0.0.1:{api_port}/readyz", api, tmp_path / "api.log", "mambasizer serve")

        rule = one(documents(render(CHART, FULL_VALUES, name=RELEASE, namespace=NAMESPACE)), "PrometheusRule")
        (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
        api_target = f"127.0.0.1:{api_port}"
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(tmp_path / "rules.yaml")],
            "scrape_configs": [
                {"job_name": JOB, "static_configs": [
                    {"targets": [api_target], "labels": {"namespace": NAMESPACE, "replica": "a"}},
                    {"targets": [api_target], "labels": {"namespace": NAMESPACE, "replica": "b"}},
                ]},
                {"job_name": "sglang", "static_configs": [
                    {"targets": [f"127.0.0.1:{sglang.server_address[1]}"], "labels": {"namespace": "serving"}},
                ]},
            ],
        }
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        prom_port = free_port()
        prom = procs.start([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                            f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}",
                            "--log.level=warn"], tmp_path / "prometheus.log", tmp_path)
        base = f"http://127.0.0.1:{prom_port}"
        wait_http(f"{base}/-/ready", prom, tmp_path / "prometheus.log", "prometheus", timeout_s=60)

        # Traffic for the service panels: plans (200) and a refused one (422).
        client = httpx.Client(base_url=f"http://127.0.0.1:{api_port}", timeout=30)
        plan = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"rest_gib": 40}}

        queries = dashboard_queries()
        deadline = time.monotonic() + DEADLINE_S
        while True:
            client.post("/v1/plan", json=plan)
            client.post("/v1/plan", json={"model": {"preset": "no-such-model"}})
            answers = {where: _query(base, expr) for where, expr in queries}
            empty = [w for w, a in answers.items() if a.get("status") != "success" or not a["data"]["result"]]
            trial_done = _query(base, 'mambasizer_trial_status{deployment="tiny", status="ok"} == 1')["data"]["result"]
            if not empty and trial_done:
                break
            if time.monotonic() > deadline:
                errors = {w: a.get("error") for w, a in answers.items() if a.get("status") != "success"}
                pytest.fail(f"dashboard queries without data after {DEADLINE_S:g} s: {empty}; errors: {errors}; "
                            f"api log: {(tmp_path / 'api.log').read_text()[-1500:]}")
            time.sleep(1.0)
        client.close()

        # Both replicas and SGLang are scraped; every panel aggregates the replicas away.
        up = _query(base, "up")["data"]["result"]
        assert sorted((s["metric"]["job"], s["metric"].get("replica", "")) for s in up if s["value"][1] == "1") == [
            (JOB, "a"), (JOB, "b"), ("sglang", "")]
        for where, expr in queries:
            for series in answers[where]["data"]["result"]:
                assert not {"replica", "instance"} & set(series["metric"]), f"{where}: one line per replica: {expr}"

        # The numbers the panels show are the service's and SGLang's.
        by_rank = {s["metric"]["pp_rank"]: float(s["value"][1]) for s in answers["Live / planned KV tokens [A]"]["data"]["result"]}
        assert set(by_rank) == {"0", "1"} and all(0.979 < v < 0.981 for v in by_rank.values()), by_rank
        drift = answers["Trial drift: measured - predicted [A]"]["data"]["result"]
        assert drift and all(float(s["value"][1]) == 0.0 for s in drift)  # CPU: measured == predicted
        assert {s["metric"]["deployment"] for s in drift} == {"tiny"}
        status = answers["Trial status per deployment [A]"]["data"]["result"]
        assert [(s["metric"]["deployment"], s["metric"]["status"]) for s in status] == [("tiny", "ok")]

        # Grafana's variable queries (label values of a series selector).
        for name, selector, label in dashboard_variables():
            r = httpx.get(f"{base}/api/v1/label/{label}/values", params={"match[]": selector}, timeout=10).json()
            assert r["status"] == "success", r
            want = {"deployment": ["kimi-pp2", "tiny"], "model_name": ["explicit-layout", "kimi-linear"]}[name]
            assert sorted(r["data"]) == want, (name, r["data"])

        # The chart's rules load and evaluate without error; the live capacity 2 % under the plan
        # is pending (for: 15m) on both stages, and nothing else is.
        deadline = time.monotonic() + 30
        while True:
            rules = httpx.get(f"{base}/api/v1/rules", timeout=10).json()["data"]["groups"]
            alerts = httpx.get(f"{base}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
            evaluated = all(r.get("lastEvaluation", "").startswith("20") for g in rules for r in g["rules"])
            if evaluated and alerts:
                break
            assert time.monotonic() < deadline, (rules, alerts)
            time.sleep(0.5)
        health = {r["name"]: (r["health"], r.get("lastError", "")) for g in rules for r in g["rules"]}
        assert len(health) == 8 and all(h == ("ok", "") for h in health.values()), health
        firing = sorted((a["labels"]["alertname"], a["labels"].get("pp_rank"), a["state"]) for a in alerts)
        assert firing == [("MambasizerLiveCapacityDiffersFromPlan", "0", "pending"),
                          ("MambasizerLiveCapacityDiffersFromPlan", "1", "pending")], firing
    finally:
        procs.stop()
        sglang.shutdown()
        sglang.server_close()
