"""The int8 mamba checkpoint pool in a plan (service/solver/int8_checkpoint.py): charged after
the split (the KV tokens do not move), listed as a slack consumer, and the start-up failures
SGLang would hit. SGLang's own pool code is the oracle in
tests/conformance/test_int8_checkpoint_conformance.py; these are the plan-level behaviours."""

from __future__ import annotations

from mambasizer.service.planner import plan

QWEN = {"preset": "qwen3-next-80b-a3b-instruct"}
GIB = 1 << 30


def _plan(budget: dict, **server_args):
    return plan({"model": QWEN, "server_args": {"tp_size": 4, **server_args}, "budget": budget})


def test_default_pool_on_qwen3_next_tp4_h200_does_not_leave_room_for_the_kv_pool():
    off = _plan({"gpu": "h200"})
    on = _plan({"gpu": "h200"}, enable_int8_mamba_checkpoint=True)
    assert off.feasible and off.max_mamba_cache_size == 2278
    # Not in the budget: K and the KV tokens are the same with and without the pool.
    assert (on.max_mamba_cache_size, on.max_total_num_tokens) == (off.max_mamba_cache_size, off.max_total_num_tokens)
    (pool,) = [c for c in on.slack_consumers if c.name == "int8_mamba_checkpoint_pool"]
    # 36 GDN layers x (2 x 2278 + 1) slots x (int8 8x128x128 + fp32 scale 8x128 + bf16 conv 2048x3).
    assert pool.bytes == 36 * (2 * 2278 + 1) * (8 * 128 * 128 + 8 * 128 * 4 + 2048 * 3 * 2) == 24190451712
    assert not on.feasible and on.error.kind == "checkpoint_pool_does_not_fit"
    assert on.error.exception == "torch.OutOfMemoryError" and "22.53 GiB" in on.error.message
    assert any(r.startswith("--int8-mamba-ckpt-size ") for r in on.error.remedies)
    assert any("drop --enable-int8-mamba-checkpoint" in r for r in on.error.remedies)


def test_a_pool_at_least_the_free_memory_is_sglangs_runtime_error():
    r = _plan({"gpu": "h200"}, enable_int8_mamba_checkpoint=True, int8_mamba_ckpt_size=20000)
    assert r.error.exception == "RuntimeError"
    assert r.error.message.startswith("int8 mamba checkpoint pool needs ~98.88GB but only ")
    assert "(currently 20000)" in r.error.message


def test_a_small_pool_starts_and_reports_the_slack_left():
    r = _plan({"gpu": "h200"}, enable_int8_mamba_checkpoint=True, int8_mamba_ckpt_size=500)
    assert r.feasible
    (pool,) = [c for c in r.slack_consumers if c.name == "int8_mamba_checkpoint_pool"]
    assert pool.bytes == 36 * 501 * (8 * 128 * 128 + 8 * 128 * 4 + 2048 * 3 * 2)
    assert "GiB of that slack is left" in pool.note


def test_a_rest_budget_cannot_check_it():
    r = _plan({"rest_gib": 60.0}, enable_int8_mamba_checkpoint=True)
    assert r.feasible
    (pool,) = [c for c in r.slack_consumers if c.name == "int8_mamba_checkpoint_pool"]
    assert "no free memory to check it against" in pool.note


def test_sglangs_refusals():
    r = _plan({"rest_gib": 60.0}, enable_int8_mamba_checkpoint=True, enable_hierarchical_cache=True)
    assert r.error.kind == "launch_rejected" and r.error.exception == "ValueError"
    assert "not supported together with --enable-hierarchical-cache" in r.error.message
    for bad in (0, -2):
        r = _plan({"rest_gib": 60.0}, mamba_max_states_per_path=bad)
        assert r.error.exception == "ValueError" and f"got {bad}." in r.error.message
    assert _plan({"rest_gib": 60.0}, mamba_max_states_per_path=7).feasible
