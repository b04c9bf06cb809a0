"""One trial per device at a time: a bounded queue and a deadline per trial.

A trial runs in its own thread (torch releases the GIL while it allocates, and the event
loop keeps answering probes). Admission is immediate: with a trial running and
`queue_max` trials already waiting, `submit` raises `QueueFull` (the app answers 429).

The deadline (`TrialOptions.timeout_s`) covers the wait and the run. When it passes, the
caller gets `status: "unavailable"` at once and the trial is cancelled: it stops at the
next allocation boundary and releases everything it allocated. The device stays taken
until that release is done, so the next trial never starts on memory still held.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import PlanRequest
from mambasizer.schemas.trial import TrialOptions, TrialResult
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.worker.devices import Backend, cuda_available, make_backend

log = logging.getLogger("mambasizer.worker")

DEFAULT_QUEUE_MAX = 4


class QueueFull(Exception):
    def __init__(self, device: str, waiting: int) -> None:
        super().__init__(f"a trial is running on {device} and {waiting} more are waiting (the queue holds {waiting})")
        self.device = device
        self.waiting = waiting


class TorchMissing(Exception):
    """torch is not installed: this install cannot run trials."""


@dataclass
class _DeviceSlot:
    """The device's turnstile: one running trial, at most `queue_max` waiting."""

    queue_max: int
    cond: threading.Condition = field(default_factory=threading.Condition)
    busy: bool = False
    waiting: int = 0
    running_since: float | None = None


@dataclass
class RunnerConfig:
    device: str = "auto"  # the worker's device: "auto" | "cpu" | "cuda"
    queue_max: int = DEFAULT_QUEUE_MAX
    cuda_index: int = 0
    cpu_cap_bytes: int | None = None  # simulate a device of this size on the CPU (tests)
    cpu_margin_bytes: int | None = None  # None: MAMBASIZER_WORKER_CPU_MARGIN_GIB or 1 GiB


class TrialRunner:
    def __init__(self, config: RunnerConfig | None = None, backend_factory: Callable[[str], Backend] | None = None) -> None:
        self.config = config or RunnerConfig()
        self._factory = backend_factory
        self._slots: dict[str, _DeviceSlot] = {}
        self._backends: dict[str, Backend] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ devices

    def resolve_device(self, wanted: str) -> str:
        """The device a trial asking for `wanted` runs on; ValueError when this worker has none."""
        if wanted == "auto":
            wanted = self.config.device
        if wanted == "auto":
            return "cuda" if self._has_cuda() else "cpu"
        if wanted == "cuda" and not self._has_cuda():
            raise ValueError("this worker has no CUDA device (torch.cuda.is_available() is false)")
        if wanted == "cpu" and self.config.device != "cpu" and self._has_cuda():
            # A GPU worker's host memory is not what it offers: a CPU trial there would
            # take the node's RAM, which no quota of this worker accounts for.
            raise ValueError("this worker runs trials on its GPU only; it does not run CPU trials (ask for device 'cuda' or 'auto')")
        return wanted

    def _has_cuda(self) -> bool:
        if self._factory is not None:
            return getattr(self._factory, "has_cuda", False)
        return cuda_available()

    def backend(self, device: str) -> Backend:
        with self._lock:
            b = self._backends.get(device)
            if b is None:
                if self._factory is not None:
                    b = self._factory(device)
                else:
                    b = make_backend(device, cpu_cap_bytes=self.config.cpu_cap_bytes, cuda_index=self.config.cuda_index)
                self._backends[device] = b
            return b

    def _slot(self, device: str) -> _DeviceSlot:
        with self._lock:
            slot = self._slots.get(device)
            if slot is None:
                slot = self._slots[device] = _DeviceSlot(queue_max=self.config.queue_max)
            return slot

    def status(self) -> dict:
        with self._lock:
            slots = dict(self._slots)
        return {
            name: {"busy": s.busy, "waiting": s.waiting, "queue_max": s.queue_max,
                   "running_s": None if s.running_since is None else round(time.monotonic() - s.running_since, 3)}
            for name, s in slots.items()
        }

    # ------------------------------------------------------------------ running

    def _admit(self, device: str) -> _DeviceSlot:
        slot = self._slot(device)
        with slot.cond:
            if slot.busy and slot.waiting >= slot.queue_max:
                raise QueueFull(device, slot.waiting)
            slot.waiting += 1
        return slot

    def _work(self, slot: _DeviceSlot, device: str, request: PlanRequest, options: TrialOptions,
              plan: Plan | None, cancel: threading.Event, deadline: float,
              memory_budget_bytes: int | None = None) -> TrialResult:
        from mambasizer.service.worker.trial import run_trial

        with slot.cond:
            try:
                while slot.busy:
                    left = deadline - time.monotonic()
                    if cancel.is_set() or left <= 0:
                        return TrialResult(status="unavailable", reason="the trial timed out while waiting for the device")
                    slot.cond.wait(timeout=min(left, 0.5))
                slot.busy = True
                slot.running_since = time.monotonic()
            finally:
                slot.waiting -= 1
        try:
            backend = self.backend(device)
            return run_trial(request, options, backend, plan=plan, cancel=cancel, cpu_margin=self.config.cpu_margin_bytes,
                             cpu_budget=memory_budget_bytes)
        finally:
            with slot.cond:
                slot.busy = False
                slot.running_since = None
                slot.cond.notify_all()

    def run(self, request: PlanRequest, options: TrialOptions, plan: Plan | None = None) -> TrialResult:
        """Blocking form (CLI, scripts): admission, queue and deadline as `submit`."""
        fut, cancel, timeout = self._start(request, options, plan)
        if isinstance(fut, TrialResult):
            return fut
        try:
            return fut.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            cancel.set()
            return _timed_out(options)

    async def submit(self, request: PlanRequest, options: TrialOptions, plan: Plan | None = None,
                     memory_budget_bytes: int | None = None) -> TrialResult:
        """Raises QueueFull when the device's queue is full, PlanInputError for input that
        cannot be sized; every other outcome is a TrialResult. `memory_budget_bytes` caps
        a CPU trial (its largest stage plus held weights). Cancelling the awaiting task
        (the client went away) stops the trial between two allocations and frees it."""
        fut, cancel, timeout = self._start(request, options, plan, memory_budget_bytes)
        if isinstance(fut, TrialResult):
            return fut
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(fut)), timeout=timeout)
        except asyncio.TimeoutError:
            cancel.set()
            return _timed_out(options)
        except asyncio.CancelledError:
            cancel.set()  # the client went away: stop and release
            raise

    def _start(self, request: PlanRequest, options: TrialOptions, plan: Plan | None,
               memory_budget_bytes: int | None = None):
        try:
            import torch  # noqa: F401
        except ImportError:
            raise TorchMissing("torch is not installed: install the worker extra (pip install 'mambasizer[worker]')") from None
        try:
            device = self.resolve_device(options.device)
        except ValueError as exc:
            return TrialResult(status="rejected", reason=str(exc)), None, None
        slot = self._admit(device)  # raises QueueFull
        cancel = threading.Event()
        deadline = time.monotonic() + options.timeout_s
        fut: concurrent.futures.Future = concurrent.futures.Future()

        def body() -> None:
            try:
                result = self._work(slot, device, request, options, plan, cancel, deadline, memory_budget_bytes)
            except BaseException as exc:  # handed to the waiter
                if not isinstance(exc, PlanInputError):
                    log.exception("trial failed")
                if not fut.cancelled():
                    fut.set_exception(exc)
                return
            if not fut.cancelled():
                fut.set_result(result)

        threading.Thread(target=body, name=f"trial-{device}", daemon=True).start()
        return fut, cancel, options.timeout_s


def _timed_out(options: TrialOptions) -> TrialResult:
    return TrialResult(
        status="unavailable",
        reason=f"the trial did not finish within timeout_s={options.timeout_s:g}; it was cancelled and releases its memory when it stops",
    )
