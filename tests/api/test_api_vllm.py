"""POST /v1/plan with engine "vllm": the VllmPlan (equal to plan_engine's), the refusals as
422 problem+json naming the field (an unknown vllm_version lists the releases, an unmodelled
flag is named), and the CLI's `mambasizer plan` on the same body."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api_helpers import assert_problem
from mambasizer.schemas.releases import VLLM_RELEASES
from mambasizer.service.api.app import create_app
from mambasizer.service.cli import main
from mambasizer.service.planner import plan_engine

QWEN = {"engine": "vllm", "model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"kv_cache_memory_gib": 80.0}, "vllm_args": ["-tp", "4"]}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def test_vllm_plan_over_http_equals_the_solver(client) -> None:
    resp = client.post("/v1/plan", json=QWEN)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body == json.loads(plan_engine(QWEN).model_dump_json())
    assert body["engine"] == "vllm" and body["reference"] == "vllm==0.34.0"
    assert (body["block_size"], body["num_gpu_blocks"], body["kv_cache_tokens"]) == (320, 21845, 6907763)
    assert body["capacity_log"] == "GPU KV cache size: 6,907,763 tokens, Maximum concurrency for 262,144 tokens per request: 26.35x"


def test_vllm_refusal_is_a_plan_with_vllms_text(client) -> None:
    resp = client.post("/v1/plan", json={**QWEN, "budget": {"kv_cache_memory_gib": 3.5}})
    body = resp.json()
    assert resp.status_code == 200 and body["feasible"] is False
    assert body["error"]["message"].startswith("max_num_seqs (1024) exceeds available Mamba cache blocks (955).")
    assert body["max_num_seqs_that_starts"] == 955


def test_unknown_vllm_version_lists_the_releases(client) -> None:
    problem = assert_problem(client.post("/v1/plan", json={**QWEN, "vllm_version": "0.19.0"}), 422, "vllm_version")
    assert problem.get("allowed") == list(VLLM_RELEASES)


@pytest.mark.parametrize(("flag", "field"), [
    (["--disable-hybrid-kv-cache-manager"], "vllm_args.--disable-hybrid-kv-cache-manager"),
    (["--made-up-flag", "3"], "vllm_args.--made-up-flag"),
    (["--kv-cache-dtype", "nvfp4"], "vllm_args.--kv-cache-dtype"),
])
def test_unmodelled_flags_are_refused_by_name(client, flag: list[str], field: str) -> None:
    assert_problem(client.post("/v1/plan", json={**QWEN, "vllm_args": ["-tp", "4", *flag]}), 422, field)


def test_engine_fields_do_not_mix(client) -> None:
    assert_problem(client.post("/v1/plan", json={**QWEN, "engine": "sglang"}), 422, "vllm_args")
    assert_problem(client.post("/v1/plan", json={**QWEN, "engine": "sglang", "vllm_args": None}), 422, "budget.kv_cache_memory_gib")
    assert_problem(client.post("/v1/plan", json={**QWEN, "server_args": {"tp_size": 4}}), 422, "server_args")
    assert_problem(client.post("/v1/plan", json={**QWEN, "budget": {"gpu": "h100"}}), 422, "budget.kv_cache_memory_gib")


def test_cli_plan_prints_the_vllm_plan(tmp_path, capsys) -> None:
    path = tmp_path / "req.json"
    path.write_text(json.dumps({**QWEN, "budget": {"kv_cache_memory_gib": 3.5}}))
    assert main(["plan", str(path)]) == 1  # would not start
    out = capsys.readouterr().out
    assert "num_gpu_blocks 955" in out
    assert "max_num_seqs (1024) exceeds available Mamba cache blocks (955)" in out
