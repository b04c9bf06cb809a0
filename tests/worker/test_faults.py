"""Faults are results: out of memory mid-allocation, a trial past its deadline, a second
trial while one runs, a worker that is down or slower than the timeout. Each gives the
documented status and leaks nothing (the device is back at its pre-trial allocation)."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest

torch = pytest.importorskip("torch")

import httpx  # noqa: E402

from mambasizer.schemas.trial import TrialOptions  # noqa: E402
from mambasizer.service.planner import plan, plan_stage_tensors  # noqa: E402
from mambasizer.service.worker import client  # noqa: E402
from mambasizer.service.worker.app import create_app  # noqa: E402
from mambasizer.service.worker.devices import CpuBackend  # noqa: E402
from mambasizer.service.worker.runner import QueueFull, RunnerConfig, TrialRunner  # noqa: E402
from mambasizer.service.worker.trial import run_trial  # noqa: E402
from samples import TINY  # noqa: E402
from serving import free_port  # noqa: E402
from worker_helpers import QWEN_SMALL, GatedBackend, SingleBackendFactory, req, serve, wait_for  # noqa: E402

MIB = 1 << 20


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


# --------------------------------------------------------------------------- OOM


def test_oom_mid_allocation_under_a_device_cap_is_a_result_and_releases_everything():
    r = req(QWEN_SMALL)
    tensors = plan_stage_tensors(r, plan(r), "cpu")[0]
    # A 600 MiB device: req_to_token, conv, the 468 MiB temporal state and a few KV layers
    # fit, the rest of the KV does not.
    cap = 600 * MIB
    backend = CpuBackend(cap_bytes=cap)
    gc.collect()
    rss0 = _rss()
    result = run_trial(r, TrialOptions(), backend, cpu_margin=0)
    assert result.status == "oom" and result.would_start is False
    st = result.stages[0]
    assert st.status == "oom" and not st.would_start
    assert st.oom.pool == "kv_pool" and st.oom.tensor.startswith("kv[")
    # The pools before the failure were measured, the failing one and the rest were not.
    assert st.measured.ssm_state_bytes == st.predicted.ssm_state_bytes
    assert st.measured.kv_pool_bytes is None and st.difference.kv_pool_bytes is None
    # By how much: what the stage still needed minus what the device had left.
    failed = next(i for i, t in enumerate(tensors) if t.name == st.oom.tensor)
    done = sum(t.nbytes for t in tensors[:failed])
    assert st.oom.requested_bytes == tensors[failed].nbytes
    assert st.oom.free_bytes == cap - done
    assert st.oom.remaining_bytes == sum(t.nbytes for t in tensors[failed:])
    assert st.oom.shortfall_bytes == st.oom.remaining_bytes - st.oom.free_bytes
    assert st.peak_bytes == done
    assert "pp rank 0: out of memory at kv_pool" in result.reason
    # Nothing leaked: allocator view and the resident set.
    assert st.leaked_bytes == 0 and result.baseline_restored is True
    assert backend.live_bytes() == 0
    gc.collect()
    assert _rss() - rss0 < 64 * MIB


def test_oom_raised_by_torch_mid_way_is_caught_and_everything_is_released(monkeypatch):
    """torch.zeros itself raises (as the CUDA caching allocator does) on the temporal state,
    the stage's third tensor, after req_to_token and the conv state were allocated."""
    real_zeros = torch.zeros

    def flaky_zeros(shape, *args, **kwargs):
        if len(shape) == 5:  # (layers, K + 1, heads, v, k)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 468.00 MiB (simulated)")
        return real_zeros(shape, *args, **kwargs)

    monkeypatch.setattr(torch, "zeros", flaky_zeros)
    backend = CpuBackend()
    result = run_trial(req(QWEN_SMALL), TrialOptions(), backend, cpu_margin=0)
    monkeypatch.setattr(torch, "zeros", real_zeros)
    st = result.stages[0]
    assert result.status == "oom" and st.oom.pool == "ssm_state"
    assert "Tried to allocate" in st.oom.message
    assert st.measured.conv_state_bytes == st.predicted.conv_state_bytes
    assert st.measured.ssm_state_bytes is None
    assert result.baseline_restored and backend.live_bytes() == 0


def test_a_plain_runtime_error_is_not_mistaken_for_an_oom(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("some other failure")

    monkeypatch.setattr(torch, "zeros", broken)
    with pytest.raises(RuntimeError, match="some other failure"):
        run_trial(req(TINY), TrialOptions(), CpuBackend(), cpu_margin=0)


def test_weights_that_do_not_fit_are_an_oom_before_any_pool():
    backend = CpuBackend(cap_bytes=16 * MIB)
    result = run_trial(req(TINY), TrialOptions(hold_weights_gib=0.5), backend, cpu_margin=0)
    assert result.status == "oom" and "weights" in result.reason and result.stages == []
    assert result.baseline_restored and backend.live_bytes() == 0


# --------------------------------------------------------------------------- timeout, queue


def test_a_trial_past_its_timeout_is_unavailable_and_releases_its_memory():
    backend = GatedBackend(delay_s=0.15)
    runner = TrialRunner(RunnerConfig(queue_max=1), backend_factory=SingleBackendFactory(backend))
    result = runner.run(req(TINY), TrialOptions(timeout_s=0.3))
    assert result.status == "unavailable" and "timeout_s=0.3" in result.reason
    # The cancelled trial stops at the next allocation, frees, and gives the device back.
    assert wait_for(lambda: not runner.status()["cpu"]["busy"], timeout=10)
    assert backend.allocations < 8  # it stopped early, not after every tensor
    assert backend.live_bytes() == 0


def test_a_second_trial_while_one_runs_waits_and_a_third_gets_queue_full():
    gate = threading.Event()
    backend = GatedBackend(gate=gate)
    runner = TrialRunner(RunnerConfig(queue_max=1), backend_factory=SingleBackendFactory(backend))

    async def scenario():
        first = asyncio.create_task(runner.submit(req(TINY), TrialOptions(timeout_s=30)))
        await asyncio.to_thread(backend.started.wait, 10)
        second = asyncio.create_task(runner.submit(req(TINY), TrialOptions(timeout_s=30)))
        await asyncio.to_thread(wait_for, lambda: runner.status()["cpu"]["waiting"] == 1)
        with pytest.raises(QueueFull):
            await runner.submit(req(TINY), TrialOptions(timeout_s=30))
        gate.set()
        return await first, await second

    a, b = asyncio.run(scenario())
    assert a.status == b.status == "ok"
    assert a.baseline_restored and b.baseline_restored and backend.live_bytes() == 0


def test_the_worker_app_answers_429_problem_json_when_its_queue_is_full():
    gate = threading.Event()
    backend = GatedBackend(gate=gate)
    runner = TrialRunner(RunnerConfig(queue_max=0), backend_factory=SingleBackendFactory(backend))
    app = create_app(runner, token_from_env=False)
    body = {"request": TINY, "trial": {"timeout_s": 30}}

    async def scenario():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as c:
            first = asyncio.create_task(c.post("/v1/trial", json=body))
            await asyncio.to_thread(backend.started.wait, 10)
            second = await c.post("/v1/trial", json=body)
            gate.set()
            return await first, second

    first, second = asyncio.run(scenario())
    assert second.status_code == 429
    assert second.headers["content-type"] == "application/problem+json"
    assert second.headers["retry-after"]
    problem = second.json()
    assert problem["status"] == 429 and problem["type"].endswith("trial-queue-full")
    assert first.status_code == 200 and first.json()["status"] == "ok"
    assert first.json()["baseline_restored"] is True
    assert backend.live_bytes() == 0


# --------------------------------------------------------------------------- client


def test_worker_down_gives_unavailable(monkeypatch):
    monkeypatch.setenv("MAMBASIZER_WORKER_URL", f"http://127.0.0.1:{free_port()}")
    out = asyncio.run(client.run_trial(None, req(TINY), {"timeout_s": 5}))
    assert out["status"] == "unavailable" and "unreachable" in out["reason"]


def test_worker_slower_than_the_timeout_gives_unavailable_and_the_worker_cleans_up(monkeypatch):
    backend = GatedBackend(delay_s=0.5)
    runner = TrialRunner(RunnerConfig(queue_max=2), backend_factory=SingleBackendFactory(backend))
    with serve(create_app(runner, token_from_env=False)) as url:
        monkeypatch.setenv("MAMBASIZER_WORKER_URL", url)
        monkeypatch.setenv("MAMBASIZER_WORKER_TIMEOUT_S", "1")
        out = asyncio.run(client.run_trial(None, req(TINY), {"timeout_s": 2}))
        assert out["status"] == "unavailable" and "did not answer within 1 s" in out["reason"]
        # The worker's own deadline cancels the trial; it releases and frees the device.
        assert wait_for(lambda: runner.status().get("cpu", {}).get("busy") is False, timeout=15)
    assert backend.live_bytes() == 0


def test_worker_busy_and_wrong_token_give_unavailable(monkeypatch):
    gate = threading.Event()
    backend = GatedBackend(gate=gate)
    runner = TrialRunner(RunnerConfig(queue_max=0), backend_factory=SingleBackendFactory(backend))
    with serve(create_app(runner, token="s3cret", token_from_env=False)) as url:
        monkeypatch.setenv("MAMBASIZER_WORKER_URL", url)
        monkeypatch.setenv("MAMBASIZER_WORKER_TOKEN", "wrong")
        out = asyncio.run(client.run_trial(None, req(TINY), {}))
        assert out["status"] == "unavailable" and "did not accept this server's credential" in out["reason"]
        assert url not in out["reason"] and "MAMBASIZER" not in out["reason"]
        monkeypatch.setenv("MAMBASIZER_WORKER_TOKEN", "s3cret")

        async def two():
            first = asyncio.create_task(client.run_trial(None, req(TINY), {"timeout_s": 30}))
            await asyncio.to_thread(backend.started.wait, 10)
            busy = await client.run_trial(None, req(TINY), {"timeout_s": 30})
            gate.set()
            return await first, busy

        first, busy = asyncio.run(two())
        assert busy["status"] == "unavailable" and "busy" in busy["reason"]
        assert first["status"] == "ok" and first["stages"][0]["measured"]["ssm_state_bytes"] > 0
    assert backend.live_bytes() == 0
