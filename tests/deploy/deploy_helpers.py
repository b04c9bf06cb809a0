"""Shared helpers for the deployment checks: real Helm (Go SDK via helm-python-sdk),
offline Kubernetes schemas (kubernetes-validate), no cluster and no Docker engine."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HELM_DIR = ROOT / "helm"
CHART = HELM_DIR / "mambasizer"
LIBRARY_CHART = HELM_DIR / "mambasizer-preflight"
STANDALONE_DIR = HELM_DIR / "preflight-hook"
DASHBOARD = CHART / "dashboards" / "mambasizer.json"

# The oldest Kubernetes the chart declares (Chart.yaml kubeVersion) and the newest schemas
# kubernetes-validate ships.
K8S_VERSIONS = ("1.25.0", "latest")

# Values that switch every optional part on.
FULL_VALUES: dict[str, Any] = {
    "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6},
    "worker": {
        "enabled": True,
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        "runtimeClassName": "nvidia",
    },
    "trials": {"enabled": True},
    "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "dashboards": {"enabled": True, "annotations": {"grafana_folder": "SGLang"}},
    "deployments": {
        "qwen3-next-tp4": {
            "model": {"preset": "qwen3-next-80b-a3b-instruct"},
            "server_args": {"tp_size": 4},
            "budget": {"rest_gib": 40},
        }
    },
    "preflight": {
        "enabled": True,
        "preset": "qwen3-next-80b-a3b-instruct",
        "budgetGiB": 40,
        "sglangArgs": ["--tp-size", "4", "--max-running-requests", "64"],
        "require": {"maxRunningRequests": 64, "contextLength": 32768},
    },
}

# Prometheus Operator resources: kubernetes-validate has no schema for these CRDs (the
# ServiceMonitor is checked structurally, the PrometheusRule's groups by promtool).
CRD_KINDS = frozenset({"ServiceMonitor", "PrometheusRule"})

HOOK_ANNOTATIONS = {
    "helm.sh/hook": "pre-install,pre-upgrade",
    "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
}


def helm():
    import helm_python

    return helm_python


def render(chart_dir: Path, values: dict | None = None, *, name: str = "ms", namespace: str = "sizing") -> dict[str, str]:
    with helm().Chart.load(str(chart_dir)) as chart:
        return chart.render(copy.deepcopy(values) if values is not None else {}, name=name, namespace=namespace,
                            is_install=True)


def documents(manifests: dict[str, str]) -> list[dict]:
    docs = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc.setdefault("__source__", path)
                docs.append(doc)
    return docs


def strip(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "__source__"}


def by_kind(docs: Iterable[dict], kind: str) -> list[dict]:
    return [d for d in docs if d.get("kind") == kind]


def one(docs: Iterable[dict], kind: str, component: str | None = None) -> dict:
    found = [
        d for d in by_kind(docs, kind)
        if component is None or d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component
    ]
    assert len(found) == 1, f"expected one {kind} (component={component}), got {[d['metadata']['name'] for d in found]}"
    return found[0]


def k8s_validate(doc: dict) -> None:
    """Strict validation (unknown fields rejected) against each K8S_VERSIONS schema set."""
    import kubernetes_validate

    for version in K8S_VERSIONS:
        v = kubernetes_validate.latest_version() if version == "latest" else version
        kubernetes_validate.validate(strip(doc), v, strict=True)


def copy_chart(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.tgz"))
    return dst
