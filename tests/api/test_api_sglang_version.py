"""`sglang_version` threads through every request type: plan, compare, sweep (base field and
axis), recommend, `mambasizer check --sglang-version`; a release outside the list is a 422
naming the field and listing the releases."""

from __future__ import annotations

import json

from api_helpers import assert_problem
from mambasizer.service.cli import main

QWEN = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4, "mem_fraction_static": 0.88},
        "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 100.85, "gpu_memory_mib": 143771}}


def test_plan_reference_names_the_release_and_its_rules_apply(client):
    old = client.post("/v1/plan", json={**QWEN, "sglang_version": "0.5.16"}).json()
    new = client.post("/v1/plan", json=QWEN).json()
    assert old["reference"] == "sglang==0.5.16" and new["reference"] == "sglang==0.5.23"
    # 0.5.17's budgeted padding slot: one mamba slot fewer at the same memory.
    assert old["max_mamba_cache_size"] == new["max_mamba_cache_size"] + 1


def test_an_unsupported_release_is_a_422_listing_the_releases(client):
    body = assert_problem(client.post("/v1/plan", json={**QWEN, "sglang_version": "0.5.7"}), 422, field="sglang_version")
    assert "0.5.8" in json.dumps(body) and "0.5.23" in json.dumps(body)


def test_a_model_class_the_release_cannot_load_is_a_422_naming_the_release(client):
    req = {"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "pp_size": 8}, "budget": {"gpu": "h200"}, "sglang_version": "0.5.16"}
    body = assert_problem(client.post("/v1/plan", json=req), 422, field="sglang_version")
    assert "SGLang 0.5.16 cannot load KimiK3ForConditionalGeneration" in body["detail"]


def test_compare_plans_both_sides_under_the_release(client):
    resp = client.post("/v1/plan/compare", json={**QWEN, "sglang_version": "0.5.14"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["plan"]["reference"] == body["baseline"]["reference"] == "sglang==0.5.14"


def test_sweep_over_releases_equals_plan_per_release(client):
    releases = ["0.5.13", "0.5.16", "0.5.17", "0.5.23"]
    resp = client.post("/v1/sweep", json={"base": QWEN, "axes": [{"field": "sglang_version", "values": releases}]})
    assert resp.status_code == 200, resp.text
    rows = resp.json()["rows"]
    assert [r["point"]["sglang_version"] for r in rows] == releases
    for row, v in zip(rows, releases, strict=True):
        plan = client.post("/v1/plan", json={**QWEN, "sglang_version": v}).json()
        assert row["max_mamba_cache_size"] == plan["max_mamba_cache_size"]
        assert row["max_running_requests"] == plan["max_running_requests"]


def test_recommend_plans_every_setting_under_the_release(client):
    body = {"model": {"preset": "lfm2-1.2b"}, "gpu": "h200", "gpus": [1], "target": {"running_requests": 8},
            "search": {"tp_size": [1], "pp_size": [1]}, "limit": 1}
    old = client.post("/v1/recommend", json={**body, "sglang_version": "0.5.8"})
    assert_problem(old, 422, field="sglang_version")  # LFM2 loads from 0.5.9 on
    new = client.post("/v1/recommend", json={**body, "sglang_version": "0.5.9"}).json()
    latest = client.post("/v1/recommend", json=body).json()
    (cand,), (cand_latest,) = new["candidates"], latest["candidates"]
    # Re-planned under the release: 0.5.9 budgets no padding slot for the explicit K.
    assert cand["plan"]["reference"] == "sglang==0.5.9" and cand_latest["plan"]["reference"] == "sglang==0.5.23"
    assert cand["max_mamba_cache_size"] == cand_latest["max_mamba_cache_size"] == 24
    assert cand["max_total_num_tokens"] > cand_latest["max_total_num_tokens"]


def test_check_cli_takes_the_release(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "log"))
    path = tmp_path / "req.json"
    path.write_text(json.dumps(QWEN))
    code = main(["check", str(path), "--sglang-version", "0.5.15.post1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "starts under SGLang 0.5.15.post1" in out
    code = main(["check", str(path), "--sglang-version", "0.4.0"])
    err = capsys.readouterr().err
    assert code == 2 and "sglang_version" in err
