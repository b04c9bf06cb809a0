"""Conformance (issue 19): prefill / decode roles, decode context parallelism, DeepEP and
two-batch overlap, and the over-refused flags (HiCache, symmetric memory, reserved decode
tokens), against SGLang 0.5.23's own code on the CPU.

* launch resolution: SGLang's real `ServerArgs(...).resolve_once()` + `check_server_args()`
  on a stood-in H200 (tests/conformance/launch_ref.py) over seeded flag sets with each role,
  DCP, DeepEP and TBO, against our `launch.resolve`, every resolved value (radix off, decode
  extra slots and DeepEP's ep_size included) and the refusals;
* sizing: SGLang's KV-cache configurator (`sglang_ref.reference_plan`, with the role and DCP
  in its runtime context) against our plan, every top-level figure and per-stage cell;
* the issue's numbers, each first reproduced with SGLang's code.

Pool construction (HybridMambaDecodeReqToTokenPool) is tests/conformance/test_disaggregation_pools.py.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import random
import sys
import types
from pathlib import Path

import pytest

import sglang_ref
from mambasizer.service.planner import plan
from mambasizer.service.solver.errors import PlanInputError
from tests.conformance import test_launch_resolution as lr

H200_MIB = 143771
Q3N = "qwen3-next-80b-a3b-instruct"
PRESETS = Path(__file__).resolve().parents[2] / "service" / "presets" / "models"
FAMILIES = (
    Q3N, "qwen3.5-27b", "qwen3.5-35b-a3b", "kimi-linear-48b-a3b-instruct", "kimi-k3", "nemotron-h-8b-base-8k",
    "nvidia-nemotron-3-super-120b-a12b", "falcon-h1-0.5b", "granite-4.0-h-tiny", "lfm2-350m",
)
SEED = 20261219
N_CASES = 260


@contextlib.contextmanager
def flashinfer_with_dcp_mla():
    """FlashInfer >= 0.6.17 as SGLang's Kimi-K3 DCP override probes it (a decode MLA
    kernel whose signature has `enable_dcp`): the Hopper stand-in says FlashInfer is
    installed, but this CPU host has none."""

    def trtllm_batch_decode_with_kv_cache_mla(query, kv_cache, workspace_buffer, enable_dcp=False):
        raise NotImplementedError

    package, decode = types.ModuleType("flashinfer"), types.ModuleType("flashinfer.decode")
    decode.__dict__["trtllm_batch_decode_with_kv_cache_mla"] = trtllm_batch_decode_with_kv_cache_mla
    package.__dict__["decode"] = decode
    saved = {name: sys.modules.get(name) for name in ("flashinfer", "flashinfer.decode")}
    sys.modules.update({"flashinfer": package, "flashinfer.decode": decode})
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _flags(rng: random.Random, name: str) -> dict:
    lay = lr._layout(name)
    sa: dict = {}
    tp = rng.choice([1, 2, 4, 4, 8, 8])
    if tp > 1:
        sa["tp_size"] = tp
    mode = rng.choice(["decode", "decode", "prefill", "prefill", "null"])
    if mode != "null":
        sa["disaggregation_mode"] = mode
    if tp > 1 and rng.random() < 0.35:
        sa["dcp_size"] = rng.choice([d for d in (2, 4, 8) if tp % d == 0] or [tp])
    elif tp > 1 and rng.random() < 0.2:
        sa["attn_dp_size"] = rng.choice([d for d in (2, 4) if tp % d == 0])
    if rng.random() < 0.3:
        sa["moe_a2a_backend"] = "deepep"
    if rng.random() < 0.2:
        sa["enable_two_batch_overlap"] = True
    if lay.pp_supported and rng.random() < 0.15:
        sa["pp_size"] = 2
    if rng.random() < 0.35:
        sa["speculative_algorithm"] = rng.choice(["NEXTN", "EAGLE", "NGRAM"])
        if rng.random() < 0.4:
            sa.update(speculative_num_steps=7, speculative_eagle_topk=1, speculative_num_draft_tokens=8)
    if rng.random() < 0.45:
        # Around the 32-per-worker extra-slot threshold, and large enough that a decode
        # node's activation tokens pass the 10 GiB floor.
        sa["max_running_requests"] = rng.choice([1, 16, 32, 33, 64, 65, 256, 1000, 4000])
    if mode == "decode" and rng.random() < 0.25:
        sa["disaggregation_decode_enable_radix_cache"] = True
    if mode == "decode" and rng.random() < 0.15:
        sa["disaggregation_decode_extra_slots"] = rng.choice([0, 8, 100])
    if rng.random() < 0.15:
        sa["disable_radix_cache"] = True
    if rng.random() < 0.1:
        sa["cuda_graph_max_bs_prefill"] = rng.choice([12, 30, 4096])
    if rng.random() < 0.1:
        sa["cuda_graph_max_bs_decode"] = rng.choice([64, 1024])
    if rng.random() < 0.1:
        sa["page_size"] = 64
    for flag, p in (("enable_hierarchical_cache", 0.1), ("enable_symm_mem", 0.1)):
        if rng.random() < p:
            sa[flag] = True
    if rng.random() < 0.08:
        sa["num_reserved_decode_tokens"] = 2048
    return sa


def generate_cases(n: int = N_CASES, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name = FAMILIES[i % len(FAMILIES)] if i < 2 * len(FAMILIES) else rng.choice(FAMILIES)
        out.append({"id": f"{i:04d}-{name}", "model": name, "server_args": _flags(rng, name), "env": {},
                    "gpu_mib": rng.choice([H200_MIB, H200_MIB, 81559])})
    return out


# The issue's flag sets, always run.
FIXED: list[dict] = [
    {"id": "q3n-tp4", "model": Q3N, "server_args": {"tp_size": 4}},
    {"id": "q3n-tp4-decode", "model": Q3N, "server_args": {"tp_size": 4, "disaggregation_mode": "decode"}},
    {"id": "q3n-tp4-decode-mrr32", "model": Q3N, "server_args": {"tp_size": 4, "disaggregation_mode": "decode", "max_running_requests": 32}},
    {"id": "q3n-tp4-prefill", "model": Q3N, "server_args": {"tp_size": 4, "disaggregation_mode": "prefill"}},
    {"id": "q3n-tp8-dcp8", "model": Q3N, "server_args": {"tp_size": 8, "dcp_size": 8}},
    {"id": "q3n-tp8-dcp2", "model": Q3N, "server_args": {"tp_size": 8, "dcp_size": 2}},
    {"id": "q3n-tp8", "model": Q3N, "server_args": {"tp_size": 8}},
    {"id": "q3n-tp4-deepep", "model": Q3N, "server_args": {"tp_size": 4, "moe_a2a_backend": "deepep"}},
    {"id": "q3n-tp4-tbo-deepep", "model": Q3N, "server_args": {"tp_size": 4, "moe_a2a_backend": "deepep", "enable_two_batch_overlap": True}},
    {"id": "q3n-tp4-tbo", "model": Q3N, "server_args": {"tp_size": 4, "enable_two_batch_overlap": True}},
    {"id": "q3n-decode-mtp-mrr4000", "model": Q3N, "server_args": {"tp_size": 4, "disaggregation_mode": "decode", "speculative_algorithm": "NEXTN", "max_running_requests": 4000}},
    {"id": "q3.5-pp2-mtp-prefill", "model": "qwen3.5-27b", "server_args": {"tp_size": 2, "pp_size": 2, "speculative_algorithm": "NEXTN", "disaggregation_mode": "prefill"}},
    {"id": "q3.5-pp2-mtp-decode", "model": "qwen3.5-27b", "server_args": {"tp_size": 2, "pp_size": 2, "speculative_algorithm": "NEXTN", "disaggregation_mode": "decode"}},
    {"id": "kimi-k3-tp8-dcp8", "model": "kimi-k3", "server_args": {"tp_size": 8, "dcp_size": 8}},
    {"id": "kimi-k3-tp8-dcp8-decode", "model": "kimi-k3", "server_args": {"tp_size": 8, "dcp_size": 8, "disaggregation_mode": "decode"}},
    {"id": "kimi-k3-tp8-dcp8-fa3", "model": "kimi-k3", "server_args": {"tp_size": 8, "dcp_size": 8, "attention_backend": "fa3"}},
    {"id": "q3n-hicache-symm-reserved", "model": Q3N, "server_args": {"tp_size": 4, "enable_hierarchical_cache": True, "enable_symm_mem": True, "num_reserved_decode_tokens": 1024}},
]
for _case in FIXED:
    _case["env"], _case["gpu_mib"] = {}, H200_MIB

CASES = FIXED + generate_cases()


def theirs(case: dict) -> dict:
    with flashinfer_with_dcp_mla() if case["server_args"].get("dcp_size", 1) > 1 and case["model"] == "kimi-k3" else contextlib.nullcontext():
        return lr.theirs(case)


def diff(case: dict) -> str | None:
    a, b = lr.ours(case), theirs(case)
    if a["rejected"] or b["rejected"]:
        return None if lr._same_rejection(a, b) else (
            f"rejected: ours={a['rejected']} ({a.get('message', '')[:200]}) sglang={b['rejected']} ({b.get('message', '')[:200]})")
    bad = {k: (a[k], b[k]) for k in b if a.get(k) != b[k]}
    return None if not bad else "; ".join(f"{k}: ours={v[0]!r} sglang={v[1]!r}" for k, v in bad.items())


@pytest.fixture(scope="module", autouse=True)
def _sglang():
    from tests.conformance import launch_ref

    launch_ref._load()


def test_cases_reach_every_role_and_feature():
    sa = [c["server_args"] for c in CASES]
    assert {s.get("disaggregation_mode", "null") for s in sa} == {"null", "prefill", "decode"}
    assert any(s.get("dcp_size", 1) > 1 for s in sa) and any(s.get("moe_a2a_backend") == "deepep" for s in sa)
    assert any(s.get("enable_two_batch_overlap") for s in sa)
    outcomes = [theirs(c)["rejected"] for c in CASES]
    assert None in outcomes and any(o is not None for o in outcomes)
    # The decode extra slots take both their values, and the 10 GiB floor is passed somewhere.
    extra = {theirs(c).get("decode_extra_slots") for c in CASES if theirs(c)["rejected"] is None}
    assert 0 in extra and any(e for e in extra if e)


def test_launch_resolution_matches_sglang():
    failures = [f"{c['id']} {c['server_args']}: {d}" for c in CASES if (d := diff(c))]
    assert not failures, f"{len(failures)} of {len(CASES)} mismatch:\n" + "\n".join(failures[:40])


# ------------------------------------------------------------------ the issue's numbers


@pytest.mark.parametrize("case_id,mfs", [
    ("q3n-tp4", 0.897), ("q3n-tp4-decode", 0.929), ("q3n-tp4-prefill", 0.904), ("q3n-tp8-dcp8", 0.897),
    ("q3n-tp8-dcp2", 0.897), ("q3n-tp8", 0.893), ("q3n-tp4-deepep", 0.877), ("q3n-tp4-tbo-deepep", 0.886),
])
def test_issue_mem_fraction_static(case_id, mfs):
    case = next(c for c in FIXED if c["id"] == case_id)
    assert theirs(case)["mem_fraction_static"] == mfs  # SGLang's own resolution first
    assert lr.ours(case)["mem_fraction_static"] == mfs


def test_kimi_k3_dcp_on_hopper_is_refused_with_sglangs_reason():
    """Kimi-K3 + DCP forces prefill trtllm_mla / decode cutedsl_mla (after checking
    FlashInfer >= 0.6.17 exposes enable_dcp); CuteDSL MLA is Blackwell-only, so on an H200
    SGLang refuses it; with another backend the override refuses that backend."""
    for case_id, exception, fragment in (("kimi-k3-tp8-dcp8", "ValueError", "CuteDSL MLA backend is only supported on Blackwell"),
                                         ("kimi-k3-tp8-dcp8-decode", "ValueError", "CuteDSL MLA backend is only supported on Blackwell"),
                                         ("kimi-k3-tp8-dcp8-fa3", "AssertionError", "must be 'cutedsl_mla' or 'aiter', got 'fa3'")):
        case = next(c for c in FIXED if c["id"] == case_id)
        b, a = theirs(case), lr.ours(case)
        assert (b["rejected"], a["rejected"]) == (exception, exception) and fragment in b["message"] and fragment in a["message"]
    # Without FlashInfer >= 0.6.17 SGLang stops one step earlier, on the FlashInfer check.
    from tests.conformance.launch_ref import resolve_with_sglang

    bare = resolve_with_sglang(lr.MODELS["kimi-k3"], {"tp_size": 8, "dcp_size": 8}, {}, H200_MIB)
    assert bare["rejected"] == "RuntimeError" and "FlashInfer 0.6.17" in bare["message"]


def test_pp_with_mtp_only_on_a_prefill_node():
    pre = next(c for c in FIXED if c["id"] == "q3.5-pp2-mtp-prefill")
    dec = next(c for c in FIXED if c["id"] == "q3.5-pp2-mtp-decode")
    assert theirs(pre)["rejected"] is None and lr.ours(pre)["rejected"] is None
    assert theirs(dec)["rejected"] == lr.ours(dec)["rejected"] == "AssertionError"
    assert "only supported on prefill nodes" in lr.ours(dec)["message"]


def test_dcp_not_dividing_tp_is_an_input_error_with_sglangs_wording():
    """SGLang's resolution accepts it; `initialize_model_parallel` refuses it at start-up
    (its wording read from the wheel's own source), so we refuse it as input."""
    import sglang.srt.distributed.parallel_state as ps

    source = inspect.getsource(ps.initialize_model_parallel)
    assert "must be divisible by" in source and "decode_context_parallel_size" in source
    case = {"model": Q3N, "server_args": {"tp_size": 8, "dcp_size": 3}, "env": {}, "gpu_mib": H200_MIB}
    assert theirs(case)["rejected"] is None
    with pytest.raises(PlanInputError) as exc:
        plan({"model": {"preset": Q3N}, "server_args": {"tp_size": 8, "dcp_size": 3}, "budget": {"gpu": "h200"}})
    assert exc.value.field == "server_args.dcp_size"
    assert "tensor_model_parallel_size (8) must be divisible by decode_context_parallel_size (3)" in exc.value.message
    with pytest.raises(PlanInputError) as exc:
        plan({"model": {"preset": Q3N}, "server_args": {"tp_size": 8, "attn_dp_size": 4, "dcp_size": 4}, "budget": {"gpu": "h200"}})
    assert exc.value.field == "server_args.dcp_size" and "ZeroDivisionError" in exc.value.message


# ------------------------------------------------------------------ sizing against SGLang's configurator


def _preset_config(name: str) -> dict:
    raw = json.loads((PRESETS / f"{name}.json").read_text())
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def _sized(name: str, sa: dict, budget: dict) -> tuple:
    """(ours, SGLang's) for one request: our plan resolves the flags; SGLang's configurator
    is given the values its own resolution reaches (lr.theirs), as the oracle takes them."""
    resolved = theirs({"model": name, "server_args": sa, "env": {}, "gpu_mib": H200_MIB})
    assert resolved["rejected"] is None, resolved
    given = {**sa, "mem_fraction_static": resolved["mem_fraction_static"], "disable_radix_cache": resolved["disable_radix_cache"],
             "mamba_radix_cache_strategy": resolved["strategy"] if resolved["strategy"] != "auto" else "no_buffer",
             "disable_overlap_schedule": resolved["disable_overlap_schedule"]}
    for key in ("max_running_requests", "speculative_num_draft_tokens"):
        if resolved[key] is not None:
            given[key] = resolved[key]
    for key in ("enable_hierarchical_cache", "enable_symm_mem", "num_reserved_decode_tokens", "moe_a2a_backend",
                "enable_two_batch_overlap", "disaggregation_decode_enable_radix_cache", "disaggregation_decode_extra_slots"):
        given.pop(key, None)
    ref_budget = {k: v for k, v in budget.items() if k != "gpu_memory_mib"}  # the oracle takes the resolved mfs
    ref = sglang_ref.reference_plan({"model": {"hf_config": _preset_config(name)}, "server_args": given, "budget": ref_budget})
    ours = plan({"model": {"hf_config": _preset_config(name)}, "server_args": sa, "budget": budget})
    return ours, ref


SIZED = [
    (Q3N, {"tp_size": 4}),
    (Q3N, {"tp_size": 4, "disaggregation_mode": "decode"}),
    (Q3N, {"tp_size": 4, "disaggregation_mode": "decode", "max_running_requests": 32}),
    (Q3N, {"tp_size": 4, "disaggregation_mode": "decode", "disaggregation_decode_enable_radix_cache": True}),
    (Q3N, {"tp_size": 4, "disaggregation_mode": "prefill"}),
    (Q3N, {"tp_size": 4, "disaggregation_mode": "prefill", "speculative_algorithm": "NEXTN"}),
    (Q3N, {"tp_size": 4, "disaggregation_mode": "decode", "speculative_algorithm": "NEXTN"}),
    (Q3N, {"tp_size": 8, "dcp_size": 8}),
    (Q3N, {"tp_size": 8, "dcp_size": 2, "disaggregation_mode": "decode", "speculative_algorithm": "NEXTN"}),
    (Q3N, {"tp_size": 4, "moe_a2a_backend": "deepep", "enable_two_batch_overlap": True}),
    ("nemotron-h-8b-base-8k", {"tp_size": 8, "dcp_size": 4, "disaggregation_mode": "decode"}),
    ("qwen3.5-27b", {"tp_size": 2, "pp_size": 2, "speculative_algorithm": "NEXTN", "disaggregation_mode": "prefill"}),
    ("kimi-linear-48b-a3b-instruct", {"tp_size": 2, "disaggregation_mode": "prefill", "speculative_algorithm": "EAGLE"}),
]
BUDGET = {"free_gib_before_load": 139.0, "free_gib_after_load": 100.0, "gpu_memory_mib": H200_MIB}


@pytest.mark.parametrize("name,sa", SIZED, ids=[f"{n}-{json.dumps(s)}" for n, s in SIZED])
def test_sizing_matches_sglangs_configurator(name, sa):
    ours, ref = _sized(name, sa, BUDGET)
    assert ref["error"] is None and ours.feasible, (ref["error"], ours.error)
    for key in ("max_mamba_cache_size", "rest_gib", "kv_budget_bytes", "max_total_num_tokens", "max_running_requests", "pp_max_micro_batch_size"):
        assert getattr(ours, key) == ref[key], (key, getattr(ours, key), ref[key])
    for o, r in zip(ours.stages, ref["stages"], strict=True):
        assert (o.kv_cell_bytes, o.kv_tokens) == (r["kv_cell_bytes"], r["kv_tokens"])
    assert ours.logical_max_total_num_tokens == ref["max_total_num_tokens"] * sa.get("dcp_size", 1)


def test_issue_decode_node_numbers():
    """Qwen3-Next TP 4 on an H200: the decode node's plan holds far more requests than the
    aggregated one (radix off: 1 slot per request, no prefill graph, mfs 0.929), and with
    --max-running-requests 32 its pool allocates 97 mamba rows where the budget charged 33."""
    agg, agg_ref = _sized(Q3N, {"tp_size": 4}, BUDGET)
    dec, dec_ref = _sized(Q3N, {"tp_size": 4, "disaggregation_mode": "decode"}, BUDGET)
    assert (agg.max_running_requests, dec.max_running_requests) == (agg_ref["max_running_requests"], dec_ref["max_running_requests"])
    assert dec.max_running_requests > 4 * agg.max_running_requests
    small, small_ref = _sized(Q3N, {"tp_size": 4, "disaggregation_mode": "decode", "max_running_requests": 32}, BUDGET)
    assert small_ref["max_mamba_cache_size"] == small.max_mamba_cache_size == 32
    pool = small.decode_pool
    assert pool is not None and (pool.extra_slots, pool.request_rows, pool.mamba_rows_allocated, pool.mamba_rows_charged) == (64, 97, 97, 33)
    per_slot = (small.stages[0].conv_state_bytes + small.stages[0].ssm_state_bytes) // 97  # the pool allocates 97 rows
    assert pool.uncharged_mamba_bytes == 64 * per_slot
    assert any("97 mamba rows" in w and "--disaggregation-decode-extra-slots 0" in w for w in small.warnings)


def test_issue_qwen3_next_tp4_from_the_gpu_alone():
    """The issue's Qwen3-Next TP 4 H200 comparison, from the GPU alone: our plans, and
    SGLang's configurator given the same estimated free memory and its own resolved flags.
    (The issue quotes 2,405 vs 457; with this release's H200 estimate both SGLang's
    configurator and we size 2,395 vs 455, the figures the research note computed.)"""
    gpu = {"model": {"preset": Q3N}, "budget": {"gpu": "h200"}}
    agg = plan({**gpu, "server_args": {"tp_size": 4}})
    dec = plan({**gpu, "server_args": {"tp_size": 4, "disaggregation_mode": "decode"}})
    measured = {"free_gib_before_load": agg.free_gib_before_load, "free_gib_after_load": agg.free_gib_after_load, "gpu_memory_mib": H200_MIB}
    for p, sa in ((agg, {"tp_size": 4}), (dec, {"tp_size": 4, "disaggregation_mode": "decode"})):
        _, ref = _sized(Q3N, sa, measured)
        assert (p.max_running_requests, p.max_total_num_tokens, p.max_mamba_cache_size) == (
            ref["max_running_requests"], ref["max_total_num_tokens"], ref["max_mamba_cache_size"])
    assert (agg.max_running_requests, dec.max_running_requests) == (455, 2395)
    assert (agg.max_total_num_tokens, dec.max_total_num_tokens) == (3982823, 4185087)


_SIZED_OUTCOMES: list[bool] = []  # whether SGLang's configurator sized each generated case


def _sized_problem(case: dict) -> str | None:
    """One generated flag set SGLang accepts, sized by its configurator and by us."""
    ours, ref = _sized(case["model"], case["server_args"], BUDGET)
    _SIZED_OUTCOMES.append(ref["error"] is None)
    if ref["error"] is not None:
        if ours.feasible or ours.error is None or ours.error.exception != ref["error"]["exception"]:
            return f"SGLang raised {ref['error']}, ours feasible={ours.feasible} error={ours.error}"
        return None
    if not ours.feasible:
        return f"SGLang sizes it, ours refuses: {ours.error}"
    bad = [f"{k}: ours {getattr(ours, k)!r} != SGLang {ref[k]!r}" for k in (
        "max_mamba_cache_size", "mamba_ratio", "rest_gib", "kv_budget_bytes", "max_total_num_tokens", "max_running_requests",
        "pp_max_micro_batch_size") if getattr(ours, k) != ref[k]]
    for o, r in zip(ours.stages, ref["stages"], strict=True):
        if (o.kv_cell_bytes, o.kv_tokens) != (r["kv_cell_bytes"], r["kv_tokens"]):
            bad.append(f"stage {r['pp_rank']} cell/tokens: ours {(o.kv_cell_bytes, o.kv_tokens)} != SGLang {(r['kv_cell_bytes'], r['kv_tokens'])}")
    return "; ".join(bad) or None


def test_generated_plans_match_sglangs_configurator():
    """The generated flag sets SGLang starts on an H200 (every role, DCP, DeepEP, TBO), sized
    by SGLang's configurator (its own resolved flags as input) and by our plan."""
    accepted = [c for c in generate_cases() if theirs({**c, "gpu_mib": H200_MIB})["rejected"] is None][:90]
    assert len(accepted) >= 60
    modes = {c["server_args"].get("disaggregation_mode", "null") for c in accepted}
    assert modes == {"null", "prefill", "decode"} and any(c["server_args"].get("dcp_size", 1) > 1 for c in accepted)
    failures = [f"{c['id']} {c['server_args']}: {p}" for c in accepted if (p := _sized_problem(c))]
    assert not failures, f"{len(failures)} of {len(accepted)} mismatch:\n" + "\n".join(failures[:10])
    assert sum(_SIZED_OUTCOMES) >= 40, _SIZED_OUTCOMES  # most are sized, not failures compared
