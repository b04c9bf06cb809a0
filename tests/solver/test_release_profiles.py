"""The sizing boundaries between releases, with their numbers (the shipped presets on H200s,
tests/conformance/preset_cases.py's deployments). The launch values a release resolves by
default (the radix strategy, mem_fraction_static) are pinned here as flags: this file tests
the sizing given them; tests/conformance/test_release_sizing.py proves the same rules
against each release's own code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import preset_cases
from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.releases.sizing import sizing_profile


def _plan(name: str, version: str, **server_args) -> dict:
    r = preset_cases.preset_request(name)
    r["sglang_version"] = version
    r["server_args"].update(server_args)
    return plan(r).model_dump()


def _headline(p: dict) -> tuple:
    return p["max_mamba_cache_size"], p["mamba_ratio"], p["max_total_num_tokens"], p["max_running_requests"], p["binding_limit"]


def test_0_5_14_slots_per_request_3_to_5():
    # 0.5.13 resolves `auto` to no_buffer (overlap off), 0.5.14 to extra_buffer: the same K, S 3 -> 5.
    old = _plan("qwen3-next-80b-a3b-instruct", "0.5.13", mamba_radix_cache_strategy="no_buffer", disable_overlap_schedule=True)
    new = _plan("qwen3-next-80b-a3b-instruct", "0.5.14", mamba_radix_cache_strategy="extra_buffer")
    assert _headline(old) == (2214, 3, 3868187, 738, "mamba_slots")
    assert _headline(new) == (2214, 5, 3868187, 442, "mamba_slots")
    assert old["reference"] == "sglang==0.5.13" and new["reference"] == "sglang==0.5.14"


def test_0_5_17_padding_slot_lowers_k_by_one_and_keeps_the_kv():
    old = _plan("qwen3-next-80b-a3b-instruct", "0.5.16")
    new = _plan("qwen3-next-80b-a3b-instruct", "0.5.17")
    assert _headline(old) == (2214, 5, 3868187, 442, "mamba_slots")
    assert _headline(new) == (2213, 5, 3868187, 442, "mamba_slots")
    assert old["kv_budget_bytes"] == new["kv_budget_bytes"] == 47532286410


def test_0_5_17_per_stage_pp_charge():
    # Nemotron-H 56B on PP 2: before 0.5.17 each stage charged the whole model's mamba state.
    old = _plan("nemotron-h-56b-base-8k", "0.5.16")
    new = _plan("nemotron-h-56b-base-8k", "0.5.17")
    assert old["stages"][0]["stage_per_req_bytes"] == 228151296 == old["mamba_cache_per_req_bytes"]
    assert new["stages"][0]["stage_per_req_bytes"] == 114075648
    assert _headline(old) == (241, 4, 11955806, 60, "mamba_slots")
    assert _headline(new) == (481, 4, 11955806, 120, "mamba_slots")
    # The KV budget does not move (the ratio split keeps the mamba share); K and the cap double.
    assert old["kv_budget_bytes"] == new["kv_budget_bytes"] == 61213730373


def test_0_5_10_to_0_5_13_clamp_max_running_requests_to_the_estimate():
    old = _plan("lfm2-1.2b", "0.5.13", max_running_requests=8000, disable_radix_cache=True)
    new = _plan("lfm2-1.2b", "0.5.14", max_running_requests=8000, disable_radix_cache=True)
    assert _headline(old) == (8000, 1, 10288072, 4096, "estimate")
    assert any("clamps --max-running-requests to its estimate" in w for w in old["warnings"])
    assert _headline(new) == (8000, 1, 10288072, 8000, "user_max_running_requests")


def test_0_5_8_kimi_linear_512_slots_without_radix():
    old = _plan("kimi-linear-48b-a3b-instruct", "0.5.8", disable_radix_cache=True)
    new = _plan("kimi-linear-48b-a3b-instruct", "0.5.9", disable_radix_cache=True)
    assert _headline(old) == (512, 1, 8654438, 512, "mamba_slots")
    assert _headline(new) == (1765, 1, 5281283, 1765, "mamba_slots")


def test_0_5_18_multimodal_reservation():
    # Kimi-K3 is multimodal: 0.5.18 takes SGLANG_VLM_CACHE_SIZE_MB (100 MB) off the rest first.
    old = _plan("kimi-k3", "0.5.17")
    new = _plan("kimi-k3", "0.5.18")
    assert old["rest_gib"] - new["rest_gib"] == pytest.approx(100 / 1024)
    assert (old["max_mamba_cache_size"], old["max_total_num_tokens"]) == (5320, 9402218)
    assert new["max_total_num_tokens"] < old["max_total_num_tokens"]


def test_a_model_class_the_release_cannot_load_is_refused_with_the_release_named():
    with pytest.raises(PlanInputError) as exc:
        _plan("kimi-k3", "0.5.16")
    assert exc.value.field == "sglang_version"
    assert "SGLang 0.5.16 cannot load KimiK3ForConditionalGeneration" in exc.value.message
    assert "from SGLang 0.5.17 on" in exc.value.message
    with pytest.raises(PlanInputError, match=r"0\.5\.8 cannot load Lfm2ForCausalLM"):
        _plan("lfm2-1.2b", "0.5.8")


def test_post_releases_size_as_their_base():
    assert sizing_profile("0.5.15.post1") == sizing_profile("0.5.15")
    a, b = _plan("qwen3-next-80b-a3b-instruct", "0.5.15.post1"), _plan("qwen3-next-80b-a3b-instruct", "0.5.15")
    assert _headline(a) == _headline(b)
    assert a["reference"] == "sglang==0.5.15.post1"


def test_an_unknown_release_is_a_422_listing_the_releases():
    r = preset_cases.preset_request("lfm2-1.2b")
    r["sglang_version"] = "0.5.7"
    with pytest.raises(PlanInputError) as exc:
        plan(r)
    assert exc.value.field == "sglang_version"
    assert exc.value.allowed is not None and "0.5.8" in exc.value.allowed and "0.5.23" in exc.value.allowed


def test_epochs_switch_where_the_code_did():
    p = {v: sizing_profile(v) for v in ("0.5.8", "0.5.9", "0.5.12", "0.5.13", "0.5.16", "0.5.17", "0.5.22", "0.5.23")}
    assert p["0.5.8"].mamba_branches == "two_way_512" and p["0.5.9"].mamba_branches == "three_way"
    assert (p["0.5.12"].spec_intermediate, p["0.5.13"].spec_intermediate, p["0.5.17"].spec_intermediate) == (
        "upfront", "per_branch", "per_branch_padded")
    assert not p["0.5.16"].pp_scale and p["0.5.17"].pp_scale
    assert (p["0.5.13"].eagle_cell, p["0.5.17"].eagle_cell, p["0.5.22"].eagle_cell) == ("none", "int_scaled", "add_int")
    assert p["0.5.23"].max_num_reqs_rule == "tokens_half_guarded" and p["0.5.22"].max_num_reqs_rule == "tokens_half"
