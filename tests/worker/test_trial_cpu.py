"""CPU trials that really allocate (1-1.3 GiB per stage): every budgeted pool measures
exactly what the plan predicts, the unbudgeted extras come back on their own lines, the
pages are resident while held, and everything is released afterwards."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from mambasizer.schemas.trial import TrialOptions, TrialResult
from mambasizer.service.planner import plan, plan_stage_tensors
from mambasizer.service.worker.devices import CpuBackend
from mambasizer.service.worker.trial import run_trial
from samples import TINY
from worker_helpers import KIMI_PP2, KIMI_REPLAY, LAYOUT_FP8, QWEN_SMALL, QWEN_SPEC, req

MIB = 1 << 20
POOL_FIELDS = ("conv_state", "ssm_state", "intermediate_state", "replayssm_ring", "kv_pool", "req_to_token", "side_tables", "int8_checkpoint")


_CACHE: dict = {}


def trial(body, **options) -> tuple[TrialResult, CpuBackend]:
    backend = CpuBackend()
    return run_trial(req(body), TrialOptions(**options), backend, cpu_margin=0), backend


def qwen_small() -> tuple[TrialResult, CpuBackend]:
    """One real 1 GiB trial shared by the tests that only read its result."""
    if "qwen" not in _CACHE:
        _CACHE["qwen"] = trial(QWEN_SMALL)
    return _CACHE["qwen"]


def assert_exact(result: TrialResult, body: dict) -> None:
    """measured == predicted for every pool, and predicted == the plan's own figures for the
    CPU manifest (the same source the plan sums)."""
    r = req(body)
    p = plan(r)
    manifests = plan_stage_tensors(r, p, "cpu")
    assert result.status == "ok", result.reason
    assert result.device == "cpu"
    assert result.would_start is True
    assert result.baseline_restored is True
    for st in result.stages:
        assert st.status == "ok" and st.would_start and st.oom is None
        assert st.leaked_bytes == 0
        expected: dict[str, int] = {}
        for t in manifests[st.pp_rank]:
            expected[t.pool] = expected.get(t.pool, 0) + t.nbytes
        for pool in POOL_FIELDS:
            pred = getattr(st.predicted, f"{pool}_bytes")
            meas = getattr(st.measured, f"{pool}_bytes")
            assert pred == expected.get(pool, 0), pool
            if pool in expected:
                assert meas == pred, pool
                assert getattr(st.difference, f"{pool}_bytes") == 0
        for line in st.pools:
            assert line.measured_bytes == line.predicted_bytes and line.difference_bytes == 0
            # Every page of every pool is in memory while held (torch.zeros touches each one),
            # asked of the pool's own pages (mincore): the process's RSS delta also moves with
            # whatever else the process frees meanwhile, so it is only reported.
            assert line.resident_bytes == line.predicted_bytes, line.pool
            assert line.rss_delta_bytes is not None
        assert st.peak_bytes == sum(expected.values())


def test_gdn_stage_matches_the_plan_byte_for_byte():
    result, backend = qwen_small()
    assert_exact(result, QWEN_SMALL)
    st = result.stages[0]
    p = plan(req(QWEN_SMALL))
    # Without spec, the CPU and CUDA manifests agree: the plan's own per-stage figures.
    ps = p.stages[0]
    assert st.predicted.conv_state_bytes == ps.conv_state_bytes
    assert st.predicted.ssm_state_bytes == ps.ssm_state_bytes
    assert st.predicted.kv_pool_bytes == ps.kv_pool_bytes
    assert st.predicted.req_to_token_bytes == ps.req_to_token_bytes
    assert backend.live_bytes() == 0


def test_unbudgeted_extras_are_reported_on_their_own_lines():
    result, _ = qwen_small()
    st = result.stages[0]
    by_name = {u.name: u for u in st.unbudgeted}
    p = plan(req(QWEN_SMALL))
    r2t = by_name["req_to_token"]
    assert r2t.predicted_bytes == r2t.measured_bytes == p.stages[0].req_to_token_bytes
    assert r2t.shape == [p.max_running_requests + 1, 8192 + 4] and r2t.dtype == "int32"
    pad = next(u for name, u in by_name.items() if name.startswith("kv padding page"))
    # page_size 1: one padded row per full layer, K and V, 2 heads x 256 dims (tp 8 keeps 1 head).
    assert pad.predicted_bytes == pad.measured_bytes == 12 * 2 * 1 * 256 * 2
    assert {"mamba_free_slots", "req_index_to_mamba_index"} <= set(by_name)
    # Budgeted bytes exclude exactly the padding page.
    kv = next(line for line in st.pools if line.pool == "kv_pool")
    assert kv.predicted_bytes - kv.budgeted_bytes == pad.predicted_bytes
    rt = next(line for line in st.pools if line.pool == "req_to_token")
    assert rt.budgeted_bytes == 0


def test_the_int8_checkpoint_pool_is_allocated_after_the_split_and_never_charged():
    """--enable-int8-mamba-checkpoint: the trial allocates SGLang's checkpoint pool (int8
    state, scale, conv windows over 2K + 1 slots, its slot list) beside the budgeted pools,
    byte for byte what the plan's slack consumer states, none of it budgeted."""
    body = {**QWEN_SMALL, "server_args": {**QWEN_SMALL["server_args"], "enable_int8_mamba_checkpoint": True}}
    result, _ = trial(body)
    assert_exact(result, body)
    st = result.stages[0]
    p = plan(req(body))
    (consumer,) = [c for c in p.slack_consumers if c.name == "int8_mamba_checkpoint_pool"]
    slots = 2 * p.max_mamba_cache_size
    line = next(x for x in st.pools if x.pool == "int8_checkpoint")
    assert line.measured_bytes == line.predicted_bytes == consumer.bytes + slots * 8  # + the int64 slot list
    assert line.budgeted_bytes == 0
    names = {u.name: u for u in st.unbudgeted if u.pool == "int8_checkpoint"}
    assert set(names) == {"ckpt.qdata", "ckpt.scale", "ckpt.conv[0]", "ckpt.free_slots"}
    # Qwen3-Next at TP 8: 36 GDN layers, 4 value heads x 128 x 128 per rank, int8.
    assert names["ckpt.qdata"].shape == [36, slots + 1, 4, 128, 128] and names["ckpt.qdata"].dtype == "int8"
    # Everything else in the plan is unchanged by the pool (it comes out of the slack).
    base = plan(req(QWEN_SMALL))
    assert (p.max_mamba_cache_size, p.max_total_num_tokens) == (base.max_mamba_cache_size, base.max_total_num_tokens)


def test_spec_intermediates_and_paged_kv():
    result, _ = trial(QWEN_SPEC)
    assert_exact(result, QWEN_SPEC)
    st = result.stages[0]
    assert st.predicted.intermediate_state_bytes > 0
    p = plan(req(QWEN_SPEC))
    # On the CPU SGLang keeps the dense conv-window layout (D windows of C-1 columns); the
    # plan's figure is the CUDA one (one deduplicated window of D+C-2 columns).
    Lr, N, D = 36, p.max_running_requests, 4
    dense_minus_dedup = Lr * (N + 1) * 1024 * (D * 3 - (D + 2)) * 2
    assert st.predicted.intermediate_state_bytes - p.stages[0].intermediate_state_bytes == dense_minus_dedup
    pad = next(u for u in st.unbudgeted if u.name.startswith("kv padding page"))
    assert pad.predicted_bytes == 12 * 2 * 16 * 1 * 256 * 2  # 16-token page, 12 layers


def test_pp_stages_run_one_after_the_other_and_are_freed_in_between():
    result, backend = trial(KIMI_PP2)
    assert_exact(result, KIMI_PP2)
    assert [s.pp_rank for s in result.stages] == [0, 1]
    p = plan(req(KIMI_PP2))
    for st in result.stages:
        ps = p.stages[st.pp_rank]
        assert st.predicted.kv_pool_bytes == ps.kv_pool_bytes  # MLA: (T + page) x 576 x 2 per layer
        assert st.predicted.ssm_state_bytes == ps.ssm_state_bytes
    # The peak is one stage, never both.
    assert max(s.peak_bytes for s in result.stages) < sum(s.peak_bytes for s in result.stages)
    assert backend.live_bytes() == 0


def test_one_selected_stage():
    result, _ = trial(KIMI_PP2, stages=[1])
    assert result.status == "ok" and [s.pp_rank for s in result.stages] == [1]


def test_replayssm_rings_and_the_uncharged_conv_window():
    result, _ = trial(KIMI_REPLAY)
    assert_exact(result, KIMI_REPLAY)
    st = result.stages[0]
    assert st.predicted.replayssm_ring_bytes > 0
    windows = [u for u in st.unbudgeted if u.name.startswith("intermediate_conv_window")]
    assert windows and all(u.measured_bytes == u.predicted_bytes for u in windows)
    # Under ReplaySSM spec the only intermediate allocated is that uncharged window.
    inter = next(line for line in st.pools if line.pool == "intermediate_state")
    assert inter.budgeted_bytes == 0 and inter.predicted_bytes == sum(u.predicted_bytes for u in windows)


def test_fp8_kv_is_stored_as_bytes():
    result, _ = trial(LAYOUT_FP8)
    assert_exact(result, LAYOUT_FP8)
    p = plan(req(LAYOUT_FP8))
    T = p.max_total_num_tokens
    assert result.stages[0].predicted.kv_pool_bytes == 2 * 2 * (T + 64) * 4 * 128 * 1


def test_held_weights_are_held_during_the_trial_and_released():
    result, backend = trial(TINY, hold_weights_gib=0.05)
    assert result.status == "ok" and result.budget.held_weights_bytes == int(0.05 * (1 << 30))
    assert result.baseline_restored and backend.live_bytes() == 0


# --------------------------------------------------------------------------- rejected


def test_a_plan_that_cannot_start_is_rejected_without_allocating():
    backend = CpuBackend()
    body = {**TINY, "budget": {"rest_gib": 0.0001}}
    result = run_trial(req(body), TrialOptions(), backend, cpu_margin=0)
    assert result.status == "rejected" and result.would_start is False
    assert "SGLang would not start" in result.reason and result.stages == []


def test_stages_out_of_range_are_rejected():
    result, _ = trial(TINY, stages=[3])
    assert result.status == "rejected" and "out of range" in result.reason


def test_a_cpu_trial_larger_than_free_memory_is_refused(monkeypatch):
    import mambasizer.service.worker.trial as trial_mod

    monkeypatch.setattr(trial_mod, "host_available_bytes", lambda: 900 * MIB)
    backend = CpuBackend()
    result = run_trial(req(QWEN_SMALL), TrialOptions(), backend, cpu_margin=256 * MIB)
    assert result.status == "rejected"
    assert "refusing rather than swapping" in result.reason and "1.00 GiB" in result.reason
    assert result.stages == [] and backend.live_bytes() == 0


def test_a_real_oversized_plan_is_refused():
    # 4 TiB of KV on the CPU: refused by the free-memory check, never attempted.
    body = {**TINY, "budget": {"rest_gib": 4096}}
    result, backend = trial(body)
    assert result.status == "rejected" and "more than this machine can spare" in result.reason
    assert backend.live_bytes() == 0


def test_device_budget_needs_cuda():
    result, _ = trial(TINY, budget="device")
    assert result.status == "rejected" and "CUDA" in result.reason


def test_a_container_memory_limit_bounds_what_a_cpu_trial_may_take(tmp_path):
    from mambasizer.service.worker.host_memory import cgroup_room_bytes

    (tmp_path / "memory.max").write_text("4294967296\n")
    (tmp_path / "memory.current").write_text("1073741824\n")
    assert cgroup_room_bytes(str(tmp_path)) == 3 << 30
    (tmp_path / "memory.max").write_text("max\n")
    assert cgroup_room_bytes(str(tmp_path)) is None
    v1 = tmp_path / "v1"
    (v1 / "memory").mkdir(parents=True)
    (v1 / "memory" / "memory.limit_in_bytes").write_text(str(2 << 30))
    (v1 / "memory" / "memory.usage_in_bytes").write_text(str(1 << 30))
    assert cgroup_room_bytes(str(v1)) == 1 << 30
    assert cgroup_room_bytes(str(tmp_path / "nowhere")) is None
