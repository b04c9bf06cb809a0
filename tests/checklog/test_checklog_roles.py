"""check-log plans each log with its disaggregation role (and DCP / DeepEP), and takes a
prefill log and a decode log together.

No public start-up log of a disaggregated hybrid deployment exists (tests/data/bootlogs/INDEX.md,
"Gaps"), so the logs here are BUILT, not observed: synth_log.py writes SGLang 0.5.23's own line
formats filled with the role's plan (whose figures tests/conformance/ checks against SGLang's
own code). What these tests check is check-log's part: it reads the role, plans that role, and
the role's figures are the ones compared (they differ from the aggregated plan's).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mambasizer.service.api.app import create_app
from mambasizer.service.planner import plan
from mambasizer.service.startlog.compare import RoleMismatch, check_log
from mambasizer.service.startlog.pair import SideError, check_pair
from synth_log import estimated_budget, synth_log

ROOT = Path(__file__).resolve().parents[2]
MODEL_PATH = "Qwen/Qwen3.5-35B-A3B"
BASE: dict[str, Any] = {"model": {"preset": "qwen3.5-35b-a3b"}, "server_args": {"tp_size": 2, "mem_fraction_static": 0.85, "max_running_requests": 32}}
BASE["budget"] = estimated_budget(BASE)


def _request(**server_args) -> dict:
    return {**BASE, "server_args": {**BASE["server_args"], **server_args}}


def _decode_log(**extra) -> tuple[str, object]:
    """A decode node's log: its MambaPool prints the size the decode request pool gives it,
    max(K, (N + extra slots) x slots per request) (SGLang 0.5.23 disaggregation/decode.py,
    HybridMambaDecodeReqToTokenPool), not K."""
    request = _request(disaggregation_mode="decode", **extra)
    planned = plan(request)
    assert planned.decode_pool is not None
    return synth_log(request, MODEL_PATH, perturb={"max_mamba_cache_size": planned.decode_pool.mamba_rows_allocated - 1})[0], planned


def _figures(result, name: str) -> tuple:
    fig = result.data["ranks"][0]["figures"][name]
    return fig["logged"], fig["predicted"]


def test_a_decode_log_is_compared_with_the_decode_plan():
    text, planned = _decode_log()
    result = check_log(text)
    assert result.all_match, result.data
    assert result.data["role"] == {"disaggregation_mode": "decode", "source": "server_args", "dcp_size": 1,
                                   "moe_a2a_backend": "none", "enable_two_batch_overlap": False}
    # 32 requests + 2 x 32 in-transfer rows, one slot each (radix cache off on a decode node): 96,
    # where the budget charged K = 32; the aggregated server would hold 1333 slots.
    assert _figures(result, "max_mamba_cache_size") == (96, 96) and planned.max_mamba_cache_size == 32
    assert plan(BASE).max_mamba_cache_size == 1333
    assert _figures(result, "kv_tokens") == (planned.max_total_num_tokens,) * 2 != (plan(BASE).max_total_num_tokens,) * 2


def test_dcp_and_deepep_are_read_from_the_record():
    text, planned = _decode_log(dcp_size=2)
    result = check_log(text)
    assert result.all_match and result.data["role"]["dcp_size"] == 2
    assert _figures(result, "kv_tokens")[1] == planned.max_total_num_tokens == 4376042  # KV heads over attn_tp // dcp
    request = _request(disaggregation_mode="prefill", moe_a2a_backend="deepep", ep_size=2)
    result = check_log(synth_log(request, MODEL_PATH)[0])
    assert result.all_match and result.data["role"]["moe_a2a_backend"] == "deepep"
    assert result.data["role"]["disaggregation_mode"] == "prefill"


def test_a_pair_is_checked_side_by_side():
    prefill_text = synth_log(_request(disaggregation_mode="prefill"), MODEL_PATH)[0]
    decode_text, decode_plan = _decode_log()
    result = check_pair({"prefill": {"text": prefill_text}, "decode": {"text": decode_text}})
    assert result.all_match
    assert [result.data[r]["role"]["disaggregation_mode"] for r in ("prefill", "decode")] == ["prefill", "decode"]
    pair = result.data["pair"]
    prefill_plan = plan(_request(disaggregation_mode="prefill"))
    assert (pair["decode_concurrency"], pair["prefill_in_flight_requests"]) == (32, 32)
    assert (pair["decode_kv_tokens"], pair["prefill_kv_tokens"]) == (decode_plan.max_total_num_tokens, prefill_plan.max_total_num_tokens)
    assert result.data["notes"] == []


def test_a_log_without_a_role_takes_its_sides_and_a_wrong_side_is_refused():
    # The record's role removed: the side it is given as plans it.
    decode_text, _ = _decode_log()
    bare = decode_text.replace(", 'disaggregation_mode': 'decode'", "")
    assert "disaggregation_mode" not in bare
    result = check_pair({"prefill": {"text": synth_log(_request(disaggregation_mode="prefill"), MODEL_PATH)[0]}, "decode": {"text": bare}})
    assert result.all_match and result.data["decode"]["role"]["source"] == "the pair's side"
    with pytest.raises(SideError) as err:
        check_pair({"prefill": {"text": decode_text}, "decode": {"text": decode_text}})
    assert err.value.field == "prefill.log" and "a decode node's" in err.value.message
    with pytest.raises(RoleMismatch, match="an aggregated server's"):
        check_log(synth_log(_request(disaggregation_mode="null"), MODEL_PATH)[0], role="decode")


def test_pair_over_the_api_and_the_cli(tmp_path):
    prefill_text = synth_log(_request(disaggregation_mode="prefill"), MODEL_PATH)[0]
    decode_text, _ = _decode_log()
    client = TestClient(create_app())
    resp = client.post("/v1/check-log", json={"prefill": {"log": prefill_text}, "decode": {"log": decode_text, "sglang_version": "0.5.23"}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert list(body) == ["prefill", "decode", "pair", "notes"]
    assert body["decode"]["release"]["source"] == "request" and body["prefill"]["release"]["source"] == "printed"
    swapped = client.post("/v1/check-log", json={"prefill": {"log": decode_text}, "decode": {"log": prefill_text}})
    assert swapped.status_code == 422 and swapped.json()["field"] == "prefill.log"
    assert client.post("/v1/check-log", json={"prefill": {"log": prefill_text}}).json()["field"] == "decode"
    (tmp_path / "p.log").write_text(prefill_text)
    (tmp_path / "d.log").write_text(decode_text)
    cli = [sys.executable, "-m", "mambasizer.service.cli", "check-log"]
    proc = subprocess.run([*cli, "--prefill", str(tmp_path / "p.log"), "--decode", str(tmp_path / "d.log"), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pair"] == body["pair"]
    proc = subprocess.run([*cli, "--prefill", str(tmp_path / "d.log"), "--decode", str(tmp_path / "p.log")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("mambasizer: error: --prefill: the log given as the prefill side is a decode node's")


def test_a_pair_of_two_models_is_refused_as_plan_refuses_it(tmp_path, capsys):
    """Two logs of different checkpoints are no disaggregated pair: refused with the field and
    the reason POST /v1/plan (and `mambasizer plan`) give for the same two requests."""
    from mambasizer.service.cli import main
    from mambasizer.service.startlog.pair import PairRefused

    other: dict[str, Any] = {"model": {"preset": "qwen3.5-27b"}, "server_args": {"tp_size": 2, "mem_fraction_static": 0.85, "disaggregation_mode": "decode"}}
    other["budget"] = estimated_budget(other)
    prefill_text = synth_log(_request(disaggregation_mode="prefill"), MODEL_PATH)[0]
    decode_text = synth_log(other, "Qwen/Qwen3.5-27B")[0]
    with pytest.raises(PairRefused) as err:
        check_pair({"prefill": {"text": prefill_text}, "decode": {"text": decode_text}})
    assert err.value.field == "decode.model"

    plan_pair = {
        "prefill": {**BASE, "server_args": {**BASE["server_args"], "disaggregation_mode": "prefill"}},
        "decode": other,
    }
    client = TestClient(create_app())
    planned = client.post("/v1/plan", json=plan_pair)
    checked = client.post("/v1/check-log", json={"prefill": {"log": prefill_text}, "decode": {"log": decode_text}})
    assert planned.status_code == checked.status_code == 422
    strip = lambda problem: {k: v for k, v in problem.items() if k != "instance"}  # noqa: E731
    assert strip(checked.json()) == strip(planned.json())
    assert checked.json()["field"] == "decode.model" and "one checkpoint" in checked.json()["detail"]

    (tmp_path / "pair.json").write_text(json.dumps(plan_pair))
    (tmp_path / "p.log").write_text(prefill_text)
    (tmp_path / "d.log").write_text(decode_text)
    assert main(["plan", str(tmp_path / "pair.json")]) == 2
    plan_err = capsys.readouterr().err
    assert main(["check-log", "--prefill", str(tmp_path / "p.log"), "--decode", str(tmp_path / "d.log")]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == plan_err and plan_err.startswith("mambasizer: error: decode.model: must be the model the prefill side serves")
    # The same model on both sides is a pair (tests above): the refusal is the models', not the two logs'.
