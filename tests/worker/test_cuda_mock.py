"""The CUDA path without a GPU: `CudaBackend` runs against a fake device (torch.cuda's
statistics and allocator behaviour mocked, tensors on the CPU). It checks what only the
CUDA path does: the budget derived from the device the way SGLang's profiler does, the
allocator-view measurements (512-byte rounding), an OOM raised by the caching allocator,
and `empty_cache` bringing the device back to its baseline."""

from __future__ import annotations

import weakref

import pytest

torch = pytest.importorskip("torch")

from mambasizer.schemas.trial import TrialOptions  # noqa: E402
from mambasizer.service.planner import plan  # noqa: E402
from mambasizer.service.solver.budget import rest_gib  # noqa: E402
from mambasizer.service.worker.devices import CudaBackend  # noqa: E402
from mambasizer.service.worker.trial import run_trial  # noqa: E402
from samples import TINY  # noqa: E402
from worker_helpers import req  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30
SEGMENT = 2 * MIB


def _round(n: int, to: int) -> int:
    return -(-n // to) * to


class FakeGPU:
    """Accounting of a CUDA caching allocator: blocks rounded to 512 B, segments of 2 MiB
    kept until empty_cache, a context that is never free."""

    def __init__(self, total: int, context: int = 64 * MIB) -> None:
        self.total = total
        self.context = context
        self.live: dict[int, tuple[weakref.ref, int]] = {}
        self.reserved = 0
        self.empty_cache_calls = 0
        self._next = 0

    def allocated(self) -> int:
        self.live = {k: v for k, v in self.live.items() if v[0]() is not None}
        return sum(n for _, n in self.live.values())

    def free(self) -> int:
        return self.total - self.context - self.reserved

    def zeros(self, real_zeros):
        def zeros(shape, dtype=None, device=None, **kw):
            t_dtype = dtype or torch.float32
            numel = 1
            for d in shape:
                numel *= int(d)
            block = _round(max(1, numel * torch.empty((), dtype=t_dtype).element_size()), 512)
            cached = self.reserved - self.allocated()
            if block > cached:
                grow = _round(block - cached, SEGMENT)
                if grow > self.free():
                    raise torch.OutOfMemoryError(
                        f"CUDA out of memory. Tried to allocate {block / MIB:.2f} MiB. GPU 0 has a total capacity of "
                        f"{self.total / GIB:.2f} GiB of which {self.free() / MIB:.2f} MiB is free."
                    )
                self.reserved += grow
            t = real_zeros(shape, dtype=t_dtype, device="cpu", **kw)
            self.live[self._next] = (weakref.ref(t), block)
            self._next += 1
            return t

        return zeros

    def empty_cache(self) -> None:
        self.empty_cache_calls += 1
        self.reserved = _round(self.allocated(), SEGMENT)


@pytest.fixture
def fake_gpu(monkeypatch):
    gpu = FakeGPU(total=1 * GIB)
    monkeypatch.setattr(torch, "zeros", gpu.zeros(torch.zeros))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i=0: (gpu.free(), gpu.total))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda i=0: gpu.allocated())
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda i=0: gpu.reserved)
    monkeypatch.setattr(torch.cuda, "empty_cache", gpu.empty_cache)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda i=0: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Fake GPU")
    return gpu


def test_budget_from_the_device_the_way_sglangs_profiler_derives_it(fake_gpu):
    body = {**TINY, "server_args": {"mem_fraction_static": 0.85}}
    backend = CudaBackend(0, device="cpu")
    options = TrialOptions(budget="device", hold_weights_gib=0.25)
    result = run_trial(req(body), options, backend)
    assert result.status == "ok", result.reason
    assert result.device == "cuda:0 (Fake GPU)"
    b = result.budget
    assert b.source == "device" and b.device_total_bytes == GIB and b.gpu_memory_mib == 1024
    assert b.free_before_load_bytes == GIB - 64 * MIB
    assert b.free_after_load_bytes == GIB - 64 * MIB - 256 * MIB  # the weights placeholder is held
    # The trial's plan is the solver's, sized with the figures the device reported.
    assert result.plan is not None
    assert result.plan.rest_gib == pytest.approx(rest_gib(b.free_gib_before_load, b.free_gib_after_load, 0.85, False))
    expected = plan(req({**body, "budget": {"free_gib_before_load": b.free_gib_before_load, "free_gib_after_load": b.free_gib_after_load}}))
    assert result.plan.max_total_num_tokens == expected.max_total_num_tokens
    st = result.stages[0]
    # The allocator view rounds every block up to 512 bytes: measured = predicted + rounding.
    for line in st.pools:
        assert 0 <= line.difference_bytes < 512 * line.tensors, line.pool
        assert line.reserved_delta_bytes is not None and line.device_free_drop_bytes is not None
        assert line.rss_delta_bytes is None
        assert line.resident_bytes is None
    assert st.free_after_pools_bytes is not None and st.free_after_pools_bytes > 0
    # Released: allocated back to the baseline, the cache emptied, the weights let go.
    assert result.baseline_restored is True and fake_gpu.allocated() == 0
    assert fake_gpu.empty_cache_calls >= 2
    assert fake_gpu.reserved == 0


def test_caching_allocator_oom_is_a_result_with_the_shortfall(fake_gpu):
    # The request's own budget asks for far more than this 1 GiB device holds.
    body = {**TINY, "budget": {"rest_gib": 2.0}}
    backend = CudaBackend(0, device="cpu")
    result = run_trial(req(body), TrialOptions(), backend)
    assert result.status == "oom" and result.would_start is False
    oom = result.stages[0].oom
    assert "CUDA out of memory" in oom.message
    assert oom.free_bytes is not None and oom.shortfall_bytes == oom.remaining_bytes - oom.free_bytes > 0
    assert result.baseline_restored is True and fake_gpu.allocated() == 0 and fake_gpu.reserved == 0


def test_weights_larger_than_the_device_are_an_oom(fake_gpu):
    backend = CudaBackend(0, device="cpu")
    result = run_trial(req(TINY), TrialOptions(budget="device", hold_weights_gib=2.0), backend)
    assert result.status == "oom" and "weights" in result.reason
    assert result.baseline_restored is True and fake_gpu.allocated() == 0


def test_gpu_check_script_logic_on_the_fake_device(fake_gpu, capsys):
    from mambasizer.service.worker import gpu_check

    cases = [("tiny layout", {"model": TINY["model"], "server_args": {"mem_fraction_static": 0.85}}, [0], 0.25)]
    assert gpu_check.gpu(cases=cases, backend=CudaBackend(0, device="cpu")) == 0
    out = capsys.readouterr().out
    assert "== tiny layout" in out and "status=ok" in out and "gpu_check: PASS" in out
    assert "ssm_state" in out and "unbudgeted: req_to_token" in out
    assert fake_gpu.allocated() == 0


def test_gpu_check_plan_only_runs_the_real_cases(capsys):
    from mambasizer.service.worker import gpu_check

    assert gpu_check.main(["--plan-only"]) == 0
    out = capsys.readouterr().out
    assert "Kimi-K3 tp8 pp8" in out and "Qwen3-Next-80B tp4" in out and "feasible=True" in out


def test_a_trial_planned_for_another_gpu_kind_is_refused(fake_gpu, monkeypatch):
    """The worker names its device from torch; a budget.gpu of another compute capability or
    runtime (SGLang resolves differently there) is refused before anything is allocated."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: (9, 0))
    monkeypatch.setattr(torch.version, "hip", None)
    backend = CudaBackend(0, device="cpu")
    assert (backend.capability, backend.runtime) == ((9, 0), "cuda")
    body = {**TINY, "server_args": {"mem_fraction_static": 0.85}}
    amd = run_trial(req({**body, "budget": {"gpu": "mi300x", "rest_gib": 0.02}}), TrialOptions(budget="device"), backend)
    assert amd.status == "rejected" and "planned for budget.gpu 'mi300x'" in amd.reason and "Fake GPU" in amd.reason
    same = run_trial(req({**body, "budget": {"gpu": "h200", "rest_gib": 0.02}}), TrialOptions(budget="device", hold_weights_gib=0.25), backend)
    assert same.status == "ok", same.reason
    assert same.plan is not None and same.plan.resolved.gpu == "h200"
    monkeypatch.setattr(torch.version, "hip", "6.3")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: (9, 4))
    rocm = CudaBackend(0, device="cpu")
    assert (rocm.capability, rocm.runtime) == ((9, 4), "hip")
    on_amd = run_trial(req({**body, "budget": {"gpu": "mi300x", "rest_gib": 0.02}}), TrialOptions(budget="device", hold_weights_gib=0.25), rocm)
    assert on_amd.status == "ok", on_amd.reason
    assert on_amd.plan is not None and on_amd.plan.resolved.gpu == "mi300x"
