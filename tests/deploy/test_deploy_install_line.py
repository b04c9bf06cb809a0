"""The README's `helm upgrade --install` line deploys what it says: the GPU worker it adds
has trials on (a worker with trials off holds a GPU for nothing), and NOTES.txt says so
whenever the worker is deployed with trials off."""

from __future__ import annotations

import re
import shlex

import yaml

from deploy_helpers import CHART, ROOT, by_kind, documents, render


def _set(values: dict, dotted: str, value: str) -> None:
    *parents, leaf = dotted.split(".")
    node = values
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = yaml.safe_load(value)  # what `--set` does with true/false/numbers


def readme_install_values() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^helm upgrade --install mambasizer \./helm/mambasizer .*?(?:\n(?!  ).*)", text, re.M | re.S)
    assert m, "README has no helm install line"
    command = m.group(0).split("\n\n")[0].replace("\\\n", " ").replace("$REGISTRY", "registry.example")
    words = shlex.split(command.split("\n")[0])
    values: dict = {}
    for i, word in enumerate(words):
        if word == "--set":
            key, _, value = words[i + 1].partition("=")
            _set(values, key, value)
    return values


def _notes(manifests: dict[str, str]) -> str:
    return next(text for path, text in manifests.items() if path.endswith("NOTES.txt"))


def _api_env(docs: list[dict]) -> dict:
    api = next(d for d in by_kind(docs, "Deployment") if d["metadata"]["labels"].get("app.kubernetes.io/component") != "worker")
    return {e["name"]: e.get("value") for e in api["spec"]["template"]["spec"]["containers"][0].get("env", [])}


def test_the_readme_install_line_turns_trials_on_with_the_worker_it_deploys():
    values = readme_install_values()
    assert values["worker"]["enabled"] is True
    manifests = render(CHART, values)
    docs = documents(manifests)
    workers = [d for d in by_kind(docs, "Deployment") if d["metadata"]["labels"].get("app.kubernetes.io/component") == "worker"]
    assert len(workers) == 1
    assert _api_env(docs)["MAMBASIZER_TRIALS_ENABLED"] == "true"
    notes = _notes(manifests)
    assert "Trials are enabled (on the GPU worker)" in notes and "trials are off" not in notes


def test_notes_say_a_worker_with_trials_off_runs_nothing():
    manifests = render(CHART, {"worker": {"enabled": True}})
    assert ("NOTE: trials are off (trials.enabled=false): clients' `trial` requests are rejected, and the worker only "
            "runs the 0 deployments entries marked `trial`, so it holds a GPU and runs nothing. Set trials.enabled=true "
            "to use it, or worker.enabled=false to free the GPU.") in _notes(manifests)
    entry = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 40}}
    manifests = render(CHART, {"worker": {"enabled": True}, "deployments": {"a": {**entry, "trial": {}}, "b": {**entry, "trial": False}, "c": entry}})
    notes = _notes(manifests)
    assert "the worker only runs the 1 deployments entries marked `trial`. Set trials.enabled=true" in notes
    assert "trials are off" not in _notes(render(CHART, {}))  # no worker: nothing to say
