"""Plans on non-Hopper GPUs against SGLang 0.5.23's own code, end to end: SGLang's resolution
with the device stand-in (tests/conformance/launch_ref.py `_device`, the probes of
launch_ref.DEVICE_PROBES) gives the launch values; SGLang's own sizing
(tests/conformance/sglang_ref.py `reference_plan`) fed those values and our estimated
F_pre / F_post gives the pool; our plan from `budget: {"gpu": NAME}` must equal both.

The first case is issue 18's: Qwen3-Next-80B TP 4 on MI300X resolves mem_fraction_static
0.73525 (0.865 x aiter's 0.85), 537 requests and 4,698,736 tokens, where Hopper's rules
at the same capacity give 0.862, 664 and 5,804,636.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambasizer.service.planner import plan
from mambasizer.service.solver import gpus

PRESETS = Path(__file__).resolve().parents[2] / "service" / "presets" / "models"

if __import__("importlib.util").util.find_spec("sglang") is None:
    pytest.skip("needs the sglang==0.5.23 wheel", allow_module_level=True)


def _config(name: str) -> dict:
    return {k: v for k, v in json.loads((PRESETS / f"{name}.json").read_text()).items() if not k.startswith("_")}


def _sglang_resolution(model: str, server_args: dict, env: dict, gpu: str) -> dict:
    from tests.conformance.launch_ref import resolve_with_sglang

    g = gpus.CATALOG[gpu]
    assert g.memory_mib is not None
    return resolve_with_sglang(_config(model), server_args, env, g.memory_mib,
                               device={"capability": g.capability, "runtime": g.runtime, "name": g.product})


def _sglang_sizing(model: str, server_args: dict, env: dict, free_before: float, free_after: float, resolved: dict) -> dict:
    from tests.conformance import sglang_ref

    sa = {**server_args, "mem_fraction_static": resolved["mem_fraction_static"], "page_size": resolved["page_size"]}
    if resolved["strategy"] != "auto":
        sa["mamba_radix_cache_strategy"] = resolved["strategy"]
    sa["disable_overlap_schedule"] = resolved["disable_overlap_schedule"]
    if resolved["speculative_algorithm"] is not None:  # the sizing reads the resolved speculative values
        for k in ("speculative_num_draft_tokens", "speculative_num_steps", "speculative_eagle_topk", "max_running_requests"):
            sa[k] = resolved[k]
    env = {k: v for k, v in env.items() if not k.startswith("SGLANG_AITER")}
    return sglang_ref.reference_plan({
        "model": {"hf_config": _config(model)}, "server_args": sa, "env": env,
        "budget": {"free_gib_before_load": free_before, "free_gib_after_load": free_after},
    })


CASES = [
    # (model, gpu, server_args, env, expected (mfs, page, backend, N, T) or None to take SGLang's)
    ("qwen3-next-80b-a3b-instruct", "mi300x", {"tp_size": 4}, {}, (0.73525, 1, "aiter", 537, 4_698_736)),
    ("qwen3-next-80b-a3b-instruct", "mi300x", {"tp_size": 4}, {"SGLANG_AITER_KV_CACHE_LAYOUT": "vectorized_5d"}, None),
    ("qwen3-next-80b-a3b-instruct", "mi300x", {"tp_size": 4, "mem_fraction_static": 0.85}, {}, None),
    ("qwen3-next-80b-a3b-instruct", "mi300x", {"tp_size": 4, "mem_fraction_static": 0.85}, {"SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION": "1"}, None),
    ("kimi-linear-48b-a3b-instruct", "mi300x", {"tp_size": 4}, {}, None),
    ("qwen3-next-80b-a3b-instruct", "b200", {"tp_size": 4}, {}, None),
    ("qwen3-next-80b-a3b-instruct", "b200", {"tp_size": 4, "disable_radix_cache": True}, {}, None),
    ("nvidia-nemotron-3-super-120b-a12b", "b200", {"tp_size": 4, "kv_cache_dtype": "bf16"}, {}, None),  # the preset declares FP8 KV in _hf_quant_config, which the reference config drops
    ("nvidia-nemotron-nano-9b-v2", "b200", {}, {}, None),
    ("nvidia-nemotron-3-super-120b-a12b", "gb300", {"tp_size": 4, "speculative_algorithm": "NEXTN", "kv_cache_dtype": "bf16"}, {}, None),
    ("nemotron-h-8b-base-8k", "rtx-pro-6000", {}, {}, None),
    ("granite-4.0-h-tiny", "l40s", {}, {}, None),
    ("qwen3-next-80b-a3b-instruct", "a100-80gb", {"tp_size": 4}, {}, None),
    ("qwen3-next-80b-a3b-instruct", "h20", {"tp_size": 4}, {}, None),
]


@pytest.mark.parametrize("model, gpu, server_args, env, expected", CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_plan_on_gpu_is_sglangs(model, gpu, server_args, env, expected):
    theirs = _sglang_resolution(model, server_args, {k: (v if not isinstance(v, str) or not v.isdigit() else True) for k, v in env.items()}, gpu)
    assert theirs["rejected"] is None, theirs
    ours = plan({"model": {"preset": model}, "server_args": server_args, "env": env, "budget": {"gpu": gpu}})
    assert ours.feasible, ours.error
    r = ours.resolved
    assert (r.mem_fraction_static, r.page_size, r.attention_backend, r.gpu) == (theirs["mem_fraction_static"], theirs["page_size"], theirs["attention_backend"], gpu)
    assert ours.budget_source == "estimated"
    sizing = _sglang_sizing(model, server_args, env, ours.free_gib_before_load, ours.free_gib_after_load, theirs)
    assert sizing["error"] is None, sizing["error"]
    got = (ours.max_mamba_cache_size, ours.max_total_num_tokens, ours.max_running_requests, ours.kv_budget_bytes)
    want = (sizing["max_mamba_cache_size"], sizing["max_total_num_tokens"], sizing["max_running_requests"], sizing["kv_budget_bytes"])
    assert got == want
    if expected is not None:
        assert (r.mem_fraction_static, r.page_size, r.attention_backend, ours.max_running_requests, ours.max_total_num_tokens) == expected
    if r.page_size > 1:
        assert ours.max_total_num_tokens % r.page_size == 0  # the token floor to whole pages
    # Off Hopper the residents before load are Hopper's, and the plan says so.
    if gpus.CATALOG[gpu].architecture != "hopper":
        assert any(f"on {gpu} (" in w and "not calibrated" in w for w in ours.warnings)
    else:
        assert not any("not calibrated" in w for w in ours.warnings)


def test_hopper_rules_at_the_same_capacity_are_the_issues_wrong_figures():
    """Unnamed, the MI300X's capacity resolves as Hopper (unchanged, warned): the issue's
    0.862 / 664 / 5,804,636."""
    ours = plan({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu_memory_mib": 196592}})
    assert (ours.resolved.mem_fraction_static, ours.max_running_requests, ours.max_total_num_tokens, ours.resolved.gpu) == (0.862, 664, 5_804_636, "h200")
    assert any("is mi300x's capacity, but no budget.gpu names the device" in w for w in ours.warnings)


def test_reserved_gib_overrides_and_silences_the_uncalibrated_warning():
    base = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}}
    warned = plan({**base, "budget": {"gpu": "mi300x"}})
    given = plan({**base, "budget": {"gpu": "mi300x", "reserved_gib": 4.0}})
    assert not any("not calibrated" in w for w in given.warnings)
    assert given.free_gib_before_load == pytest.approx(196592 / 1024 - 4.0, abs=1e-4)
    assert given.free_gib_before_load < warned.free_gib_before_load
