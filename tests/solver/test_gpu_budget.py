"""The estimated budget (budget.gpu / gpu_memory_mib alone): F_pre from the calibrated
residents, F_post per stage and SGLang's float32 world MIN, then the unchanged pipeline.

Weights come from service/solver/weights/ (tested on its own); here a fixed per-stage
weight table is injected where the test is about what happens AFTER the weights, so the
figures below are independent of the weights model."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from mambasizer.schemas.plan import Plan
from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError, gpu_budget, gpus

DATA = Path(__file__).resolve().parents[1] / "data"
GIB = 1 << 30
MIB = 1 << 20


def f32(x: int) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


@pytest.fixture()
def weights(monkeypatch):
    """Inject per-stage weights: a callable stage index -> bytes."""
    table = {"fn": lambda i: 20 * GIB}

    def fake(layout, *, tp_size, pp_size, ep_size, stages, load_nextn, draft_num_layers=None):
        return tuple(table["fn"](i) for i in range(len(stages)))

    class NoCache(dict):  # the table changes between plans of the same preset layout
        def __setitem__(self, key, value):
            pass

    monkeypatch.setattr(gpu_budget, "stage_weight_bytes", fake)
    monkeypatch.setattr(gpu_budget, "_WEIGHTS_CACHE", NoCache())
    return table


# ------------------------------------------------------------------ the estimate alone


def test_catalog_figures_are_nvidia_smi_totals():
    assert gpus.lookup("h100").memory_mib == 81559
    assert gpus.lookup("H200").memory_mib == 143771
    assert gpus.lookup("nvidia-h100-nvl").memory_mib == 95830
    assert gpus.lookup("b200").memory_mib == 183359 and gpus.lookup("mi300x").memory_mib == 196592
    for g in gpus.CATALOG.values():
        # A confirmed figure carries its public text; an unconfirmed part says why it has none.
        assert g.source, g
        assert g.confirmed == (not g.source.startswith("unconfirmed")), g
        assert str(g.memory_mib) in g.source or not g.confirmed, g
    assert {g.name for g in gpus.CATALOG.values() if not g.confirmed} == {
        "gh200-144gb", "h100-pcie", "mi325x", "mi300a", "mi350x", "rtx-a6000", "l4", "rtx-6000-ada", "radeon-pro-w7900",
        "rx-7900-xtx", "strix-halo"}
    # The measured capacities (GPUS.md), each with its public source.
    assert {n: gpus.lookup(n).memory_mib for n in ("rtx-3090", "a10", "rtx-4090", "rtx-5090", "l20", "l40", "a100-40gb", "a800", "mi355x")} == {
        "rtx-3090": 24576, "a10": 23028, "rtx-4090": 24564, "rtx-5090": 32607, "l20": 49140, "l40": 46068, "a100-40gb": 40960,
        "a800": 81920, "mi355x": 294896}
    assert {g.device_class for g in gpus.CATALOG.values()} == set(gpus.CLASSES)


def test_single_rank_estimate_is_exact_arithmetic():
    e = gpu_budget.estimate(143771, [30 * GIB], tp_size=1, pp_size=1)
    resident = int(gpu_budget.SINGLE_RANK_RESIDENT_GIB * GIB)
    assert e.resident_before_bytes == resident
    assert e.free_before_bytes == 143771 * MIB - resident
    # One rank: no all-reduce, so no float32 rounding.
    assert e.free_before_gib == (143771 * MIB - resident) / GIB
    after = 143771 * MIB - resident - 30 * GIB - int(gpu_budget.LOAD_RESIDENT_GIB * GIB)
    assert e.stage_free_after_bytes == (after,)
    assert e.free_after_gib == after / GIB
    assert round(e.free_before_gib, 4) == 139.2114  # 140.4014 GiB minus 1.19


def test_world_min_goes_through_float32_and_the_largest_stage_sets_it():
    w = [40 * GIB + 123_457, 41 * GIB + 7, 39 * GIB]
    e = gpu_budget.estimate(81559, w, tp_size=2, pp_size=3)
    resident = int((gpu_budget.SINGLE_RANK_RESIDENT_GIB + gpu_budget.MULTI_RANK_EXTRA_GIB) * GIB)
    free_before = 81559 * MIB - resident
    assert e.world_size == 6
    assert e.free_before_gib == f32(free_before) / GIB
    assert e.free_before_gib != free_before / GIB  # the float32 step is visible at 77 GiB
    low = free_before - (41 * GIB + 7) - int(gpu_budget.LOAD_RESIDENT_GIB * GIB)
    assert e.min_stage == 1
    assert e.free_after_gib == f32(low) / GIB
    assert e.stage_free_after_bytes[1] == low


def test_reserved_gib_replaces_the_calibrated_residents():
    e = gpu_budget.estimate(143771, [10 * GIB], tp_size=4, pp_size=1, reserved_gib=3.5)
    assert e.resident_before_bytes == int(3.5 * GIB)
    assert e.free_before_gib == f32(143771 * MIB - int(3.5 * GIB)) / GIB
    assert e.reserved_overridden


def _calibration():
    return json.loads((DATA / "fpre_calibration.json").read_text())["logs"]


@pytest.mark.parametrize("log", _calibration(), ids=lambda log: f"{log['gpu']}-tp{log['tp_size']}-pp{log['pp_size']}")
def test_f_pre_within_1_gib_of_public_hopper_logs(log):
    e = gpu_budget.estimate(gpus.lookup(log["gpu"]).memory_mib, [0], tp_size=log["tp_size"], pp_size=log["pp_size"])
    err = e.free_before_gib - log["avail_mem_before_load_gib"]
    assert abs(err) < 1.0, (log["source"], e.free_before_gib, err)


def _off_hopper() -> list[dict]:
    return json.loads((DATA / "fpre_off_hopper.json").read_text())["logs"]


@pytest.mark.parametrize("log", _off_hopper(), ids=lambda log: log["class"])
def test_f_pre_off_hopper_evidence_is_the_logs(log):
    """Each class's public F_pre (avail mem after the load + its mem usage) is what the plan's
    warning quotes, with the estimate's error computed, not typed."""
    ev = gpu_budget.FPRE_EVIDENCE[log["class"]]
    assert (ev.part, ev.tp_size) == (log["gpu"], log["tp_size"]) and gpus.CATALOG[ev.part].device_class == log["class"]
    assert ev.f_pre_gib == round(log["avail_mem_after_load_gib"] + log["weight_mem_usage_gib"], 2)
    note = gpu_budget.fpre_evidence_note(gpus.CATALOG[log["gpu"]])
    part = gpus.CATALOG[log["gpu"]]
    if part.memory_mib is None:
        assert "no fixed capacity" in note
        return
    ours = gpu_budget.estimate(part.memory_mib, [0], tp_size=log["tp_size"], pp_size=1).free_before_gib
    assert f"gives {ours:.2f} GiB ({ours - ev.f_pre_gib:+.2f} GiB)" in note


def test_f_pre_off_hopper_per_class_in_the_plan():
    """Every non-Hopper class's plan says what public logs show of F_pre there, or that none does."""
    with_log = set(gpu_budget.FPRE_EVIDENCE)
    for gpu in gpus.CATALOG.values():
        if gpu.architecture == "hopper":
            continue
        note = gpu_budget.fpre_uncertainty_warning(gpu)
        if gpu.device_class in with_log:
            assert "one public log of class" in note, gpu.name
        else:
            assert f"no public start-up log of class {gpu.device_class}" in note, gpu.name
    p = plan({"model": {"preset": "qwen3.5-27b"}, "server_args": {"tp_size": 2}, "budget": {"gpu": "rtx-4090"}})
    assert any("read 22.84 GiB before the load where this estimate gives 21.70 GiB (-1.14 GiB)" in w for w in p.warnings)


# Every hybrid-model boot log in tests/data/bootlogs, and why its F_pre is or is not
# checked against the calibrated constants. A new log fails here until it is classified.
BOOTLOG_COVERAGE = {
    "nemotron-3-nano-1.json": "Intel XPU: not a catalog GPU (XPU probe = total - torch allocated); no pre-load figure printed",
    "nemotron-3-nano-omni-30b-a3b-1.json": "GB10 (unified memory: psutil available memory): no pre-load figure, not checked",
    "nemotron-3-nano-omni-30b-a3b-2.json": "GB10 (unified memory): no pre-load figure, not checked",
    "nemotron-3-super-120b-a12b-1.json": "GB10 (unified memory, shared with another pod): no pre-load figure, not checked",
    "nemotron-3-super-120b-a12b-2.json": "GB10 (unified memory): no pre-load figure, not checked",
    "nemotron-3-ultra-550b-a55b-1.json": "GB10 (unified memory): no pre-load figure, not checked",
    "qwen3.5-35b-a3b-1.json": "AMD Strix Halo iGPU (ROCm GTT): no pre-load figure, not checked",
    "qwen3.5-35b-a3b-2.json": "GB10 (unified memory): not checked here; its after-load + usage is sm121's F_pre evidence (fpre_off_hopper.json)",
    "qwen3.5-397b-a17b-1.json": "RTX 4090 (Ada; cpu-offload-gb 400): not checked here; sm89's F_pre evidence (fpre_off_hopper.json)",
    "qwen3.6-27b-2.json": "RTX 3090 (Ampere): no pre-load figure, not checked",
}


def _platform_key(gpu_text: str):
    text = gpu_text.lower()
    for g in gpus.CATALOG.values():
        if g.product.lower() in text:
            return g.name
    return None


def test_every_bootlog_is_classified_and_covered_ones_match():
    logs = sorted(p.name for p in (DATA / "bootlogs").glob("*.json"))
    assert logs == sorted(BOOTLOG_COVERAGE), "classify each boot log in BOOTLOG_COVERAGE"
    checked = 0
    for name in logs:
        log = json.loads((DATA / "bootlogs" / name).read_text())
        gpu = _platform_key(log["gpu"])
        before = log["figures"].get("avail_mem_before_load_gb")
        if gpu is None or before is None:
            assert "not" in BOOTLOG_COVERAGE[name]
            continue
        p = log["parallel"]
        e = gpu_budget.estimate(gpus.lookup(gpu).memory_mib, [0], tp_size=p["tp_size"], pp_size=p["pp_size"])
        assert abs(e.free_before_gib - before) < 1.0, name
        checked += 1
    # None of today's hybrid logs is on a catalog GPU with a pre-load figure: the constants
    # are checked on the Hopper logs of fpre_calibration.json instead.
    assert checked == 0


# ------------------------------------------------------------------ the pipeline on it


QWEN_TP4 = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}}


def test_estimated_plan_equals_the_measured_plan_at_the_estimated_figures(weights):
    weights["fn"] = lambda i: 37 * GIB + 12_345
    est = plan({**QWEN_TP4, "budget": {"gpu": "h200"}})
    assert Plan.model_validate(est.model_dump()) == est
    assert est.feasible and est.budget_source == "estimated"
    assert est.gpu_memory_mib == 143771
    resident = int((gpu_budget.SINGLE_RANK_RESIDENT_GIB + gpu_budget.MULTI_RANK_EXTRA_GIB) * GIB)
    assert est.free_gib_before_load == f32(143771 * MIB - resident) / GIB
    after = 143771 * MIB - resident - (37 * GIB + 12_345) - int(gpu_budget.LOAD_RESIDENT_GIB * GIB)
    assert est.free_gib_after_load == f32(after) / GIB
    assert est.min_free_stage == 0
    assert est.stages[0].weights_bytes == 37 * GIB + 12_345
    assert est.stages[0].free_gib_after_load == after / GIB
    # The same pipeline: a measured plan at the same figures decides the same, to the token.
    measured = plan({**QWEN_TP4, "budget": {
        "free_gib_before_load": est.free_gib_before_load, "free_gib_after_load": est.free_gib_after_load,
        "gpu_memory_mib": 143771,
    }})
    assert measured.budget_source == "measured"
    assert measured.stages[0].weights_bytes is None
    for f in ("rest_gib", "max_mamba_cache_size", "max_total_num_tokens", "max_running_requests", "kv_budget_bytes"):
        assert getattr(est, f) == getattr(measured, f), f
    assert est.resolved.mem_fraction_static == measured.resolved.mem_fraction_static
    # The figures themselves (Qwen3-Next TP4 on an H200 with 37 GiB of weights per rank).
    assert (est.max_mamba_cache_size, est.max_running_requests, est.max_total_num_tokens) == (
        measured.max_mamba_cache_size, measured.max_running_requests, measured.max_total_num_tokens)
    assert est.max_total_num_tokens > 0 and est.max_running_requests > 0


def test_the_largest_stage_sets_f_post_for_every_stage(weights):
    big = [30 * GIB, 31 * GIB, 35 * GIB, 29 * GIB]
    weights["fn"] = lambda i: big[i]
    r = plan({"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"pp_size": 4}, "budget": {"gpu": "h100"}})
    assert r.feasible
    assert r.min_free_stage == 2
    assert [s.weights_bytes for s in r.stages] == big
    low = r.stages[2].free_gib_after_load
    assert min(s.free_gib_after_load for s in r.stages) == low
    assert r.free_gib_after_load == f32(int(low * GIB)) / GIB or abs(r.free_gib_after_load - low) < 1e-6
    # With 2 GiB less on stage 2, stage 1 sets the MIN and the rest grows.
    big[2] = 29 * GIB
    r2 = plan({"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"pp_size": 4}, "budget": {"gpu": "h100"}})
    assert r2.min_free_stage == 1
    assert r2.free_gib_after_load > r.free_gib_after_load
    assert r2.max_total_num_tokens > r.max_total_num_tokens


def test_reserved_gib_moves_the_budget_by_its_slack(weights):
    a = plan({**QWEN_TP4, "budget": {"gpu": "h200"}})
    b = plan({**QWEN_TP4, "budget": {"gpu": "h200", "reserved_gib": 4.0}})
    assert b.free_gib_before_load == f32(143771 * MIB - 4 * GIB) / GIB
    assert b.free_gib_after_load < a.free_gib_after_load
    assert b.max_total_num_tokens < a.max_total_num_tokens


def test_weights_larger_than_the_gpu_do_not_fit(weights):
    weights["fn"] = lambda i: 150 * GIB
    r = plan({**QWEN_TP4, "budget": {"gpu": "h200"}})
    assert not r.feasible
    assert r.error.kind == "weights_do_not_fit"
    assert "PP stage 0" in r.error.message and "150.00 GiB" in r.error.message
    assert r.stages[0].free_gib_after_load < 0


def _feasible_with(weights, w: int) -> bool:
    weights["fn"] = lambda i: w
    return plan({**QWEN_TP4, "budget": {"gpu": "h200"}}).feasible


def test_warning_when_the_estimate_decides_feasibility(weights):
    # The largest per-rank weight that still starts (to 1 MiB), found by bisection.
    lo, hi = 50 * GIB, 140 * GIB
    assert _feasible_with(weights, lo) and not _feasible_with(weights, hi)
    while hi - lo > MIB:
        mid = (lo + hi) // 2
        if _feasible_with(weights, mid):
            lo = mid
        else:
            hi = mid
    weights["fn"] = lambda i: lo
    edge = plan({**QWEN_TP4, "budget": {"gpu": "h200"}})
    assert edge.feasible
    assert any("the estimate decides feasibility" in w and "2% more weights" in w for w in edge.warnings), edge.warnings
    weights["fn"] = lambda i: hi
    over = plan({**QWEN_TP4, "budget": {"gpu": "h200"}})
    assert not over.feasible
    assert any("2% fewer" in w for w in over.warnings), over.warnings
    # Far from the edge: no warning.
    weights["fn"] = lambda i: lo // 2
    assert not any("decides feasibility" in w for w in plan({**QWEN_TP4, "budget": {"gpu": "h200"}}).warnings)


def test_off_catalog_capacity_plans_with_a_hopper_warning(weights):
    r = plan({**QWEN_TP4, "budget": {"gpu_memory_mib": 183359}})
    assert r.feasible and r.gpu_memory_mib == 183359
    assert any("is b200's capacity, but no budget.gpu names the device" in w and "Hopper" in w for w in r.warnings)
    assert r.resolved.gpu == "h200" and r.resolved.attention_backend == "fa3"  # unnamed: Hopper's rules, as before
    off = plan({**QWEN_TP4, "budget": {"gpu_memory_mib": 150000}})
    assert any("is not a catalog GPU's capacity" in w for w in off.warnings)
    same = plan({**QWEN_TP4, "budget": {"gpu_memory_mib": 143771}})
    assert not any("budget.gpu_memory_mib=" in w for w in same.warnings)
    assert same.max_total_num_tokens == plan({**QWEN_TP4, "budget": {"gpu": "h200"}}).max_total_num_tokens


# ------------------------------------------------------------------ input errors


@pytest.mark.parametrize("budget, field, part", [
    ({"gpu": "v100"}, "budget.gpu", "Volta (SM 7.0)"),
    ({"gpu": "mi250x"}, "budget.gpu", "AMD CDNA2"),
    ({"gpu": "tpu-v5"}, "budget.gpu", "unknown GPU"),
    ({"gpu": "tpu-v5", "rest_gib": 10.0}, "budget.gpu", "unknown GPU"),
    ({"gpu": "tpu-v5", "gpu_memory_mib": 143771}, "budget.gpu", "unknown GPU"),
    ({"gpu": "mi350x"}, "budget.gpu_memory_mib", "no public source confirms"),
    ({"gpu": {"product": "NVIDIA GB10", "runtime": "cuda"}}, "budget.gpu", "without memory_mib, compute_capability, integrated"),
    ({"gpu": {"product": "Tesla T4", "memory_mib": 15360, "compute_capability": "7.5", "runtime": "cuda", "integrated": False}},
     "budget.gpu.compute_capability", "'7.5' on cuda is not a device class"),
    ({"gpu": "h200", "host_available_mib": 100000}, "budget.host_available_mib", "applies only to an integrated"),
    ({"gpu": "gb10", "rest_gib": 10.0, "host_available_mib": 100000}, "budget", "host_available_mib only applies"),
    ({"gpu": "gh200-144gb", "reserved_gib": 2.0}, "budget.gpu_memory_mib", "nvidia-smi memory.total"),
    ({"rest_gib": 10.0, "gpu_memory_mib": 143771}, "budget", "not two forms"),
    ({"gpu": "h200", "free_gib_before_load": 100.0}, "budget", "needs rest_gib, or both"),
    ({"rest_gib": 10.0, "reserved_gib": 1.0}, "budget", "reserved_gib only applies"),
    ({"reserved_gib": 1.0}, "budget", "needs gpu"),
])
def test_budget_form_errors_name_the_field(weights, budget, field, part):
    with pytest.raises(PlanInputError) as info:
        plan({**QWEN_TP4, "budget": budget})
    assert info.value.field == field
    assert part in info.value.message
    if field == "budget.gpu":
        described = isinstance(budget["gpu"], dict)
        assert info.value.allowed == (list(gpus.DESCRIPTION_FIELDS) if described else sorted(gpus.CATALOG))


def test_ep_size_must_divide_tp_size(weights):
    with pytest.raises(PlanInputError) as info:
        plan({**QWEN_TP4, "server_args": {"tp_size": 4, "ep_size": 3}, "budget": {"gpu": "h200"}})
    assert info.value.field == "server_args.ep_size"


def test_qwen_mtp_draft_weights_are_held_under_speculative_decoding():
    """Qwen3.5 configs name their MTP layers `mtp_num_hidden_layers` (no
    num_nextn_predict_layers): under NEXTN the draft worker still builds them from the target
    checkpoint, so the GPU-only plan holds weights.py's MTP bytes on the last stage."""
    from mambasizer.service.planner import model_layout, parse_request
    from mambasizer.service.solver.stages import pp_stages
    from mambasizer.service.solver.weights import stage_weight_bytes

    base = {"model": {"preset": "qwen3.5-397b-a17b"}, "budget": {"gpu": "h200"}}
    plain = plan({**base, "server_args": {"tp_size": 8}})
    mtp = plan({**base, "server_args": {"tp_size": 8, "speculative_algorithm": "NEXTN"}})
    layout = model_layout(parse_request({**base, "server_args": {"tp_size": 8}}))
    stages = pp_stages(layout.num_hidden_layers, 1)
    with_draft = stage_weight_bytes(layout, tp_size=8, pp_size=1, ep_size=1, stages=stages, load_nextn=True)
    without = stage_weight_bytes(layout, tp_size=8, pp_size=1, ep_size=1, stages=stages, load_nextn=False)
    assert plain.stages[0].weights_bytes == without[0]
    assert mtp.stages[0].weights_bytes == with_draft[0] > without[0]
