"""`POST /v1/check-log`: text/plain and JSON bodies, the same answer as the CLI, 413 over
1 MiB, problem+json for empty, garbage or invalid bodies."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.checklog import EXAMPLE_LOG
from service.startlog.compare import check_log
from synth_log import synth_log

PROBLEM_JSON = "application/problem+json"
QWEN_TP2 = {
    "model": {"preset": "qwen3.5-35b-a3b"},
    "server_args": {"tp_size": 2, "mem_fraction_static": 0.85},
    "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0},
}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def _problem(resp, status: int, field) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].split(";")[0] == PROBLEM_JSON
    body = resp.json()
    assert body["status"] == status and body["field"] == field and body["detail"]
    for marker in ("Traceback", 'File "', "/work/", "site-packages"):
        assert marker not in resp.text
    return body


def test_text_plain_matches_the_cli_json(client):
    text, _ = synth_log(QWEN_TP2, "Qwen/Qwen3.5-35B-A3B", perturb={"max_running_requests": 3})
    resp = client.post("/v1/check-log", content=text.encode(), headers={"content-type": "text/plain"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == check_log(text).data
    fig = resp.json()["ranks"][0]["figures"]["max_running_requests"]
    assert fig["logged"] == 3 and fig["predicted"] != 3 and fig["cause"]


def test_json_body_with_and_without_hf_config(client):
    text, _ = synth_log(QWEN_TP2, "/models/unnamed")
    body = client.post("/v1/check-log", json={"log": text}).json()
    assert all(f["predicted"] is None for r in body["ranks"] for f in r["figures"].values())
    from service.presets import PRESETS

    body = client.post("/v1/check-log", json={"log": text, "hf_config": dict(PRESETS["qwen3.5-35b-a3b"].hf_config)}).json()
    kv = body["ranks"][0]["figures"]["kv_tokens"]
    assert kv["predicted"] == kv["logged"] and kv["cause"] is None


def test_openapi_example_is_real_and_matches(client):
    body = client.post("/v1/check-log", content=EXAMPLE_LOG, headers={"content-type": "text/plain"}).json()
    figures = body["ranks"][0]["figures"]
    predicted = {n: f for n, f in figures.items() if f["predicted"] is not None}
    assert set(predicted) == {"max_mamba_cache_size", "conv_state_gb", "ssm_state_gb", "kv_tokens", "max_total_num_tokens", "max_running_requests", "context_len"}
    assert all(f["logged"] == f["predicted"] for f in predicted.values())
    doc = client.get("/openapi.json").json()["paths"]["/v1/check-log"]["post"]
    assert set(doc["requestBody"]["content"]) == {"text/plain", "application/json"}
    assert doc["requestBody"]["content"]["application/json"]["examples"]["log"]["value"] == {"log": EXAMPLE_LOG, "gpu": "h100"}


def test_too_large_body_is_413(client):
    resp = client.post("/v1/check-log", content=b"x" * ((1 << 20) + 1), headers={"content-type": "text/plain"})
    _problem(resp, 413, None)

    def chunks():  # no Content-Length: refused while it streams in
        for _ in range(20):
            yield b"y" * (1 << 16)

    resp = client.post("/v1/check-log", content=chunks(), headers={"content-type": "text/plain"})
    _problem(resp, 413, None)


@pytest.mark.parametrize(
    "content, message",
    [(b"", "the log is empty"), (b"GET / HTTP/1.1\nrandom words\n", "no SGLang start-up line"), (b"\xff\xfe\xfd", "not UTF-8")],
)
def test_empty_and_garbage_text_are_422(client, content, message):
    body = _problem(client.post("/v1/check-log", content=content, headers={"content-type": "text/plain"}), 422, "log")
    assert message in body["detail"] and body["type"].endswith("unreadable-log")


@pytest.mark.parametrize(
    "payload, field",
    [
        (b"{not json", "request"),
        (b"[]", "request"),
        (json.dumps({"log": 5}).encode(), "log"),
        (json.dumps({"lg": "x"}).encode(), "log"),
        (json.dumps({"log": "x", "extra": 1}).encode(), "extra"),
        (json.dumps({"log": EXAMPLE_LOG, "hf_config": []}).encode(), "hf_config"),
        (json.dumps({"log": EXAMPLE_LOG, "hf_config": {"model_type": "llama"}}).encode(), "hf_config"),
        (json.dumps({"log": ""}).encode(), "log"),
    ],
)
def test_invalid_json_bodies_are_422(client, payload, field):
    _problem(client.post("/v1/check-log", content=payload, headers={"content-type": "application/json"}), 422, field)


def test_json_body_with_sglang_args(client):
    import pathlib

    entry = json.loads((pathlib.Path(__file__).resolve().parents[1] / "data/bootlogs/qwen3.5-397b-a17b-1.json").read_text())
    args = ["--model-path", "/data/Qwen3.5-397B-A17B-FP8", "--tp-size", "2", "--mem-fraction-static", "0.85", "--context-length", "8192"]
    resp = client.post("/v1/check-log", json={"log": entry["verbatim"], "sglang_args": args})
    assert resp.status_code == 200, resp.text
    assert resp.json() == check_log(entry["verbatim"], sglang_args=args).data
    assert resp.json()["ranks"][0]["figures"]["context_len"]["predicted"] == 8192
    body = _problem(client.post("/v1/check-log", json={"log": entry["verbatim"], "sglang_args": ["--tp-sise", "2"]}), 422, "sglang_args")
    assert "--tp-sise" in body["detail"]
    _problem(client.post("/v1/check-log", json={"log": "x", "sglang_args": ["a"] * 513}), 422, "sglang_args")
