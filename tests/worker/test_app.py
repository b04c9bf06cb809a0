"""The standalone worker app: bearer token, problem+json errors, probes; the CLI entry."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from fastapi.testclient import TestClient

from mambasizer.service.cli import build_parser
from mambasizer.service.worker.app import create_app, read_token
from mambasizer.service.worker.runner import RunnerConfig, TrialRunner
from samples import TINY


def client(token=None, **config) -> TestClient:
    runner = TrialRunner(RunnerConfig(device="cpu", cpu_margin_bytes=0, **config))
    return TestClient(create_app(runner, token=token, token_from_env=False))


def test_a_trial_over_http():
    c = client()
    r = c.post("/v1/trial", json={"request": TINY, "trial": {"device": "cpu"}})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["device"] == "cpu" and body["baseline_restored"] is True
    st = body["stages"][0]
    assert st["pp_rank"] == 0
    for key in ("conv_state_bytes", "ssm_state_bytes", "intermediate_state_bytes", "kv_pool_bytes", "req_to_token_bytes", "replayssm_ring_bytes"):
        assert key in st["predicted"] and key in st["measured"]
    assert st["measured"]["kv_pool_bytes"] == st["predicted"]["kv_pool_bytes"] > 0
    assert any(u["name"] == "req_to_token" for u in st["unbudgeted"])


def test_the_trial_options_default_to_an_empty_object():
    r = client().post("/v1/trial", json={"request": TINY})
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_bearer_token_is_required_when_configured():
    c = client(token="s3cret")
    body = {"request": TINY}
    r = c.post("/v1/trial", json=body)
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert c.post("/v1/trial", json=body, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert c.post("/v1/trial", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    # The probes stay open for the kubelet.
    assert c.get("/livez").status_code == 200 and c.get("/readyz").status_code == 200


def test_token_from_env_and_file(monkeypatch, tmp_path):
    monkeypatch.setenv("MAMBASIZER_WORKER_TOKEN", "from-env")
    assert read_token() == "from-env"
    f = tmp_path / "token"
    f.write_text("from-file\n")
    assert read_token(str(f)) == "from-file"
    app = create_app(TrialRunner(RunnerConfig(device="cpu")))
    assert TestClient(app).post("/v1/trial", json={"request": TINY}).status_code == 401
    (tmp_path / "empty").write_text("  \n")
    with pytest.raises(ValueError):
        read_token(str(tmp_path / "empty"))


def test_invalid_bodies_are_422_problem_json():
    c = client()
    r = c.post("/v1/trial", json={"request": TINY, "trial": {"device": "tpu"}})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["field"] == "trial.device"
    r = c.post("/v1/trial", json={"request": TINY, "trial": {"stages": [0, 0]}})
    assert r.status_code == 422
    r = c.post("/v1/trial", json={"request": TINY, "bogus": 1})
    assert r.status_code == 422 and r.json()["field"] == "bogus"
    r = c.post("/v1/trial", content=b"not json")
    assert r.status_code == 422
    # Valid JSON the solver cannot size: the solver's field, under request.
    r = c.post("/v1/trial", json={"request": {"model": {"preset": "no-such-model"}, "budget": {"rest_gib": 1}}})
    assert r.status_code == 422 and r.json()["field"].startswith("request.model")


def test_a_cuda_request_on_a_cpu_worker_is_rejected():
    r = client().post("/v1/trial", json={"request": TINY, "trial": {"device": "cuda"}})
    assert r.status_code == 200 and r.json()["status"] == "rejected" and "CUDA" in r.json()["reason"]


def test_readyz_reports_device_and_queue():
    body = client().get("/readyz").json()
    assert body["status"] == "ready" and body["device"] == "cpu" and body["auth"] is False


def test_cli_registers_the_worker_subcommand():
    args = build_parser().parse_args(["worker", "--port", "9000", "--device", "cpu", "--queue-max", "2"])
    assert args.command == "worker" and args.port == 9000 and args.device == "cpu" and args.queue_max == 2
    assert callable(args.run)


def test_cli_refuses_cuda_without_a_gpu(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    args = build_parser().parse_args(["worker", "--device", "cuda"])
    assert args.run(args) == 2
    assert "sees no CUDA device" in capsys.readouterr().err
