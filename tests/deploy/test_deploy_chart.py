"""The Helm chart: renders with real Helm, lints clean, validates against Kubernetes schemas,
wires the API, worker, watch file, monitoring and preflight hook together."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import yaml

from deploy_helpers import (
    CHART,
    CRD_KINDS,
    DASHBOARD,
    FULL_VALUES,
    HOOK_ANNOTATIONS,
    LIBRARY_CHART,
    ROOT,
    STANDALONE_DIR,
    by_kind,
    copy_chart,
    documents,
    helm,
    k8s_validate,
    one,
    render,
)

# --------------------------------------------------------------------------- render + validate


def test_default_values_render_the_api_only(default_docs):
    kinds = sorted(d["kind"] for d in default_docs)
    assert kinds == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"]
    for doc in default_docs:
        k8s_validate(doc)


def test_full_values_render_every_part_and_validate(full_docs):
    kinds = sorted(d["kind"] for d in full_docs)
    assert kinds == sorted([
        "ConfigMap", "ConfigMap",  # deployments watch file, dashboard
        "Deployment", "Deployment",  # api, worker
        "HorizontalPodAutoscaler",
        "Job",  # preflight hook
        "NetworkPolicy",  # only the API reaches the worker
        "PodDisruptionBudget",  # api
        "Secret", "Secret",  # worker token, trial client token
        "Service", "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "PrometheusRule",  # alerts, on with the ServiceMonitor
    ])
    for doc in full_docs:
        if doc["kind"] in CRD_KINDS:
            continue  # CRDs: the ServiceMonitor is checked structurally below, the rule by promtool
        k8s_validate(doc)


def test_every_resource_is_namespaced_and_labelled(full_docs):
    for doc in full_docs:
        meta = doc["metadata"]
        assert meta["namespace"] == "sizing", meta["name"]
        assert meta["labels"]["app.kubernetes.io/instance"] == "ms"
        assert len(meta["name"]) <= 63


def test_long_release_names_stay_valid():
    docs = documents(render(CHART, FULL_VALUES, name="a" * 53))
    for doc in docs:
        if doc["kind"] not in CRD_KINDS:
            k8s_validate(doc)


@pytest.mark.parametrize("values", [{}, FULL_VALUES], ids=["default", "full"])
def test_helm_lint_is_clean(values):
    report = helm().lint(str(CHART), copy.deepcopy(values), strict=True)
    assert report["errors"] == []
    # severity: 1 info, 2 warning, 3 error. The only info helm raises is "icon is recommended".
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == []


def test_helm_lint_library_chart_is_clean():
    report = helm().lint(str(LIBRARY_CHART), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


# --------------------------------------------------------------------------- api


def _container(deployment: dict) -> dict:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def test_api_deployment_probes_args_and_watch_file(default_docs):
    dep = one(default_docs, "Deployment", "api")
    pod = dep["spec"]["template"]["spec"]
    c = _container(dep)
    assert dep["spec"]["replicas"] == 2
    assert c["command"] == ["mambasizer"]
    assert c["args"] == ["serve", "--host", "0.0.0.0", "--port", "8000", "--deployments", "/etc/mambasizer/deployments.yaml",
                         "--heavy-workers", "2", "--heavy-queue", "8", "--request-deadline", "10", "--heavy-worker-memory", "1536",
                         "--heavy-per-client", "4"]
    assert c["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert "MAMBASIZER_WORKER_URL" not in {e["name"] for e in c.get("env", [])}
    # the watch file: a ConfigMap volume at /etc/mambasizer holding deployments.yaml
    (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/mambasizer"]
    (vol,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    cms = {d["metadata"]["name"]: d for d in by_kind(default_docs, "ConfigMap")}
    assert set(cms[vol["configMap"]["name"]]["data"]) == {"deployments.yaml"}


def test_deployments_watch_file_is_the_values_mapping(full_docs):
    cm = next(d for d in by_kind(full_docs, "ConfigMap") if "deployments.yaml" in d["data"])
    parsed = yaml.safe_load(cm["data"]["deployments.yaml"])
    assert parsed == FULL_VALUES["deployments"]
    from mambasizer.schemas import PlanRequest

    for request in parsed.values():
        PlanRequest.model_validate(request)
    # pods roll when the file changes
    dep = one(full_docs, "Deployment", "api")
    changed = copy.deepcopy(FULL_VALUES)
    changed["deployments"]["qwen3-next-tp4"]["budget"]["rest_gib"] = 41
    dep2 = one(documents(render(CHART, changed)), "Deployment", "api")
    key = "checksum/deployments"
    assert dep["spec"]["template"]["metadata"]["annotations"][key] != dep2["spec"]["template"]["metadata"]["annotations"][key]


def test_api_service_targets_the_api_pods(default_docs):
    svc = one(default_docs, "Service", "api")
    dep = one(default_docs, "Deployment", "api")
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in svc["spec"]["selector"].items())
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]


def test_hpa_scales_the_api_on_cpu(full_docs):
    hpa = one(full_docs, "HorizontalPodAutoscaler")
    dep = one(full_docs, "Deployment", "api")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": dep["metadata"]["name"]}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu" and metric["resource"]["target"]["type"] == "Utilization"
    assert "replicas" not in dep["spec"]  # the HPA owns it


# --------------------------------------------------------------------------- worker


def _token_file(deployment: dict, secret: str, key: str) -> str:
    """The path at which the pod mounts `key` of Secret `secret` (read-only)."""
    pod = deployment["spec"]["template"]["spec"]
    (vol,) = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == secret]
    assert vol["secret"]["items"] == [{"key": key, "path": key}]
    (mount,) = [m for m in _container(deployment)["volumeMounts"] if m["name"] == vol["name"]]
    assert mount["readOnly"] is True
    return f"{mount['mountPath']}/{key}"


def test_worker_gets_a_gpu_and_the_api_gets_its_url_and_token(full_docs):
    worker = one(full_docs, "Deployment", "worker")
    api = one(full_docs, "Deployment", "api")
    svc = one(full_docs, "Service", "worker")
    secret = one(full_docs, "Secret", "worker")
    wc, ac = _container(worker), _container(api)
    pod = worker["spec"]["template"]["spec"]

    assert wc["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["nodeSelector"] == FULL_VALUES["worker"]["nodeSelector"]
    assert pod["tolerations"] == FULL_VALUES["worker"]["tolerations"]
    assert pod["runtimeClassName"] == "nvidia"
    assert worker["spec"]["strategy"] == {"type": "Recreate"}
    assert wc["command"] == ["mambasizer"]
    assert wc["args"] == ["worker", "--host", "0.0.0.0", "--port", "8001",
                          "--token-file", "/var/run/secrets/mambasizer/worker/token"]
    assert wc["image"].startswith("mambasizer/worker:")
    assert wc["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert wc["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert svc["spec"]["selector"] == worker["spec"]["selector"]["matchLabels"]

    # the token travels as a read-only Secret file on both sides, never in the environment
    aenv = {e["name"]: e for e in ac["env"]}
    assert _token_file(worker, secret["metadata"]["name"], "token") == wc["args"][-1]
    assert _token_file(api, secret["metadata"]["name"], "token") == aenv["MAMBASIZER_WORKER_TOKEN_FILE"]["value"]
    for c in (wc, ac):
        assert not [e for e in c["env"] if "secretKeyRef" in e.get("valueFrom", {})]
    port = svc["spec"]["ports"][0]["port"]
    assert aenv["MAMBASIZER_WORKER_URL"]["value"] == f"http://{svc['metadata']['name']}.sizing.svc:{port}"
    assert len(secret["data"]["token"]) > 40


def test_worker_existing_secret_is_used_and_not_created():
    values = copy.deepcopy(FULL_VALUES)
    values["worker"]["auth"] = {"existingSecret": "gpu-worker-token", "secretKey": "bearer", "token": ""}
    docs = documents(render(CHART, values))
    assert [d["metadata"]["name"] for d in by_kind(docs, "Secret")] == ["ms-mambasizer-trial-token"]
    for component in ("api", "worker"):
        assert _token_file(one(docs, "Deployment", component), "gpu-worker-token", "bearer") == \
            "/var/run/secrets/mambasizer/worker/bearer"


# --------------------------------------------------------------------------- monitoring


def test_servicemonitor_selects_the_api_service(full_docs):
    sm = one(full_docs, "ServiceMonitor")
    svc = one(full_docs, "Service", "api")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    labels = svc["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
    assert sm["spec"]["namespaceSelector"] == {"matchNames": ["sizing"]}
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in svc["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert set(sm["spec"]) == {"namespaceSelector", "selector", "endpoints"}
    assert set(endpoint) <= {"port", "path", "scheme", "interval", "scrapeTimeout"}


def test_dashboard_configmap_carries_the_dashboard_json(full_docs):
    cm = next(d for d in by_kind(full_docs, "ConfigMap") if "mambasizer.json" in d.get("data", {}))
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "SGLang"}
    assert json.loads(cm["data"]["mambasizer.json"]) == json.loads(DASHBOARD.read_text())


# --------------------------------------------------------------------------- values schema


@pytest.mark.parametrize(
    "values, where",
    [
        ({"api": {"replicas": "two"}}, "/api/replicas"),
        ({"replicaCount": 3}, "replicaCount"),
        ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
        ({"worker": {"enabled": True, "gpus": 2}}, "gpus"),
        ({"serviceMonitor": {"interval": "soon"}}, "/serviceMonitor/interval"),
        ({"deployments": {"x": {"model": {"preset": "a"}, "budget": {"rest_gib": 1}, "server_args": {"tp_sizee": 2}}}}, "tp_sizee"),
        ({"deployments": {"x": {"model": {"preset": "a"}}}}, "budget"),
        ({"autoscaling": {"enabled": True}, "api": {"resources": {"requests": {"cpu": None}}}}, "cpu"),
        ({"dashboards": {"labels": {"grafana_dashboard": "0"}}}, "/dashboards/labels"),
        ({"deployments": {"x": {"model": {"preset": "a"}, "budget": {"rest_gib": 1}, "server_args": {},
                                "sglang_args": ["--tp-size", "2"]}}}, "/deployments/x"),
        ({"deployments": {"x": {"model": {"preset": "a"}, "budget": {"rest_gib": 1}, "sglang_args": [2]}}},
         "/deployments/x/sglang_args/0"),
    ],
)
def test_values_schema_rejects_bad_values(values, where):
    with pytest.raises(helm().HelmValuesError) as info:
        render(CHART, values)
    assert where in str(info.value)


def test_deployments_accept_what_the_api_accepts():
    """A deployments entry may carry sglang_args in place of server_args, as POST /v1/plan
    and the API's deployments file take it; the limits are the API's."""
    values = {"deployments": {"pp-sglang-args": {"model": {"preset": "qwen3-next-80b-a3b-instruct"},
                                                 "budget": {"rest_gib": 40},
                                                 "sglang_args": ["--tp-size", "4", "--max-running-requests", "64"]}}}
    docs = documents(render(CHART, values))
    cm = next(d for d in by_kind(docs, "ConfigMap") if "deployments.yaml" in d["data"])
    assert yaml.safe_load(cm["data"]["deployments.yaml"]) == values["deployments"]
    import importlib.util

    if importlib.util.find_spec("mambasizer.service.api.wire") is None:
        return
    from mambasizer.service.api import wire
    schema = json.loads((CHART / "values.schema.json").read_text())["$defs"]["PlanRequest"]["properties"]["sglang_args"]
    assert schema["maxItems"] == wire.MAX_SGLANG_ARGS
    assert schema["items"]["maxLength"] == wire.MAX_SGLANG_ARG_CHARS


def test_values_schema_is_closed_everywhere():
    """additionalProperties: false on every object the chart reads (maps of user keys aside)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    open_maps = {"labels", "annotations", "stringMap", "resourceList"}

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, path
            for k, v in node.items():
                if path.endswith("$defs") and k in open_maps | {"PlanRequest"}:
                    continue
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}")

    walk(schema, "#")
    # every top-level value in values.yaml is described
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert set(values) <= set(schema["properties"])


def test_derived_files_are_in_sync():
    """values.schema.json's PlanRequest is the pydantic contract; the copy-paste hook template
    and the chart's vendored dependency carry the library chart's _preflight.tpl."""
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "deploy" / "sync.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- preflight hook


def _assert_hook_job(job: dict) -> dict:
    ann = job["metadata"]["annotations"]
    for k, v in HOOK_ANNOTATIONS.items():
        assert ann[k] == v
    int(ann["helm.sh/hook-weight"])  # a number, as a string
    spec = job["spec"]
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] > 0
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    k8s_validate(job)
    return c


def test_chart_preflight_hook_job_preset_form(full_docs):
    job = one(full_docs, "Job")
    c = _assert_hook_job(job)
    assert job["metadata"]["annotations"]["helm.sh/hook-weight"] == "-5"
    assert job["spec"]["activeDeadlineSeconds"] == 300
    assert c["image"] == "mambasizer/api:0.1.0"  # the API image carries the solver
    assert c["command"] == ["mambasizer"]
    assert c["args"] == [
        "check", "--preset", "qwen3-next-80b-a3b-instruct", "--budget-gib", "40",
        "--require-max-running-requests", "64", "--require-context-length", "32768",
        "--", "--tp-size", "4", "--max-running-requests", "64",
    ]


def test_chart_preflight_hook_job_request_form():
    values = copy.deepcopy(FULL_VALUES)
    request = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 40}}
    values["preflight"] = {"enabled": True, "request": request, "url": "http://ms-mambasizer.sizing.svc:8000",
                           "require": {"maxTotalTokens": 100000}, "hookWeight": 3, "activeDeadlineSeconds": 120}
    job = one(documents(render(CHART, values)), "Job")
    c = _assert_hook_job(job)
    assert job["metadata"]["annotations"]["helm.sh/hook-weight"] == "3"
    assert job["spec"]["activeDeadlineSeconds"] == 120
    assert c["command"][:2] == ["/bin/sh", "-c"]
    assert "mambasizer check -" in c["command"][2]
    assert c["command"][4:] == ["--require-max-total-tokens", "100000", "--url", "http://ms-mambasizer.sizing.svc:8000"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert json.loads(env["MAMBASIZER_REQUEST_JSON"]) == request


def test_preflight_request_form_runs_the_real_check_in_a_shell(tmp_path):
    """Run the rendered shell command line (as the pod would) against the real CLI."""
    values = {"preflight": {"enabled": True, "request": {
        "model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 0.01}}}}
    c = one(documents(render(CHART, values)), "Job")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "mambasizer").write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from mambasizer.service.cli import main; raise SystemExit(main())' \"$@\"\n")
    (shim / "mambasizer").chmod(0o755)
    log = tmp_path / "termination-log"
    import os

    run_env = {**os.environ, **env, "PATH": f"{shim}:{os.environ['PATH']}", "MAMBASIZER_TERMINATION_LOG": str(log),
               "PYTHONPATH": str(ROOT)}
    result = subprocess.run(c["command"], env=run_env, capture_output=True, text=True, cwd=ROOT)
    if "mambasizer.service.solver" in result.stderr and "ModuleNotFoundError" in result.stderr:  # pragma: no cover
        pytest.skip("mambasizer.service.solver not importable yet")
    assert result.returncode == 1, result.stderr
    assert "would not start" in result.stderr
    assert log.read_text().count("\n") == 1


def test_preflight_disabled_renders_no_job(default_docs):
    assert by_kind(default_docs, "Job") == []


def _sglang_chart(tmp_path, template: str, values: dict):
    chart = tmp_path / "sglang-demo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": "sglang-demo", "version": "1.2.3", "appVersion": "0.5.23",
        "dependencies": [{"name": "mambasizer-preflight", "version": "0.1.0",
                          "repository": "file://../mambasizer-preflight"}],
    }))
    (chart / "values.yaml").write_text(yaml.safe_dump(values))
    (chart / "templates" / "preflight.yaml").write_text(template)
    return chart


SGLANG_VALUES = {
    "sglang": {"modelPreset": "qwen3-next-80b-a3b-instruct", "args": ["--tp-size", "4", "--max-running-requests", "64"]},
    "mambasizerPreflight": {
        "enabled": True,
        "image": {"repository": "mambasizer/api", "tag": "0.1.0"},
        "budgetGiB": 40,
        "require": {"maxRunningRequests": 64},
    },
}

# What the README tells an SGLang chart to write: its own model and args feed the hook.
SGLANG_TEMPLATE = """\
{{- $pf := merge (dict "preset" .Values.sglang.modelPreset "sglangArgs" .Values.sglang.args) .Values.mambasizerPreflight }}
{{- include "mambasizer-preflight.job" (dict "root" $ "values" $pf) }}
"""


def test_library_chart_as_a_dependency_of_an_sglang_chart(tmp_path):
    chart = _sglang_chart(tmp_path, SGLANG_TEMPLATE, SGLANG_VALUES)
    copy_chart(LIBRARY_CHART, chart / "charts" / "mambasizer-preflight")
    docs = documents(render(chart, name="qwen-prod", namespace="llm"))
    job = one(docs, "Job")
    c = _assert_hook_job(job)
    assert job["metadata"]["name"] == "qwen-prod-mambasizer-preflight"
    assert job["metadata"]["namespace"] == "llm"
    assert c["args"] == ["check", "--preset", "qwen3-next-80b-a3b-instruct", "--budget-gib", "40",
                         "--require-max-running-requests", "64", "--", "--tp-size", "4", "--max-running-requests", "64"]
    assert [d["kind"] for d in docs] == ["Job"]  # the library adds nothing else


def test_library_chart_fails_readably_without_a_model(tmp_path):
    values = copy.deepcopy(SGLANG_VALUES)
    chart = _sglang_chart(tmp_path, '{{- include "mambasizer-preflight.job" (dict "root" $ "values" .Values.mambasizerPreflight) }}\n', values)
    copy_chart(LIBRARY_CHART, chart / "charts" / "mambasizer-preflight")
    with pytest.raises(helm().HelmError) as info:
        render(chart)
    assert "mambasizer preflight: set preset (or modelPath) or request; the forms: preset or modelPath (or --model-path in sglangArgs) with gpu (e.g. gpu: h200" in str(info.value)


def test_copy_paste_template_in_an_sglang_chart(tmp_path):
    snippet = yaml.safe_load((STANDALONE_DIR / "values-snippet.yaml").read_text())
    chart = tmp_path / "sglang-demo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: sglang-demo\nversion: 1.2.3\nappVersion: 0.5.23\n")
    (chart / "values.yaml").write_text(yaml.safe_dump(snippet))
    (chart / "templates" / "mambasizer-preflight-job.yaml").write_text(
        (STANDALONE_DIR / "mambasizer-preflight-job.yaml").read_text())
    job = one(documents(render(chart, name="qwen-prod", namespace="llm")), "Job")
    c = _assert_hook_job(job)
    assert c["image"] == "mambasizer/api:0.1.0"
    assert c["args"][:5] == ["check", "--preset", "qwen3-next-80b-a3b-instruct", "--gpu", "h200"]
    # disabled: renders nothing
    assert documents(render(chart, {"mambasizerPreflight": {"enabled": False}})) == []


# --------------------------------------------------------------------------- against the real CLI and app


def _subcommands() -> set[str]:
    from mambasizer.service.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(sub.choices or ())


@pytest.mark.parametrize("component, subcommand", [("api", "serve"), ("worker", "worker")])
def test_rendered_container_args_parse_with_the_real_cli(full_docs, component, subcommand):
    if subcommand not in _subcommands():
        pytest.skip(f"`mambasizer {subcommand}` is not in this tree yet")
    from mambasizer.service.cli import build_parser

    c = _container(one(full_docs, "Deployment", component))
    assert c["command"] == ["mambasizer"] and c["args"][0] == subcommand
    args = build_parser().parse_args(c["args"])
    assert args.command == subcommand and args.host == "0.0.0.0"
    if subcommand == "serve":
        assert args.deployments == "/etc/mambasizer/deployments.yaml"


def test_rendered_hook_args_parse_with_the_real_cli(full_docs):
    from mambasizer.service.cli import build_parser

    c = one(full_docs, "Job")["spec"]["template"]["spec"]["containers"][0]
    args = build_parser().parse_args(c["args"])
    assert args.preset == "qwen3-next-80b-a3b-instruct" and args.budget_gib == 40.0
    assert args.require_max_running_requests == 64 and args.require_context_length == 32768
    assert args.inputs == ["--tp-size", "4", "--max-running-requests", "64"]


def test_rendered_watch_file_loads_in_the_real_app(full_docs, tmp_path):
    try:
        from mambasizer.service.api.app import create_app
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("mambasizer.service.api"):
            pytest.skip("mambasizer.service.api is not in this tree yet (issue 3)")
        raise
    from fastapi.testclient import TestClient

    cm = next(d for d in by_kind(full_docs, "ConfigMap") if "deployments.yaml" in d["data"])
    path = tmp_path / "deployments.yaml"
    path.write_text(cm["data"]["deployments.yaml"])
    with TestClient(create_app(deployments_path=str(path))) as client:
        assert client.get("/livez").status_code == 200
        assert client.get("/readyz").status_code == 200
        text = client.get("/metrics").text
    lines = [line for line in text.splitlines() if line.startswith("mambasizer_plan_feasible{")]
    assert any('deployment="qwen3-next-tp4"' in line and line.endswith(" 1.0") for line in lines), lines


def test_packaged_charts_render_the_same(tmp_path):
    """`helm package` keeps everything the templates read (the dashboard file included)."""
    for chart_dir in (CHART, LIBRARY_CHART):
        archive = helm().package(str(chart_dir), destination=str(tmp_path))
        assert archive.endswith("-0.1.0.tgz")
    values = copy.deepcopy(FULL_VALUES)
    values["worker"]["auth"] = {"existingSecret": "", "secretKey": "token", "token": "fixed"}  # not random
    values["trials"]["clientToken"] = {"enabled": True, "existingSecret": "", "secretKey": "token", "token": "fixed"}
    with helm().Chart.load(str(tmp_path / "mambasizer-0.1.0.tgz")) as packaged:
        assert packaged.render(copy.deepcopy(values), name="ms", namespace="sizing") == render(CHART, values)
    with helm().Chart.load(str(tmp_path / "mambasizer-preflight-0.1.0.tgz")) as lib:
        assert lib.metadata["type"] == "library"


def test_api_heavy_pool_values_reach_serve():
    """api.heavy.* become `mambasizer serve` flags that the real CLI parser accepts with those values."""
    from mambasizer.service.cli import build_parser

    docs = documents(render(CHART, {"api": {"heavy": {"workers": 3, "queue": 0, "deadlineSeconds": 2.5, "workerMemoryMiB": 512,
                                                      "perClient": 2, "clientHeader": "X-Forwarded-For"}}}))
    args = _container(one(docs, "Deployment", "api"))["args"]
    ns = build_parser().parse_args(args)
    assert (ns.heavy_workers, ns.heavy_queue, ns.request_deadline, ns.heavy_worker_memory) == (3, 0, 2.5, 512)
    assert (ns.heavy_per_client, ns.heavy_client_header) == (2, "x-forwarded-for")
