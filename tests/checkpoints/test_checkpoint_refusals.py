"""Every way a model path cannot be read is a clear refusal naming the field and the fix:
422 problem+json on the API, exit 2 and one line on the CLI. `serve` never reads outside a
model root (`..` and symlinks resolved); a token is never echoed."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from fastapi.testclient import TestClient

import ckpt_fixtures as F
from fake_hub import copy_sparse
from mambasizer.service.api.app import create_app
from mambasizer.service.checkpoints import CheckpointError, ReadPolicy, resolve, serve_policy
from mambasizer.service.cli import main


def _measured(path: str) -> dict:
    return {"sglang_args": ["--model-path", path, "--tp-size", "2", "--mem-fraction-static", "0.9"],
            "budget": {"gpu": "h100", "free_gib_before_load": 78.5, "free_gib_after_load": 63.0}}


@pytest.fixture(scope="module")
def client():
    """One app for the module (its work pool starts once); each test sets its policy."""
    with TestClient(create_app(checkpoints=ReadPolicy(roots=(), hub=False, hf_cache=False, owner="serve")),
                    raise_server_exceptions=False) as c:
        yield c


_CLIENT: list = []


@pytest.fixture(autouse=True)
def _remember(client):
    _CLIENT[:] = [client]


def _post(policy, path: str):
    client = _CLIENT[0]
    client.app.state.checkpoint_policy = policy
    return client.post("/v1/plan", json=_measured(path))


def _problem(resp, *needles: str) -> dict:
    assert resp.status_code == 422, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["field"] == "sglang_args"
    for n in needles:
        assert n in body["detail"], (n, body["detail"])
    return body


def _cli(capsys, tmp_path, path: str) -> tuple[int, str]:
    req = tmp_path / "req.json"
    req.write_text(json.dumps(_measured(path)))
    code = main(["plan", str(req)])
    out = capsys.readouterr()
    return code, out.err


def _one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mambasizer: error: sglang_args: "), err
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture()
def root(checkpoints, tmp_path):
    """A model root holding one checkpoint (config files copied, shards linked inside it)."""
    r = tmp_path / "root"
    (r / "fp8").mkdir(parents=True)
    for f in checkpoints["fp8"].iterdir():
        if f.suffix == ".json":
            shutil.copyfile(f, r / "fp8" / f.name)
        else:  # sparse, as the fixture's: a plain copy would write every byte of the data region
            copy_sparse(f, r / "fp8" / f.name)
    return r


def test_dotdot_out_of_a_root_is_refused(root, checkpoints):
    escape = str(root / ".." / ".." / checkpoints["fp8"].parent.name / checkpoints["fp8"].name)
    outside = os.path.realpath(escape)
    assert os.path.isdir(outside)  # it exists: refused for where it is, not for being missing
    _problem(_post(serve_policy([str(root)], False), escape), "outside the server's model roots", "--model-root")


def test_symlinked_directory_out_of_a_root_is_refused(root, checkpoints):
    (root / "linked").symlink_to(checkpoints["bf16-mtp"])
    _problem(_post(serve_policy([str(root)], False), str(root / "linked")), "outside the server's model roots")


def test_symlinked_file_out_of_a_root_is_not_read(root, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"not": "a config"}')
    os.remove(root / "fp8" / "config.json")
    (root / "fp8" / "config.json").symlink_to(secret)
    body = _problem(_post(serve_policy([str(root)], False), str(root / "fp8")), "config.json resolves outside the model root")
    assert "not" not in body.get("errors", "")


def test_a_root_directory_is_read(root):
    resp = _post(serve_policy([str(root)], False), str(root / "fp8"))
    assert resp.status_code == 200, resp.text
    assert resp.json()["checkpoint"]["source"] == "directory"


def test_serve_without_roots_reads_no_directory(checkpoints):
    _problem(_post(serve_policy([], False), str(checkpoints["fp8"])), "no --model-root")


def test_serve_without_hub_refuses_a_repo_id_naming_the_three_ways(hub):
    body = _problem(_post(serve_policy([], False), "Qwen/Qwen3.8-27B-FP8"), "not found", "does not read the Hub",
                    "--hub", "model root", "model.hf_config")
    assert "qwen3.6-27b" not in body["detail"].lower(), "never the BF16 sibling"
    assert not hub.requests


def test_oversized_config_is_refused(root):
    policy = ReadPolicy(roots=(str(root),), hf_cache=False, hub=False, max_json_bytes=1000, owner="serve")
    _problem(_post(policy, str(root / "fp8")), "config.json is", "over the 1,000-byte limit")


def test_oversized_safetensors_header_is_refused(checkpoints):
    with pytest.raises(CheckpointError, match="over the 1,000-byte limit"):
        resolve(str(checkpoints["fp8"]), policy=ReadPolicy(max_header_bytes=1000))


def test_hub_500_is_exit_2(hub, tmp_path, capsys):
    hub.status = 500
    _one_line(*_cli(capsys, tmp_path, "Qwen/Qwen3.8-27B-FP8"), "HTTP 500")


def test_hub_timeout_is_a_422(hub):
    hub.delay_s = 1.5
    policy = ReadPolicy(roots=(), hf_cache=True, hub=True, hub_timeout_s=0.3, owner="serve")
    _problem(_post(policy, "Qwen/Qwen3.8-27B-FP8"), "did not answer within 0.3 s")


def test_bad_token_is_exit_2_and_never_echoed(hub, monkeypatch, tmp_path, capsys):
    hub.token = "hf_the-right-one"
    monkeypatch.setenv("HF_TOKEN", "hf_secret-wrong-token")
    code, err = _cli(capsys, tmp_path, "Qwen/Qwen3.8-27B-FP8")
    _one_line(code, err, "HTTP 401", "HF_TOKEN")
    assert "hf_secret-wrong-token" not in err
    assert "Bearer hf_secret-wrong-token" in hub.auth_seen  # it was sent, to the Hub only


def test_good_token_reads_a_gated_repo(hub, monkeypatch):
    hub.token = "hf_the-right-one"
    monkeypatch.setenv("HF_TOKEN", "hf_the-right-one")
    assert resolve(F.REPO_IDS["fp8"]).source == "hub"


def test_offline_miss_is_exit_2_naming_the_three_ways(hub, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, err = _cli(capsys, tmp_path, "Qwen/Qwen3.8-27B-FP8")
    _one_line(code, err, "not found", "not in the Hugging Face cache", "HF_HUB_OFFLINE=1", "a directory", "model.hf_config")
    assert "qwen3.6-27b" not in err.lower()
    assert not hub.requests


def test_missing_directory_is_exit_2(tmp_path, capsys):
    _one_line(*_cli(capsys, tmp_path, str(tmp_path / "no-such-model")), "no such directory")


def test_unknown_repo_on_the_hub_is_exit_2(hub, tmp_path, capsys):
    _one_line(*_cli(capsys, tmp_path, "nobody/nothing"), "HTTP 404")


def test_serve_refuses_a_missing_model_root(tmp_path, capsys):
    missing = tmp_path / "no-such-root"
    assert main(["serve", "--model-root", str(missing), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--model-root {missing}: no such directory" in err[0], err


def test_serve_policy_from_flags_and_environment(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (tmp_path / "link").symlink_to(a)
    env = {"MAMBASIZER_MODEL_ROOTS": f"{a}{os.pathsep}{b}", "MAMBASIZER_HUB": "1"}
    from_env = serve_policy(None, None, env)
    assert from_env.roots == (str(a), str(b)) and from_env.hub and from_env.hf_cache
    from_flags = serve_policy([str(tmp_path / "link")], None, {})
    assert from_flags.roots == (str(a),) and not from_flags.hub  # roots kept resolved; Hub off by default
