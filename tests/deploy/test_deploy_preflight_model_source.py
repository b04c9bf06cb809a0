"""The preflight sizes the model where the deployment loads it: `preflight.modelVolume` mounts the
deployment's model PVC read-only at its mountPath (modelPath a checkpoint directory under it), and
`preflight.hfTokenSecret` gives the Job env HF_TOKEN from the deployment's Secret (never rendered)
for a repo id read from the Hub. The rendered Job is checked against the Kubernetes schema, and its
rendered command runs through the real `mambasizer check`: a fixture checkpoint directory stands in
for the mount, the tests' fake Hub (requiring the token) for the Hub."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from deploy_helpers import CHART, FULL_VALUES, documents, k8s_validate, one, render
from mambasizer.service.checkpoints import CACHE
from mambasizer.service.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checkpoints"))
import ckpt_fixtures as F
from fake_hub import FakeHub

FP8 = "qwen3.8-27b-fp8"


def _values(**preflight) -> dict:
    values = copy.deepcopy(FULL_VALUES)
    pf = values["preflight"]
    pf.pop("budgetGiB", None)
    pf.update({"preset": "", "gpu": "h200", "sglangArgs": ["--tp-size", "2"], "require": {}}, **preflight)
    return values


def _job(values: dict) -> dict:
    job = one(documents(render(CHART, values)), "Job")
    k8s_validate(job)
    return job


def _run(args: list[str], tmp_path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination-log"))
    CACHE.clear()
    code = main(args)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_the_model_volume_is_mounted_read_only_and_its_directory_sized(tmp_path, monkeypatch, capsys):
    mount = tmp_path / "models"  # the PVC's mount, as the deployment's pod has it
    F.write_checkpoint(mount / FP8, "fp8")
    job = _job(_values(modelPath=f"{mount}/{FP8}", modelVolume={"claimName": "sglang-models", "mountPath": str(mount)}))
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert {"name": "model", "persistentVolumeClaim": {"claimName": "sglang-models", "readOnly": True}} in pod["volumes"]
    assert {"name": "model", "mountPath": str(mount), "readOnly": True} in container["volumeMounts"]
    args = container["args"]
    assert args[args.index("--") + 1:] == ["--model-path", f"{mount}/{FP8}", "--tp-size", "2"]
    assert "--preset" not in args
    code, out = _run(args, tmp_path, monkeypatch, capsys)
    assert code == 0, out
    assert "budget=estimated" in out
    # Refused, naming the fix: nothing on the mount there.
    code, out = _run([a.replace(FP8, "no-such-model") for a in args], tmp_path, monkeypatch, capsys)
    assert code == 2 and "no-such-model" in out, out


def test_the_hub_token_comes_from_the_deployments_secret(tmp_path, monkeypatch, capsys):
    job = _job(_values(modelPath=F.REPO_IDS["fp8"], hfTokenSecret={"name": "hf-token", "key": "token"}))
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}
    assert env["HF_HOME"]["value"].startswith("/tmp/")  # the only writable path (readOnlyRootFilesystem)
    assert not any(v["name"] == "model" for v in job["spec"]["template"]["spec"]["volumes"])
    # The rendered command against a Hub that wants the deployment's token.
    hub = FakeHub().start()
    try:
        hub.add(F.REPO_IDS["fp8"], F.write_checkpoint(tmp_path / "hub-repo", "fp8"))
        hub.token = "hf_deployment_secret"
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # stands in for the rendered /tmp/huggingface
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        code, out = _run(container["args"], tmp_path, monkeypatch, capsys)
        assert code == 2 and "HF_TOKEN" in out, out  # no token: the Hub's 401, with the fix
        monkeypatch.setenv("HF_TOKEN", "hf_deployment_secret")  # what secretKeyRef puts there
        code, out = _run(container["args"], tmp_path, monkeypatch, capsys)
        assert code == 0, out
        assert "hf_deployment_secret" not in out
        assert "Bearer hf_deployment_secret" in hub.auth_seen
    finally:
        hub.stop()


@pytest.mark.parametrize("preflight, line", [
    ({"modelVolume": {"claimName": "sglang-models"}},
     ("mambasizer preflight: modelVolume needs claimName (the deployment's model PVC) and mountPath (where its pod mounts "
     "it, e.g. /models), with modelPath a directory under mountPath")),
    ({"hfTokenSecret": {"name": "hf-token"}},
     ("mambasizer preflight: hfTokenSecret needs name (the deployment's Secret) and key (the key holding the Hugging Face "
     "token, e.g. HF_TOKEN)")),
])
def test_a_half_given_source_is_refused_on_one_line(preflight, line):
    with pytest.raises(Exception) as info:
        render(CHART, _values(modelPath="/models/x", **preflight))
    text = str(info.value)
    assert "\n" not in text.strip(), text
    assert text.split("): ", 1)[1] == line


def test_defaults_render_no_volume_and_no_token():
    job = _job(_values(modelPath=F.REPO_IDS["fp8"]))
    pod = job["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["tmp"]
    assert "HF_TOKEN" not in {e["name"] for e in pod["containers"][0]["env"]}
