"""`POST /v1/check-log`: text/plain and JSON bodies, the same answer as the CLI, 413 over
64 MiB (text/plain, read as a stream) or 1 MiB (JSON), problem+json for empty, garbage or
invalid bodies."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from mambasizer.service.api.app import create_app
from mambasizer.service.api.checklog import EXAMPLE_LOG
from mambasizer.service.startlog.compare import check_log
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
    from mambasizer.service.presets import PRESETS

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
    # The text/plain log: 64 MiB, declared or streamed; the 413 states that limit.
    resp = client.post("/v1/check-log", content=b"x" * ((64 << 20) + 1), headers={"content-type": "text/plain"})
    assert "limited to 67108864 bytes (64 MiB)" in _problem(resp, 413, None)["detail"]

    def chunks():  # no Content-Length: refused while it streams in
        for _ in range(65):
            yield b"y" * (1 << 20)

    resp = client.post("/v1/check-log", content=chunks(), headers={"content-type": "text/plain"})
    assert "limited to 67108864 bytes (64 MiB)" in _problem(resp, 413, None)["detail"]
    # The JSON form is bounded as every JSON body: 1 MiB.
    resp = client.post("/v1/check-log", content=json.dumps({"log": "x" * (1 << 20)}), headers={"content-type": "application/json"})
    assert "limited to 1048576 bytes (1 MiB)" in _problem(resp, 413, None)["detail"]


def test_a_multi_megabyte_text_log_is_read_as_a_stream(client):
    """Over the 1 MiB JSON limit, a text/plain log of mostly per-request lines answers exactly
    as its start-up lines alone."""
    text, _ = synth_log(QWEN_TP2, "Qwen/Qwen3.5-35B-A3B")
    noise = "".join(
        f"[2026-12-01 10:05:{i % 60:02d} TP{i % 2}] Decode batch. #running-req: 12, #token: 34567, token usage: 0.01, "
        f"gen throughput (token/s): 345.67, #queue-req: 0\n" for i in range(1000)
    )
    big = (text + noise * 60).encode()
    assert len(big) > 6 << 20

    def chunks():
        for at in range(0, len(big), 1 << 16):
            yield big[at : at + (1 << 16)]

    small = client.post("/v1/check-log", content=text.encode(), headers={"content-type": "text/plain"})
    resp = client.post("/v1/check-log", content=chunks(), headers={"content-type": "text/plain"})
    assert small.status_code == resp.status_code == 200, resp.text
    assert resp.json() == small.json() == check_log(text).data


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "the log is empty"),
        (b"GET / HTTP/1.1\nrandom words\n", "no SGLang start-up line"),
        (b"\xff\xfe\xfd", "not UTF-8"),
        (b"[2026-12-01 10:00:00] server_args=ServerArgs(\n", "its server_args record cannot be read"),
        (b"server_args=ServerArgs(model_path='nvidia/Nemotron-H-8B-Base-8K', tp_size=1\n", "none of the start-up figure lines to compare"),
    ],
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


def test_the_openapi_states_the_text_body_limits():
    """Empty is refused, so the schema says minLength 1; the size limit is the 64 MiB stream's."""
    doc = create_app().openapi()
    body = doc["paths"]["/v1/check-log"]["post"]["requestBody"]["content"]
    text = body["text/plain"]["schema"]
    assert text["minLength"] == 1 and text["maxLength"] == 64 << 20 and "64 MiB" in text["description"]
    single, pair = body["application/json"]["schema"]["anyOf"]
    log = single["properties"]["log"]
    assert log["maxLength"] == 1 << 19 and log["minLength"] == 1  # half the 1 MiB body: the JSON form carries more
    # A pair carries two logs: each a quarter of the body, less 4 KiB for its other fields.
    assert [pair["properties"][side]["properties"]["log"]["maxLength"] for side in ("prefill", "decode")] == [258048, 258048]
    assert "$ref" not in json.dumps(body["application/json"]["schema"])  # inline: nothing to resolve


def test_an_empty_json_log_is_a_422_naming_log(client):
    body = _problem(client.post("/v1/check-log", json={"log": ""}), 422, "log")
    assert "at least 1 character" in body["detail"]


def test_a_log_of_nothing_but_start_up_lines_is_bounded(client, monkeypatch):
    """The text/plain form keeps only the lines the reader can use, up to MAX_KEPT_BYTES (16 MiB;
    64 KiB here): a log that is all start-up wordings past it is a 422 naming `log`, while a
    larger log of per-request lines passes (its start-up lines are few)."""
    from mambasizer.service.api import checklog as route

    monkeypatch.setattr(route, "MAX_KEPT_BYTES", 64 << 10)
    decode = b"[2026-12-01 10:01:00 TP0] Decode batch. #running-req: 32, #token: 123456, token usage: 0.07, #queue-req: 0\n"
    fine = client.post("/v1/check-log", content=EXAMPLE_LOG.encode() + decode * 10_000, headers={"content-type": "text/plain"})
    assert fine.status_code == 200 and fine.json()["ranks"][0]["figures"]["kv_tokens"]["predicted"] == 1788366
    flood = EXAMPLE_LOG.encode() * 200  # ~180 KB, every line a start-up line
    body = _problem(client.post("/v1/check-log", content=flood, headers={"content-type": "text/plain"}), 422, "log")
    assert body["detail"].startswith("more than 64 KiB of its lines are start-up lines check-log reads")
    assert body["type"].endswith("unreadable-log")
