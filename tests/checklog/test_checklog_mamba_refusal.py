"""check-log on a real public start-up refusal (issue 25 item 1): Qwen/Qwen3.8-27B-FP8 on one
MI355X, SGLang 0.5.17 ROCm, `--mem-fraction-static 0.25`, refused by SGLang's mamba pool check:

    RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache.
    Computed max_mamba_cache_size=-28 (total_rest_memory=-7.96 GB, mamba_cache_per_req=146.81 MB).

The log is tests/data/checkpoint_bootlogs/qwen3.8-27b-fp8-3.json (a byte-identical copy of the
shared collection's entry; its `source` names where it was published). The model is the FP8
checkpoint fixture's config.json (tests/checkpoints/ckpt_fixtures.py `fp8`, sourced in
tests/data/checkpoints/SOURCES.md). The excerpt prints no free memory, so check-log's budget
is the refusal's own `total_rest_memory` (the memory SGLang handed to the mamba split); from it
the plan must print the same slot count and per-request state, through the library, the CLI
and the API.

What the log cannot give, and the gap it leaves: the refusal's total_rest_memory itself. From
the GPU alone (MI355X at the catalog's 294,896 MiB, aiter, the HIP factor making the 0.25 an
effective 0.2125), mambasizer plans a start: 106 slots from 32.51 GB. The log's -7.96 GB needs
SGLang to have measured 96.33 GiB free before the load (R = F_pre x 0.2125 - W with our 28.43
GiB of weights), i.e. 66.6% of the GPU held by something else when it started. The author says
other SGLang servers (embedding, reranker) still held about 66% of the GPU during the attempt:
the cause is outside the model, and with that free memory given as the measured budget the
plan prints the refusal's three figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from checkpoints.ckpt_fixtures import copy_config
from mambasizer.service.api.app import create_app
from mambasizer.service.cli import main
from mambasizer.service.planner import plan
from mambasizer.service.startlog.compare import check_log

ROOT = Path(__file__).resolve().parents[2]
ENTRY = json.loads((ROOT / "tests/data/checkpoint_bootlogs/qwen3.8-27b-fp8-3.json").read_text())
LOG: str = ENTRY["verbatim"]
LOGGED = ENTRY["figures"]["startup_error"]  # computed_max_mamba_cache_size -28, total_rest_memory_gb -7.96, ...
CONFIG = copy_config("fp8")
RELEASE = "0.5.17"
LAUNCH = ["--model-path", "Qwen/Qwen3.8-27B-FP8", "--mem-fraction-static", "0.25"]  # the entry's command
CAPACITY_MIB = 294_896  # the catalog's (unconfirmed) MI355X figure, budget.gpu_memory_mib


def _figures(data: dict) -> dict:
    (rank,) = data["ranks"]
    return rank["figures"]


def _assert_reproduced(data: dict) -> None:
    figures = _figures(data)
    assert figures["computed_max_mamba_cache_size"] == {"logged": -28, "predicted": -28, "cause": None}
    assert figures["mamba_cache_per_req_mb"] == {"logged": 146.81, "predicted": 146.81, "cause": None}
    rest = figures["total_rest_memory_gb"]
    assert rest["logged"] == -7.96 and rest["predicted"] is None and "takes it as input" in rest["cause"]


def test_the_log_entry_is_the_refusal_it_quotes():
    assert (LOGGED["computed_max_mamba_cache_size"], LOGGED["total_rest_memory_gb"], LOGGED["mamba_cache_per_req_mb"]) == (-28, -7.96, 146.81)
    assert "Computed max_mamba_cache_size=-28 (total_rest_memory=-7.96 GB, mamba_cache_per_req=146.81 MB)" in LOG


def test_check_log_reproduces_the_refusal():
    result = check_log(LOG, hf_config=CONFIG, sglang_args=LAUNCH, gpu="mi355x", sglang_version=RELEASE)
    _assert_reproduced(result.data)
    assert result.all_match
    assert result.plan is not None and not result.plan.feasible and result.plan.error.kind == "mamba_cache_too_small"
    assert result.plan.resolved.mem_fraction_static == pytest.approx(0.2125)  # the HIP factor on 0.25
    assert any("total_rest_memory SGLang printed in its refusal (-7.96 GB" in n for n in result.notes)


@pytest.mark.parametrize("rest", [-7.965, -7.955])
def test_the_slot_count_holds_over_the_printed_rounding(rest):
    """total_rest_memory prints to 2 decimals: -28 slots over the whole ±0.005 GB it may have been."""
    planned = plan({"model": {"hf_config": CONFIG}, "server_args": {"mem_fraction_static": 0.25},
                    "budget": {"rest_gib": rest, "gpu": "mi355x"}, "sglang_version": RELEASE})
    assert "Computed max_mamba_cache_size=-28 (total_rest_memory=-7.96 GB, mamba_cache_per_req=146.81 MB)" in planned.error.message


def test_cli_reproduces_the_refusal(tmp_path, capsys):
    (tmp_path / "server.log").write_text(LOG)
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    code = main(["check-log", "--json", "--gpu", "mi355x", "--sglang-version", RELEASE, "--config", str(tmp_path / "config.json"),
                 str(tmp_path / "server.log"), "--", *LAUNCH])
    out = capsys.readouterr().out
    assert code == 0, out
    _assert_reproduced(json.loads(out))


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def test_api_reproduces_the_refusal(client):
    resp = client.post("/v1/check-log", json={"log": LOG, "hf_config": CONFIG, "sglang_args": LAUNCH, "gpu": "mi355x", "sglang_version": RELEASE})
    assert resp.status_code == 200, resp.text[:500]
    _assert_reproduced(resp.json())


def test_the_gpu_alone_plans_a_start_the_gap_is_memory_held_by_others(client):
    """What we compute without the log's figures, and the free memory the refusal implies."""
    body = {"model": {"hf_config": CONFIG}, "server_args": {"mem_fraction_static": 0.25},
            "budget": {"gpu": "mi355x", "gpu_memory_mib": CAPACITY_MIB}, "sglang_version": RELEASE}
    alone = client.post("/v1/plan", json=body).json()
    assert alone["feasible"] is True
    assert (alone["max_mamba_cache_size"], round(alone["rest_gib"], 2)) == (106, 32.51)
    assert round(alone["mamba_cache_per_req_bytes"] / (1 << 20), 2) == 146.81  # the model's state: the log's own
    weights = alone["free_gib_before_load"] - alone["free_gib_after_load"]
    assert round(weights, 2) == 28.43
    # R = F_pre - W - F_pre x (1 - 0.2125): the free memory before the load the logged R needs.
    implied_before = (weights + LOGGED["total_rest_memory_gb"]) / 0.2125
    held = 1 - implied_before / (CAPACITY_MIB / 1024)
    assert round(implied_before, 2) == 96.33 and round(held, 3) == 0.666  # the author: "about 66%" held by other servers
    measured = {**body, "budget": {"free_gib_before_load": round(implied_before, 2),
                                   "free_gib_after_load": round(implied_before - weights, 2), "gpu": "mi355x"}}
    refused = client.post("/v1/plan", json=measured).json()
    assert refused["feasible"] is False and refused["error"]["kind"] == "mamba_cache_too_small"
    assert "Computed max_mamba_cache_size=-28 (total_rest_memory=-7.96 GB, mamba_cache_per_req=146.81 MB)" in refused["error"]["message"]
