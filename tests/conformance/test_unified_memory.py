"""Conformance: where SGLang 0.5.23 reads free memory, and the capacity it reads, on an
integrated (unified-memory) part, run through SGLang's own functions on the CPU.

* `utils/common.py:get_available_gpu_memory("cuda", ...)` (F_pre / F_post): with
  props.is_integrated set it returns the host's `psutil.virtual_memory().available`, else
  torch.cuda.mem_get_info's free figure. Stood in: the device probes of
  launch_ref._device (answering as the catalog part), torch.cuda.current_device /
  mem_get_info / empty_cache, and psutil.virtual_memory (the host);
* `get_device_memory_capacity()` on GB10, whose nvidia-smi prints `[N/A]` for memory.total:
  SGLang falls back to mem_get_info's total (`_cuda_mem_fallback`). Stood in: nvidia-smi's
  output (subprocess.run).

Then the estimated plan on GB10 and MI300A: its F_pre is what SGLang's free-memory read
returns when the host holds budget.host_available_mib less the estimated residents.
"""

from __future__ import annotations

import subprocess
import types

import pytest

from mambasizer.service.planner import plan
from mambasizer.service.solver import gpu_budget, gpus
from tests.conformance import launch_ref
from tests.conformance.test_platform_resolution import capacity, device_of

MIB, GIB = 1 << 20, 1 << 30
DEVICE_FREE = 70_000 * MIB  # what torch.cuda.mem_get_info would say is free
HOST_AVAILABLE = 115_783 * MIB  # what psutil says the host has available (an idle GB10's MemAvailable, 113.07 GiB)


@pytest.fixture(scope="module")
def sg():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed (pip install --no-deps sglang==0.5.23)")
    return launch_ref._load()


def _sglang_free_gib(sg, monkeypatch, gpu: gpus.Gpu, host_available: int, total_mib: int) -> float:
    """SGLang's own get_available_gpu_memory on a stood-in `gpu` and host."""
    cuda = sg.torch.cuda
    with launch_ref._LOCK, launch_ref._import_fakes(), launch_ref._device(sg, total_mib, **device_of(gpu)):
        monkeypatch.setattr(cuda, "current_device", lambda: 0)
        monkeypatch.setattr(cuda, "mem_get_info", lambda *a, **k: (DEVICE_FREE, total_mib * MIB))
        monkeypatch.setattr(cuda, "empty_cache", lambda: None)
        monkeypatch.setattr(sg.common.psutil, "virtual_memory", lambda: types.SimpleNamespace(available=host_available, total=total_mib * MIB))
        try:
            return sg.common.get_available_gpu_memory("cuda", 0, distributed=False, empty_cache=True)
        finally:
            monkeypatch.undo()


@pytest.mark.parametrize("name", sorted(gpus.CATALOG))
def test_free_memory_is_read_where_sglang_reads_it(sg, monkeypatch, name):
    gpu = gpus.CATALOG[name]
    theirs = _sglang_free_gib(sg, monkeypatch, gpu, HOST_AVAILABLE, capacity(gpu))
    from_host = gpu_budget.free_memory_from_host(gpu)
    assert theirs == (HOST_AVAILABLE if from_host else DEVICE_FREE) / GIB
    assert from_host == (name in ("gb10", "mi300a", "strix-halo"))


def test_gb10_capacity_is_sglangs_fallback_when_nvidia_smi_prints_na(sg, monkeypatch):
    """nvidia-smi prints [N/A] for GB10's memory.total; SGLang then takes mem_get_info's total
    (MiB), the figure it logs as `Reported total GPU memory per device (MiB)`."""
    gpu = gpus.CATALOG["gb10"]
    assert gpu.memory_mib is not None
    real_run = subprocess.run

    def nvidia_smi(cmd, *a, **k):
        if isinstance(cmd, list) and cmd and cmd[0] == "nvidia-smi":
            return subprocess.CompletedProcess(cmd, 0, stdout="[N/A]\n", stderr="")
        return real_run(cmd, *a, **k)

    cuda = sg.torch.cuda
    with launch_ref._LOCK, launch_ref._import_fakes(), launch_ref._device(sg, gpu.memory_mib, **device_of(gpu)):
        monkeypatch.setattr(sg.common.subprocess, "run", nvidia_smi)
        monkeypatch.setattr(cuda, "mem_get_info", lambda *a, **k: (DEVICE_FREE, gpu.memory_mib * MIB))
        try:
            got = sg.common.get_device_memory_capacity()
        finally:
            monkeypatch.undo()
    assert got == gpu.memory_mib == 124610


@pytest.mark.parametrize("name, capacity_mib", [("gb10", None), ("mi300a", 96336)])
def test_integrated_plan_uses_the_hosts_available_memory_as_sglang_reads_it(sg, monkeypatch, name, capacity_mib):
    gpu = gpus.CATALOG[name]
    host_mib = 110_000 if name == "gb10" else 90_000
    budget = {"gpu": name, "host_available_mib": host_mib} | ({"gpu_memory_mib": capacity_mib} if capacity_mib else {})
    body = {"model": {"preset": "qwen3.5-27b"}, "budget": budget}
    p = plan(body)
    assert p.device is not None and p.device.free_memory_from == "host" and p.device.host_available_mib == host_mib
    # What the host holds when SGLang reads it before the load: the host's available memory
    # less what the process made resident (the estimated residents).
    resident = gpu_budget.resident_before_load_bytes(1)
    theirs = _sglang_free_gib(sg, monkeypatch, gpu, host_mib * MIB - resident, p.gpu_memory_mib or 0)
    assert p.free_gib_before_load == theirs
    # Not the GPU capacity: the same plan without the host figure starts from the capacity,
    # and says so.
    assumed = plan({**body, "budget": {k: v for k, v in budget.items() if k != "host_available_mib"}})
    assert assumed.free_gib_before_load == (assumed.gpu_memory_mib * MIB - resident) / GIB > p.free_gib_before_load
    assert assumed.device is not None and assumed.device.free_memory_basis.startswith("host (assumed)")
    assert any("ASSUMED the whole" in w and "budget.host_available_mib" in w for w in assumed.warnings)
    assert not any("ASSUMED the whole" in w for w in p.warnings)
    assert assumed.max_total_num_tokens > p.max_total_num_tokens


def test_a_discrete_part_reads_the_device(sg, monkeypatch):
    """An RTX PRO 6000 (SM120, discrete): SGLang ignores the host; the plan starts from capacity."""
    gpu = gpus.CATALOG["rtx-pro-6000"]
    assert _sglang_free_gib(sg, monkeypatch, gpu, HOST_AVAILABLE, gpu.memory_mib or 0) == DEVICE_FREE / GIB
    p = plan({"model": {"preset": "qwen3.5-27b"}, "budget": {"gpu": "rtx-pro-6000"}})
    assert p.device is not None and p.device.free_memory_from == "device"
    assert p.free_gib_before_load == (97887 * MIB - gpu_budget.resident_before_load_bytes(1)) / GIB
