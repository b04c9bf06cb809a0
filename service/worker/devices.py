"""Where a trial allocates: a small backend per device kind, torch imported lazily.

Both backends allocate with `torch.zeros`, as SGLang's pools do (on CUDA a memset, on the
CPU every page is touched, so the resident set reflects the tensor). A backend reports
what the allocator holds (`snapshot`) and releases everything it handed out (`release`).

* `CudaBackend`: `torch.cuda.memory_allocated` / `memory_reserved` / `mem_get_info`.
* `CpuBackend`: the tensors' own storage bytes (tracked through weak references, so the
  "allocated" figure is exactly what this backend handed out and still lives), the
  resident bytes of each tensor's own pages (mincore) and the process's RSS. An optional `cap_bytes` simulates a device of that size: an allocation
  past it raises `torch.OutOfMemoryError`, like the CUDA caching allocator does.
"""

from __future__ import annotations

import gc
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Literal

GIB = 1 << 30
MIB = 1 << 20

# Manifest dtype -> torch dtype name. fp8 KV is stored as uint8 (`KVCache.store_dtype`).
TORCH_DTYPES = {
    "bfloat16": "bfloat16", "float16": "float16", "float32": "float32",
    "fp8_e4m3": "uint8", "fp8_e5m2": "uint8", "mxfp8": "uint8", "float8_e8m0fnu": "uint8",
    "int8": "int8", "int32": "int32", "int64": "int64", "uint8": "uint8",
}


def torch_module():
    """Import torch on first use: the solver and the API never pay for it."""
    import torch

    return torch


def torch_dtype(name: str):
    return getattr(torch_module(), TORCH_DTYPES[name])


@dataclass(frozen=True)
class Snapshot:
    allocated: int  # what the allocator hands out (CUDA) / what this backend holds (CPU)
    reserved: int | None = None  # CUDA caching-allocator segments
    free: int | None = None  # device free bytes (cudaMemGetInfo) / CPU available memory
    rss: int | None = None  # CPU: process resident set


def is_oom(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA caching allocator, simulated caps) or the CPU
    allocator's RuntimeError."""
    torch = torch_module()
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    if isinstance(exc, (RuntimeError, MemoryError)):
        text = str(exc).lower()
        return isinstance(exc, MemoryError) or "out of memory" in text or "can't allocate memory" in text
    return False


class Backend:
    kind: Literal["cpu", "cuda"] = "cpu"  # also the manifest's device_kind
    label: str = "cpu"
    # What torch says the device is (ROCm builds of torch answer through the same torch.cuda
    # API, with torch.version.hip set): None where torch cannot say.
    device_name: str | None = None
    capability: tuple[int, int] | None = None
    runtime: Literal["cuda", "hip"] | None = None

    def zeros(self, shape: tuple[int, ...], dtype: str) -> Any:
        raise NotImplementedError

    def tensor_bytes(self, t: Any) -> int:
        return int(t.untyped_storage().nbytes())

    def resident_bytes(self, t: Any) -> int | None:
        """Bytes of the tensor's own pages in memory (CPU only)."""
        return None

    def snapshot(self) -> Snapshot:
        raise NotImplementedError

    def mem_get_info(self) -> tuple[int, int]:
        """(free, total) bytes of the device."""
        raise NotImplementedError

    def free_bytes(self) -> int | None:
        return self.mem_get_info()[0]

    def warm_up(self) -> None:
        """Pay first-use costs once, before any baseline is taken."""
        if not getattr(self, "_warm", False):
            t = self.zeros((1024,), "float32")
            t.add_(1)
            del t
            self.release()
            self._warm = True

    def release(self) -> None:
        gc.collect()


class CpuBackend(Backend):
    kind = "cpu"

    def __init__(self, cap_bytes: int | None = None) -> None:
        self.cap_bytes = cap_bytes
        self.label = "cpu" if cap_bytes is None else f"cpu (capped at {cap_bytes} bytes)"
        self._live: dict[int, tuple[weakref.ref, int]] = {}
        self._lock = threading.Lock()
        self._next = 0

    def live_bytes(self) -> int:
        with self._lock:
            dead = [k for k, (ref, _) in self._live.items() if ref() is None]
            for k in dead:
                del self._live[k]
            return sum(n for _, n in self._live.values())

    def zeros(self, shape, dtype):
        torch = torch_module()
        dt = torch_dtype(dtype)
        nbytes = _numel(shape) * torch.empty((), dtype=dt).element_size()
        if self.cap_bytes is not None and self.live_bytes() + nbytes > self.cap_bytes:
            raise torch.OutOfMemoryError(
                f"simulated out of memory: tried to allocate {nbytes} bytes; "
                f"{self.cap_bytes - self.live_bytes()} bytes free of a {self.cap_bytes}-byte cap"
            )
        t = torch.zeros(shape, dtype=dt)  # zero_() touches every page: RSS follows
        with self._lock:
            key = self._next
            self._next += 1
            self._live[key] = (weakref.ref(t), self.tensor_bytes(t))
        return t

    def resident_bytes(self, t: Any) -> int | None:
        from mambasizer.service.worker.residency import resident_bytes

        return resident_bytes(int(t.data_ptr()), self.tensor_bytes(t))

    def snapshot(self) -> Snapshot:
        import psutil

        return Snapshot(
            allocated=self.live_bytes(),
            free=self.free_bytes(),
            rss=psutil.Process().memory_info().rss,
        )

    def mem_get_info(self) -> tuple[int, int]:
        if self.cap_bytes is not None:
            return max(0, self.cap_bytes - self.live_bytes()), self.cap_bytes
        import psutil

        from mambasizer.service.worker import host_memory

        # Free as the kernel enforces it (host, cgroup, rlimit): an OOM's shortfall is
        # measured against the limit that was hit, not the node's free memory.
        return host_memory.available_bytes(), int(psutil.virtual_memory().total)


class CudaBackend(Backend):
    kind = "cuda"

    def __init__(self, index: int = 0, device: str | None = None) -> None:
        torch = torch_module()
        self.index = index
        # `device` is the torch device the tensors go to; tests pass "cpu" with the
        # torch.cuda statistics mocked, to exercise this code path without a GPU.
        self.device = device or f"cuda:{index}"
        try:
            name = torch.cuda.get_device_name(index)
        except Exception:  # pragma: no cover - depends on the driver
            name = "CUDA device"
        self.label = f"cuda:{index} ({name})"
        self.device_name = name
        try:
            major, minor = torch.cuda.get_device_capability(index)
            self.capability = (int(major), int(minor))
        except Exception:  # pragma: no cover - depends on the driver
            self.capability = None
        self.runtime = "hip" if getattr(torch.version, "hip", None) else "cuda"

    def zeros(self, shape, dtype):
        torch = torch_module()
        return torch.zeros(shape, dtype=torch_dtype(dtype), device=self.device)

    def snapshot(self) -> Snapshot:
        torch = torch_module()
        free, _total = torch.cuda.mem_get_info(self.index)
        return Snapshot(
            allocated=int(torch.cuda.memory_allocated(self.index)),
            reserved=int(torch.cuda.memory_reserved(self.index)),
            free=int(free),
        )

    def mem_get_info(self) -> tuple[int, int]:
        torch = torch_module()
        free, total = torch.cuda.mem_get_info(self.index)
        return int(free), int(total)

    def free_bytes(self) -> int | None:
        # What a new allocation can use: the driver's free bytes plus the allocator's
        # cached-but-unused blocks.
        torch = torch_module()
        free, _ = torch.cuda.mem_get_info(self.index)
        cached = torch.cuda.memory_reserved(self.index) - torch.cuda.memory_allocated(self.index)
        return int(free + max(0, cached))

    def release(self) -> None:
        torch = torch_module()
        gc.collect()
        torch.cuda.synchronize(self.index)
        torch.cuda.empty_cache()


def cuda_available() -> bool:
    try:
        torch = torch_module()
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def make_backend(device: str, cpu_cap_bytes: int | None = None, cuda_index: int = 0) -> Backend:
    """`device`: "cpu" or "cuda" (already resolved from "auto")."""
    if device == "cuda":
        return CudaBackend(cuda_index)
    return CpuBackend(cap_bytes=cpu_cap_bytes)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
