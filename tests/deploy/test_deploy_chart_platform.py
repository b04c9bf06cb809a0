"""What a platform team expects of the chart: a PodDisruptionBudget, standard pod settings
accepted (and inconsistent ones refused with a readable message), a NetworkPolicy in front
of the worker, tokens that roll the pods when they change, startupProbes, the trials
switches, and the preflight hook as a real chart dependency."""

from __future__ import annotations

import base64
import copy
import hashlib
import shutil

import pytest
import yaml

from deploy_helpers import (
    CHART,
    CRD_KINDS,
    FULL_VALUES,
    LIBRARY_CHART,
    ROOT,
    by_kind,
    copy_chart,
    documents,
    helm,
    k8s_validate,
    one,
    render,
)
from script_module import load_script

API_SELECTOR = {"app.kubernetes.io/name": "mambasizer", "app.kubernetes.io/instance": "ms",
                "app.kubernetes.io/component": "api"}
WORKER_SELECTOR = {**API_SELECTOR, "app.kubernetes.io/component": "worker"}

# The pod settings a shared cluster's conventions ask for, on both the API and the worker.
POD_SETTINGS = {
    "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node-pool", "operator": "In", "values": ["system"]}]}]}},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                               "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "mambasizer"}}}}]},
    },
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "sizing", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 30}],
    "topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"team": "ml"}}},
    ],
    "priorityClassName": "platform-high",
    "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.internal:3128"},
                 {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
    "extraEnvFrom": [{"configMapRef": {"name": "proxy-env"}}, {"secretRef": {"name": "extra", "optional": True}}],
    "extraVolumes": [{"name": "ca-bundle", "configMap": {"name": "corp-ca"}}],
    "extraVolumeMounts": [{"name": "ca-bundle", "mountPath": "/etc/ssl/corp", "readOnly": True}],
}
SE_LINUX = {"level": "s0:c123,c456", "type": "spc_t"}
PLATFORM_VALUES = {
    "api": copy.deepcopy(POD_SETTINGS),
    "worker": {"enabled": True, **copy.deepcopy(POD_SETTINGS), "podLabels": {"cost-center": "gpu"}},
    "podSecurityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                           "seccompProfile": {"type": "RuntimeDefault"}, "seLinuxOptions": SE_LINUX,
                           "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}]},
    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                        "capabilities": {"drop": ["ALL"]}, "seLinuxOptions": SE_LINUX},
}


def _pod(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]


def _container(doc: dict) -> dict:
    (c,) = _pod(doc)["containers"]
    return c


def _render_fails(values: dict) -> str:
    with pytest.raises(helm().HelmError) as info:
        render(CHART, values)
    return str(info.value)


# --------------------------------------------------------------------------- standard pod settings


@pytest.fixture(scope="module")
def platform_docs() -> list[dict]:
    return documents(render(CHART, PLATFORM_VALUES))


def test_standard_pod_settings_are_accepted_and_rendered(platform_docs):
    for component, selector in (("api", API_SELECTOR), ("worker", WORKER_SELECTOR)):
        dep = one(platform_docs, "Deployment", component)
        k8s_validate(dep)
        pod, c = _pod(dep), _container(dep)
        assert pod["affinity"] == POD_SETTINGS["affinity"]
        assert pod["priorityClassName"] == "platform-high"
        for toleration in POD_SETTINGS["tolerations"]:
            assert toleration in pod["tolerations"]
        zone, host = pod["topologySpreadConstraints"]
        # an entry without labelSelector spreads this component's own pods
        assert zone == {**POD_SETTINGS["topologySpreadConstraints"][0], "labelSelector": {"matchLabels": selector}}
        assert host == POD_SETTINGS["topologySpreadConstraints"][1]
        env = {e["name"]: e for e in c["env"]}
        assert env["HTTPS_PROXY"]["value"] == "http://proxy.internal:3128"
        assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
        assert c["envFrom"] == POD_SETTINGS["extraEnvFrom"]
        assert {"name": "ca-bundle", "configMap": {"name": "corp-ca"}} in pod["volumes"]
        assert {"name": "ca-bundle", "mountPath": "/etc/ssl/corp", "readOnly": True} in c["volumeMounts"]
        assert "tmp" in {v["name"] for v in pod["volumes"]}  # the chart's own stay
        assert pod["securityContext"]["seLinuxOptions"] == SE_LINUX
        assert pod["securityContext"]["sysctls"] == [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}]
        assert c["securityContext"]["seLinuxOptions"] == SE_LINUX
    worker = one(platform_docs, "Deployment", "worker")
    assert worker["spec"]["template"]["metadata"]["labels"]["cost-center"] == "gpu"
    assert _container(worker)["resources"]["limits"]["nvidia.com/gpu"] == 1  # still forced


def test_helm_lint_is_clean_with_platform_settings():
    report = helm().lint(str(CHART), copy.deepcopy(PLATFORM_VALUES), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_app_armor_profile_is_accepted():
    # appArmorProfile is a field since Kubernetes 1.30, so only the newest schemas know it.
    import kubernetes_validate

    values = {"podSecurityContext": {"runAsNonRoot": True, "appArmorProfile": {"type": "RuntimeDefault"}},
              "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "mambasizer"}}}
    dep = one(documents(render(CHART, values)), "Deployment", "api")
    assert _pod(dep)["securityContext"]["appArmorProfile"] == {"type": "RuntimeDefault"}
    assert _container(dep)["securityContext"]["appArmorProfile"]["localhostProfile"] == "mambasizer"
    doc = {k: v for k, v in dep.items() if k != "__source__"}
    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


@pytest.mark.parametrize(
    "values, where",
    [
        ({"api": {"topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]}},
         "/api/topologySpreadConstraints/0"),
        ({"api": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}]}},
         "/api/topologySpreadConstraints/0/whenUnsatisfiable"),
        ({"worker": {"priorityClassName": "Platform High"}}, "/worker/priorityClassName"),
        ({"api": {"extraVolumes": [{"configMap": {"name": "x"}}]}}, "/api/extraVolumes/0"),
        ({"api": {"extraVolumeMounts": [{"name": "x"}]}}, "/api/extraVolumeMounts/0"),
        ({"api": {"extraEnvFrom": [{"configMap": {"name": "x"}}]}}, "/api/extraEnvFrom/0"),
        ({"securityContext": {"seLinuxOptions": {"category": "c0"}}}, "/securityContext/seLinuxOptions"),
        ({"api": {"podDisruptionBudget": {"enabled": True, "minAvailable": "half"}}}, "/api/podDisruptionBudget/minAvailable"),
        ({"networkPolicy": {"enabled": True, "workerExtraFrom": [{}]}}, "/networkPolicy/workerExtraFrom/0"),
        ({"trials": {"memoryGiB": -1}}, "/trials/memoryGiB"),
        ({"trials": {"clientToken": {"secretKey": "a/b"}}}, "/trials/clientToken/secretKey"),
        ({"serviceMonitor": {"scrapeTimeout": "10 seconds"}}, "/serviceMonitor/scrapeTimeout"),
    ],
)
def test_values_schema_rejects_malformed_pod_settings(values, where):
    with pytest.raises(helm().HelmValuesError) as info:
        render(CHART, values)
    assert where in str(info.value)


# --------------------------------------------------------------------------- inconsistent values


@pytest.mark.parametrize(
    "values, message",
    [
        ({"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 3}},
         "autoscaling.minReplicas (5) is above autoscaling.maxReplicas (3)"),
        ({"serviceMonitor": {"enabled": True, "interval": "30s", "scrapeTimeout": "1m"}},
         "serviceMonitor.scrapeTimeout (1m) is longer than serviceMonitor.interval (30s)"),
        ({"serviceMonitor": {"enabled": True, "interval": "1m30s", "scrapeTimeout": "90s500ms"}},
         "serviceMonitor.scrapeTimeout (90s500ms) is longer than serviceMonitor.interval (1m30s)"),
        ({"api": {"podDisruptionBudget": {"enabled": True, "minAvailable": 1, "maxUnavailable": 1}}},
         "set exactly one of minAvailable or maxUnavailable"),
        ({"api": {"podDisruptionBudget": {"enabled": True, "minAvailable": "", "maxUnavailable": ""}}},
         "set exactly one of minAvailable or maxUnavailable"),
        ({"api": {"replicas": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 2, "maxUnavailable": ""}}},
         "allows no eviction with api.replicas 2"),
        ({"api": {"podDisruptionBudget": {"enabled": True, "minAvailable": "", "maxUnavailable": 0}}},
         "allows no eviction"),
        ({"api": {"podDisruptionBudget": {"enabled": True, "minAvailable": "100%", "maxUnavailable": ""}}},
         "allows no eviction"),
        ({"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 6},
          "api": {"podDisruptionBudget": {"enabled": True, "minAvailable": 3, "maxUnavailable": ""}}},
         "allows no eviction with autoscaling.minReplicas 3"),
        ({"trials": {"enabled": True}}, "trials.enabled without worker.enabled runs trials inside the API pods: set trials.memoryGiB"),
        ({"trials": {"enabled": True, "memoryGiB": 1}, "api": {"resources": {"limits": {"memory": "512Mi"}}}},
         "trials.memoryGiB (1 GiB) does not fit api.resources.limits.memory (512Mi)"),
        ({"api": {"extraVolumes": [{"name": "tmp", "emptyDir": {}}]}}, "api.extraVolumes: the volume name \"tmp\" is the chart's own"),
    ],
)
def test_inconsistent_values_fail_with_a_readable_message(values, message):
    assert message in _render_fails(values)


@pytest.mark.parametrize(
    "values",
    [
        {"autoscaling": {"enabled": True, "minReplicas": 4, "maxReplicas": 4}},
        {"serviceMonitor": {"enabled": True, "interval": "1m30s", "scrapeTimeout": "90s"}},
        {"serviceMonitor": {"enabled": True, "interval": "1h", "scrapeTimeout": "59m59s999ms"}},
        # disabled parts are not checked
        {"autoscaling": {"enabled": False, "minReplicas": 5, "maxReplicas": 3}},
        {"serviceMonitor": {"enabled": False, "interval": "10s", "scrapeTimeout": "1m"}},
        {"autoscaling": {"enabled": True, "minReplicas": 4, "maxReplicas": 8},
         "api": {"podDisruptionBudget": {"enabled": True, "minAvailable": 3, "maxUnavailable": ""}}},
        {"trials": {"enabled": True, "memoryGiB": 2.5}, "api": {"resources": {"limits": {"memory": "4Gi"}}}},
        {"trials": {"enabled": True}, "worker": {"enabled": True}},  # trials go to the worker
    ],
)
def test_consistent_edge_values_render(values):
    for doc in documents(render(CHART, values)):
        if doc["kind"] not in CRD_KINDS:
            k8s_validate(doc)


# --------------------------------------------------------------------------- PodDisruptionBudget


def test_api_pod_disruption_budget_by_default(default_docs):
    pdb = one(default_docs, "PodDisruptionBudget")
    k8s_validate(pdb)
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": API_SELECTOR}}
    labels = one(default_docs, "Deployment", "api")["spec"]["template"]["metadata"]["labels"]
    assert all(labels[k] == v for k, v in API_SELECTOR.items())


@pytest.mark.parametrize("pdb, spec_key, value", [
    ({"minAvailable": "50%", "maxUnavailable": ""}, "minAvailable", "50%"),
    ({"minAvailable": 1, "maxUnavailable": ""}, "minAvailable", 1),
    ({"minAvailable": "", "maxUnavailable": "25%"}, "maxUnavailable", "25%"),
])
def test_pod_disruption_budget_forms(pdb, spec_key, value):
    doc = one(documents(render(CHART, {"api": {"podDisruptionBudget": {"enabled": True, **pdb}}})), "PodDisruptionBudget")
    k8s_validate(doc)
    assert {k: v for k, v in doc["spec"].items() if k != "selector"} == {spec_key: value}


def test_pod_disruption_budget_can_be_switched_off():
    docs = documents(render(CHART, {"api": {"podDisruptionBudget": {"enabled": False}}}))
    assert by_kind(docs, "PodDisruptionBudget") == []


# --------------------------------------------------------------------------- NetworkPolicy


def test_only_the_api_reaches_the_worker(full_docs):
    policy = one(full_docs, "NetworkPolicy")
    k8s_validate(policy)
    worker = one(full_docs, "Deployment", "worker")
    api = one(full_docs, "Deployment", "api")
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": worker["spec"]["selector"]["matchLabels"]}
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": API_SELECTOR}}]
    api_labels = api["spec"]["template"]["metadata"]["labels"]
    assert all(api_labels[k] == v for k, v in API_SELECTOR.items())
    # the named port is the worker container's
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert "http" in {p["name"] for p in _container(worker)["ports"]}


def test_network_policy_extra_peers_and_switches():
    peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    values = {"worker": {"enabled": True}, "networkPolicy": {"enabled": True, "workerExtraFrom": [peer]}}
    policy = one(documents(render(CHART, values)), "NetworkPolicy")
    k8s_validate(policy)
    assert policy["spec"]["ingress"][0]["from"] == [{"podSelector": {"matchLabels": API_SELECTOR}}, peer]
    assert by_kind(documents(render(CHART, {"worker": {"enabled": True}, "networkPolicy": {"enabled": False}})),
                   "NetworkPolicy") == []
    assert by_kind(documents(render(CHART, {})), "NetworkPolicy") == []  # no worker, nothing to guard


# --------------------------------------------------------------------------- tokens and checksums


def _secret_token(docs: list[dict], name: str, key: str = "token") -> str:
    (secret,) = [d for d in by_kind(docs, "Secret") if d["metadata"]["name"] == name]
    return base64.b64decode(secret["data"][key]).decode()


def _annotations(docs: list[dict], component: str) -> dict:
    return one(docs, "Deployment", component)["spec"]["template"]["metadata"]["annotations"]


def test_token_checksums_are_the_secrets_tokens(full_docs):
    worker_token = _secret_token(full_docs, "ms-mambasizer-worker-token")
    trial_token = _secret_token(full_docs, "ms-mambasizer-trial-token")
    assert len(worker_token) == 48 and len(trial_token) == 48 and worker_token != trial_token
    want_worker = hashlib.sha256(f"ms-mambasizer-worker-token/token/{worker_token}".encode()).hexdigest()
    want_trial = hashlib.sha256(f"ms-mambasizer-trial-token/token/{trial_token}".encode()).hexdigest()
    # the annotation hashes the very token the Secret holds in the same render
    assert _annotations(full_docs, "worker")["checksum/worker-token"] == want_worker
    assert _annotations(full_docs, "api")["checksum/worker-token"] == want_worker
    assert _annotations(full_docs, "api")["checksum/trial-token"] == want_trial


def test_pods_roll_when_a_token_changes_and_only_then():
    def render_with(worker_token: str, trial_token: str) -> list[dict]:
        values = copy.deepcopy(FULL_VALUES)
        values["worker"]["auth"] = {"existingSecret": "", "secretKey": "token", "token": worker_token}
        values["trials"]["clientToken"] = {"enabled": True, "existingSecret": "", "secretKey": "token", "token": trial_token}
        return documents(render(CHART, values))

    a, a2, b, c = render_with("w1", "t1"), render_with("w1", "t1"), render_with("w2", "t1"), render_with("w1", "t2")
    assert _secret_token(a, "ms-mambasizer-worker-token") == "w1"
    for component in ("api", "worker"):
        assert _annotations(a, component) == _annotations(a2, component)  # stable: no roll
        assert _annotations(a, component)["checksum/worker-token"] != _annotations(b, component)["checksum/worker-token"]
    assert _annotations(a, "api")["checksum/trial-token"] != _annotations(c, "api")["checksum/trial-token"]
    assert _annotations(a, "worker") == _annotations(c, "worker")  # the trial token is the API's only


def test_existing_secrets_are_referenced_not_created():
    values = copy.deepcopy(FULL_VALUES)
    values["worker"]["auth"] = {"existingSecret": "gpu-worker", "secretKey": "bearer", "token": ""}
    values["trials"]["clientToken"] = {"enabled": True, "existingSecret": "trial-clients", "secretKey": "t", "token": ""}
    docs, again = documents(render(CHART, values)), documents(render(CHART, values))
    assert by_kind(docs, "Secret") == []
    api = one(docs, "Deployment", "api")
    (vol,) = [v for v in _pod(api)["volumes"] if v["name"] == "trial-token"]
    assert vol["secret"]["secretName"] == "trial-clients"
    assert vol["secret"]["items"] == [{"key": "t", "path": "t"}]
    env = {e["name"]: e for e in _container(api)["env"]}
    assert env["MAMBASIZER_TRIAL_TOKEN_FILE"]["value"] == "/var/run/secrets/mambasizer/trial/t"
    # offline, the checksum is of the Secret's name and key: the same on every render
    assert _annotations(docs, "api") == _annotations(again, "api")
    assert _annotations(docs, "api")["checksum/worker-token"] == hashlib.sha256(b"gpu-worker/bearer/").hexdigest()


LOOKUP = 'lookup "v1" "Secret" .root.Release.Namespace .name'


@pytest.mark.parametrize("live, kept", [
    ('(dict "data" (dict "token" ("live-token-from-the-cluster" | b64enc)))', True),
    ("(dict)", False),  # nothing in the cluster (first install, or an offline render)
])
def test_generated_token_is_read_back_from_the_live_secret(tmp_path, live, kept):
    """helm install/upgrade reads the live Secret with lookup; offline renders cannot reach
    a cluster, so the lookup is swapped for what it would return, and the rest of the
    template (keep the live token, else generate) runs as shipped."""
    chart = tmp_path / "mambasizer"
    shutil.copytree(CHART, chart)
    helpers = chart / "templates" / "_helpers.tpl"
    text = helpers.read_text()
    assert text.count(LOOKUP) == 1
    helpers.write_text(text.replace(LOOKUP, live))
    docs = documents(render(chart, {"worker": {"enabled": True}}))
    token = _secret_token(docs, "ms-mambasizer-worker-token")
    assert (token == "live-token-from-the-cluster") is kept
    assert len(token) == (27 if kept else 48)
    want = hashlib.sha256(f"ms-mambasizer-worker-token/token/{token}".encode()).hexdigest()
    assert _annotations(docs, "worker")["checksum/worker-token"] == want
    assert _annotations(docs, "api")["checksum/worker-token"] == want


# --------------------------------------------------------------------------- trials


def test_trials_are_off_by_default(default_docs):
    api = one(default_docs, "Deployment", "api")
    names = {e["name"] for e in _container(api)["env"]}
    assert not {n for n in names if n.startswith("MAMBASIZER_TRIAL")}
    assert "trial-token" not in {v["name"] for v in _pod(api)["volumes"]}
    assert by_kind(default_docs, "Secret") == []


def test_trials_with_the_worker_get_the_switch_and_a_client_token_file(full_docs):
    api = one(full_docs, "Deployment", "api")
    c, pod = _container(api), _pod(api)
    env = {e["name"]: e for e in c["env"]}
    assert env["MAMBASIZER_TRIALS_ENABLED"]["value"] == "true"
    assert "MAMBASIZER_TRIAL_MEMORY_GIB" not in env  # memoryGiB 0: the API's default
    path = env["MAMBASIZER_TRIAL_TOKEN_FILE"]["value"]
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == "trial-token"]
    assert mount["readOnly"] is True
    directory, _, filename = path.rpartition("/")
    assert directory == mount["mountPath"]
    (vol,) = [v for v in pod["volumes"] if v["name"] == "trial-token"]
    assert vol["secret"]["secretName"] == "ms-mambasizer-trial-token"
    assert vol["secret"]["items"] == [{"key": "token", "path": filename}]
    assert _secret_token(full_docs, "ms-mambasizer-trial-token")
    # the worker never sees the client token
    wenv = {e["name"] for e in _container(one(full_docs, "Deployment", "worker"))["env"]}
    assert not {n for n in wenv if n.startswith("MAMBASIZER_TRIAL")}


def test_embedded_trials_get_their_memory_cap_and_no_worker_url():
    values = {"trials": {"enabled": True, "memoryGiB": 2.5, "clientToken": {"enabled": False}},
              "api": {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}}}
    docs = documents(render(CHART, values))
    api = one(docs, "Deployment", "api")
    env = {e["name"]: e.get("value") for e in _container(api)["env"]}
    assert env["MAMBASIZER_TRIALS_ENABLED"] == "true"
    assert env["MAMBASIZER_TRIAL_MEMORY_GIB"] == "2.5"
    assert "MAMBASIZER_TRIAL_TOKEN_FILE" not in env and "MAMBASIZER_WORKER_URL" not in env
    assert by_kind(docs, "Secret") == []
    assert "checksum/trial-token" not in _annotations(docs, "api")
    k8s_validate(api)


# --------------------------------------------------------------------------- probes


@pytest.mark.parametrize("component, period, failures", [("api", 2, 30), ("worker", 5, 60)])
def test_startup_probes_gate_liveness(full_docs, component, period, failures):
    c = _container(one(full_docs, "Deployment", component))
    assert c["startupProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert (c["startupProbe"]["periodSeconds"], c["startupProbe"]["failureThreshold"]) == (period, failures)
    # the startupProbe holds liveness back, so liveness needs no initial delay of its own
    assert "initialDelaySeconds" not in c["livenessProbe"]


def test_probe_values_are_taken():
    values = {"worker": {"enabled": True, "startupProbe": {"periodSeconds": 10, "failureThreshold": 90, "timeoutSeconds": 5}},
              "api": {"startupProbe": {"periodSeconds": 1, "failureThreshold": 120, "timeoutSeconds": 1}}}
    docs = documents(render(CHART, values))
    assert _container(one(docs, "Deployment", "worker"))["startupProbe"]["failureThreshold"] == 90
    assert _container(one(docs, "Deployment", "api"))["startupProbe"]["failureThreshold"] == 120


# --------------------------------------------------------------------------- the library chart as a dependency


def test_preflight_template_comes_from_the_library_dependency():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["dependencies"] == [{"name": "mambasizer-preflight", "version": "0.1.0",
                                      "repository": "file://../mambasizer-preflight"}]
    assert helm().dependency_list(str(CHART)) == [
        {"name": "mambasizer-preflight", "version": "0.1.0", "repository": "file://../mambasizer-preflight", "status": "ok"}]
    # no second copy of the named template in the chart's own templates
    own = [p.name for p in (CHART / "templates").iterdir()
           if 'define "mambasizer-preflight.job"' in p.read_text()]
    assert own == []
    assert not (CHART / "templates" / "_preflight.tpl").exists()


def test_vendored_library_drift_is_detected(tmp_path, monkeypatch):
    """sync.py --check (run by test_derived_files_are_in_sync) fails once the library chart
    changes and the vendored archive does not."""
    sync = load_script(ROOT / "tests" / "deploy" / "sync.py", "deploy_sync")
    helm_copy = tmp_path / "helm"
    shutil.copytree(CHART, helm_copy / "mambasizer")  # with its vendored charts/*.tgz
    copy_chart(LIBRARY_CHART, helm_copy / "mambasizer-preflight")
    monkeypatch.setattr(sync, "CHART", helm_copy / "mambasizer")
    monkeypatch.setattr(sync, "LIBRARY", helm_copy / "mambasizer-preflight")
    assert sync.vendored_library_is_current()
    tpl = helm_copy / "mambasizer-preflight" / "templates" / "_preflight.tpl"
    tpl.write_text(tpl.read_text().replace("backoffLimit: 0", "backoffLimit: 1"))
    assert not sync.vendored_library_is_current()
    # what sync.py does about it: `helm dependency update` re-vendors the library
    helm().dependency_update(str(helm_copy / "mambasizer"))
    assert sync.vendored_library_is_current()
    job = one(documents(render(helm_copy / "mambasizer", FULL_VALUES)), "Job")
    assert job["spec"]["backoffLimit"] == 1


EXISTING_LOOKUP = 'lookup "v1" "Secret" .root.Release.Namespace $auth.existingSecret'


def test_existing_secret_rotation_rolls_the_pods_when_the_cluster_is_readable(tmp_path):
    """With existingSecret, helm install/upgrade hashes the live Secret's token, so rotating
    it and running `helm upgrade` rolls the pods (lookup swapped for what it returns)."""
    values = {"worker": {"enabled": True, "auth": {"existingSecret": "gpu-worker", "secretKey": "bearer", "token": ""}}}

    def annotations_with(live: str) -> dict:
        chart = tmp_path / live / "mambasizer"
        shutil.copytree(CHART, chart)
        helpers = chart / "templates" / "_helpers.tpl"
        text = helpers.read_text()
        assert text.count(EXISTING_LOOKUP) == 1
        helpers.write_text(text.replace(EXISTING_LOOKUP, f'(dict "data" (dict "bearer" ("{live}" | b64enc)))'))
        docs = documents(render(chart, values))
        assert by_kind(docs, "Secret") == []
        return _annotations(docs, "worker")

    before, after = annotations_with("token-v1"), annotations_with("token-v2")
    assert before["checksum/worker-token"] == hashlib.sha256(
        b"gpu-worker/bearer/" + base64.b64encode(b"token-v1")).hexdigest()
    assert before["checksum/worker-token"] != after["checksum/worker-token"]


# --------------------------------------------------------------------------- image digests

DIGEST = "sha256:" + "ab" * 32


def test_images_can_be_pinned_by_digest():
    values = copy.deepcopy(FULL_VALUES)
    values["image"] = {"repository": "reg.example/mambasizer-api", "tag": "", "pullPolicy": "IfNotPresent", "digest": DIGEST}
    values["worker"]["image"] = {"repository": "reg.example/mambasizer-worker", "tag": "0.1.0-cu128",
                                 "pullPolicy": "IfNotPresent", "digest": DIGEST}
    docs = documents(render(CHART, values))
    assert _container(one(docs, "Deployment", "api"))["image"] == f"reg.example/mambasizer-api:0.1.0@{DIGEST}"
    assert _container(one(docs, "Deployment", "worker"))["image"] == f"reg.example/mambasizer-worker:0.1.0-cu128@{DIGEST}"
    # the preflight hook runs the API image, pinned the same way
    job = one(docs, "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == f"reg.example/mambasizer-api:0.1.0@{DIGEST}"
    for doc in (one(docs, "Deployment", "api"), one(docs, "Deployment", "worker"), job):
        k8s_validate(doc)
    with pytest.raises(helm().HelmValuesError) as info:
        render(CHART, {"image": {"digest": "sha256:short"}})
    assert "/image/digest" in str(info.value)


def test_preflight_image_of_its_own_takes_a_digest_too():
    values = copy.deepcopy(FULL_VALUES)
    values["preflight"]["image"] = {"repository": "reg.example/checker", "tag": "7", "digest": DIGEST}
    job = one(documents(render(CHART, values)), "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == f"reg.example/checker:7@{DIGEST}"


def test_api_network_policy_only_when_peers_are_named(default_docs):
    assert by_kind(default_docs, "NetworkPolicy") == []  # open by default: clients are anywhere
    peers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "llm"}}},
             {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
              "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]
    docs = documents(render(CHART, {"networkPolicy": {"enabled": True, "apiFrom": peers}}))
    policy = one(docs, "NetworkPolicy", "api")
    k8s_validate(policy)
    assert policy["spec"]["podSelector"] == {"matchLabels": API_SELECTOR}
    assert policy["spec"]["ingress"] == [{"from": peers, "ports": [{"port": "http", "protocol": "TCP"}]}]
    assert "http" in {p["name"] for p in _container(one(docs, "Deployment", "api"))["ports"]}
    off = documents(render(CHART, {"networkPolicy": {"enabled": False, "apiFrom": peers}}))
    assert by_kind(off, "NetworkPolicy") == []


@pytest.mark.parametrize("kube_version", ["v1.25.0", "v1.37.0"])
def test_helm_lint_is_clean_at_both_ends_of_the_supported_kubernetes_range(kube_version):
    report = helm().lint(str(CHART), copy.deepcopy(FULL_VALUES), strict=True, with_subcharts=True,
                         kube_version=kube_version)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


# --------------------------------------------------------------------------- the docs' values file


def test_docs_production_values_file_installs():
    """The `sizing-values.yaml` docs/deploy.md shows renders, lints and validates as written."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    (block,) = [b for b in blocks if b.startswith("# sizing-values.yaml")]
    values = yaml.safe_load(block)
    docs = documents(render(CHART, values, name="mambasizer"))
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(["ConfigMap", "ConfigMap", "Deployment", "Deployment", "HorizontalPodAutoscaler",
                            "NetworkPolicy", "PodDisruptionBudget", "Secret", "Secret", "Service", "Service",
                            "ServiceAccount", "ServiceMonitor", "PrometheusRule"])
    for doc in docs:
        if doc["kind"] not in CRD_KINDS:
            k8s_validate(doc)
    report = helm().lint(str(CHART), values, strict=True)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []
    names = {d["metadata"]["name"] for d in by_kind(docs, "Secret")}
    assert names == {"mambasizer-trial-token", "mambasizer-worker-token"}


# --------------------------------------------------------------------------- against the real code


def _materialise(deployment: dict, docs: list[dict], tmp_path) -> dict[str, str]:
    """Write each Secret-backed mount of the pod under tmp_path, as the kubelet would, and
    return {path in the pod: path here}."""
    pod = _pod(deployment)
    secrets = {d["metadata"]["name"]: d for d in by_kind(docs, "Secret")}
    out = {}
    for mount in _container(deployment)["volumeMounts"]:
        (vol,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        if "secret" not in vol:
            continue
        data = secrets[vol["secret"]["secretName"]]["data"]
        for item in vol["secret"]["items"]:
            here = tmp_path / mount["name"] / item["path"]
            here.parent.mkdir(parents=True, exist_ok=True)
            here.write_bytes(base64.b64decode(data[item["key"]]))
            out[f"{mount['mountPath']}/{item['path']}"] = str(here)
    return out


def test_worker_and_api_read_the_mounted_worker_token(full_docs, tmp_path, monkeypatch):
    from mambasizer.service.cli import build_parser
    from mambasizer.service.worker import client
    from mambasizer.service.worker.app import read_token

    token = _secret_token(full_docs, "ms-mambasizer-worker-token")
    worker = one(full_docs, "Deployment", "worker")
    files = _materialise(worker, full_docs, tmp_path / "worker")
    args = build_parser().parse_args(_container(worker)["args"])
    assert read_token(files[args.token_file]) == token

    api = one(full_docs, "Deployment", "api")
    files = _materialise(api, full_docs, tmp_path / "api")
    env = {e["name"]: e["value"] for e in _container(api)["env"] if "value" in e}
    monkeypatch.delenv(client.TOKEN_ENV, raising=False)
    monkeypatch.setenv(client.TOKEN_FILE_ENV, files[env[client.TOKEN_FILE_ENV]])
    assert client._token() == token


def test_api_trial_settings_from_the_rendered_pod(tmp_path):
    trials = pytest.importorskip("mambasizer.service.api.trials", reason="the API's trial settings are not in this tree yet")
    values = {"trials": {"enabled": True, "memoryGiB": 2.5},
              "api": {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}}}
    docs = documents(render(CHART, values))
    api = one(docs, "Deployment", "api")
    files = _materialise(api, docs, tmp_path)
    env = {e["name"]: e["value"] for e in _container(api)["env"] if "value" in e}
    env[trials.TOKEN_FILE_ENV] = files[env[trials.TOKEN_FILE_ENV]]
    settings = trials.TrialSettings.from_env(env)
    assert settings.enabled is True
    assert settings.memory_gib == 2.5
    assert settings.token == _secret_token(docs, "ms-mambasizer-trial-token")
    # and off by default
    default_env = {e["name"]: e["value"] for e in _container(one(documents(render(CHART, {})), "Deployment", "api"))["env"]
                   if "value" in e}
    assert trials.TrialSettings.from_env(default_env).enabled is False
