"""One trial: allocate, stage by stage, the tensors SGLang 0.5.23 allocates for a plan and
measure what the allocator took.

The tensors come from `mambasizer.service.planner.plan_stage_tensors`: the very manifest the
plan sums, so `predicted` and `measured` are two views of one source. Stages run one after
the other and are freed in between (a real deployment has one stage per GPU). Everything a
stage allocated is released before the next one starts, whatever happens (OOM, cancel).

`run_trial` runs in the calling thread; `mambasizer.service.worker.runner` adds the per-device
queue and the timeout.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import Budget, PlanRequest
from mambasizer.schemas.trial import (
    MeasuredPoolBytes,
    OOMInfo,
    Pool,
    PoolBytes,
    PoolLine,
    StageTrial,
    TrialBudget,
    TrialOptions,
    TrialResult,
    TrialStatus,
    UnbudgetedLine,
)
from mambasizer.service.planner import plan as solve
from mambasizer.service.planner import plan_stage_tensors
from mambasizer.service.solver import gpus
from mambasizer.service.solver.allocation import TensorSpec
from mambasizer.service.worker import host_memory
from mambasizer.service.worker.devices import GIB, MIB, Backend, is_oom

log = logging.getLogger("mambasizer.worker")

POOLS: tuple[Pool, ...] = ("req_to_token", "conv_state", "ssm_state", "replayssm_ring", "intermediate_state", "side_tables", "int8_checkpoint", "kv_pool")
CPU_MARGIN_ENV = "MAMBASIZER_WORKER_CPU_MARGIN_GIB"
DEFAULT_CPU_MARGIN_GIB = 1.0

WHY = {
    "req_to_token": "the req-to-token table is allocated outside the budget (it lives in the slack)",
    "side_tables": "small index tables SGLang allocates beside the pools and never charges",
    "int8_checkpoint": "the int8 mamba checkpoint pool is built after the split, from the slack mem_fraction_static keeps",
    "intermediate_state": "the conv-window intermediates stay allocated under ReplaySSM spec, which drops their charge",
    "kv_pool": "the padded KV page (slot 0) is allocated on top of the max_total_num_tokens the budget paid for",
}


class TrialCancelled(Exception):
    """The trial's deadline passed; raised between two allocations."""


class _StageOOM(Exception):
    def __init__(self, info: OOMInfo) -> None:
        super().__init__(info.message)
        self.info = info


def cpu_margin_bytes() -> int:
    try:
        gib = float(os.environ.get(CPU_MARGIN_ENV, DEFAULT_CPU_MARGIN_GIB))
    except ValueError:
        gib = DEFAULT_CPU_MARGIN_GIB
    return int(max(0.0, gib) * GIB)


def run_trial(
    request: PlanRequest,
    options: TrialOptions,
    backend: Backend,
    plan: Plan | None = None,
    cancel: threading.Event | None = None,
    cpu_margin: int | None = None,
    cpu_budget: int | None = None,
) -> TrialResult:
    """Run one trial on `backend` in this thread. An OOM, a plan that cannot start and a
    cancel are results, never exceptions (input that cannot be sized still raises the
    solver's PlanInputError). Whatever happens, everything allocated is released and
    `baseline_restored` says whether the device is back at its pre-trial allocation."""
    t0 = time.monotonic()
    backend.warm_up()  # first-use costs (CUDA context, CPU thread pools) stay out of the figures
    baseline = backend.snapshot().allocated
    held: list = []
    try:
        result = _run(request, options, backend, plan, cancel, cpu_margin, held, cpu_budget)
    finally:
        held.clear()
        backend.release()
    restored = backend.snapshot().allocated <= baseline
    return result.model_copy(update={"baseline_restored": restored, "elapsed_s": round(time.monotonic() - t0, 3)})


def _run(request, options: TrialOptions, backend: Backend, plan: Plan | None, cancel, cpu_margin, held: list,
         cpu_budget: int | None = None) -> TrialResult:
    if options.budget == "device" and backend.kind != "cuda":
        return _rejected(backend, "budget 'device' measures a GPU's free memory: it needs a CUDA device")
    wrong_kind = _other_gpu_kind(request, backend)
    if wrong_kind is not None:
        return _rejected(backend, wrong_kind)
    hold = round((options.hold_weights_gib or 0.0) * GIB)
    replanned: Plan | None = None
    if options.budget == "device":
        free_before, total = backend.mem_get_info()
        if hold:
            oom = _hold(backend, hold, held)
            if oom is not None:
                return _weights_oom(backend, hold, oom, TrialBudget(source="device", device_total_bytes=total, free_before_load_bytes=free_before))
        free_after, _ = backend.mem_get_info()
        # The request's budget.gpu still names the device: its SGLang resolution applies.
        budget = Budget(free_gib_before_load=free_before / GIB, free_gib_after_load=free_after / GIB, gpu_memory_mib=total // MIB,
                        gpu=request.budget.gpu)
        request = request.model_copy(update={"budget": budget})
        plan = replanned = solve(request)
        budget_info = TrialBudget(
            source="device", device_total_bytes=total, free_before_load_bytes=free_before,
            free_after_load_bytes=free_after, held_weights_bytes=hold,
            free_gib_before_load=budget.free_gib_before_load, free_gib_after_load=budget.free_gib_after_load,
            gpu_memory_mib=budget.gpu_memory_mib,
        )
    else:
        plan = plan if plan is not None else solve(request)
        budget_info = TrialBudget(source="request", held_weights_bytes=hold)

    if not plan.feasible:
        err = plan.error
        why = f"{err.exception}: {err.message}" if err else "the plan is not feasible"
        return _rejected(backend, f"SGLang would not start with this plan ({why})", budget_info, replanned, would_start=False)
    ranks = list(options.stages) if options.stages is not None else [s.pp_rank for s in plan.stages]
    bad = [r for r in ranks if r >= len(plan.stages)]
    if bad:
        return _rejected(backend, f"stages {bad} are out of range: the plan has pp ranks 0..{len(plan.stages) - 1}", budget_info, replanned)
    manifests = plan_stage_tensors(request, plan, backend.kind)

    if backend.kind == "cpu":
        # Stages run one after the other: the largest one (plus the held weights) must fit
        # in what the machine has free, or the trial would swap instead of measuring.
        need = max(sum(t.nbytes for t in manifests[r]) for r in ranks) + (0 if held else hold)
        cap = getattr(backend, "cap_bytes", None)
        if cap is not None:
            need = min(need, cap)  # a simulated device never holds more than its cap
        if cpu_budget is not None and need > cpu_budget:
            return _rejected(
                backend,
                f"a CPU trial of this plan needs {need / GIB:.3g} GiB (its largest selected stage"
                f"{' plus the held weights' if hold else ''}), above this server's trial memory budget of "
                f"{cpu_budget / GIB:.3g} GiB. Trial fewer stages (trial.stages) or a smaller budget, "
                "or ask the operator for a GPU worker.",
                budget_info, replanned,
            )
        margin = cpu_margin_bytes() if cpu_margin is None else cpu_margin
        available = host_available_bytes()
        if need > available - margin:
            # The host's own figures go to the log; the caller learns what its trial needs.
            log.warning("CPU trial refused: not enough free host memory", extra={"fields": {
                "event": "trial_host_memory", "need_bytes": need, "available_bytes": available, "margin_bytes": margin,
                "bound": host_memory.room().bound}})
            return _rejected(
                backend,
                f"a CPU trial of this plan needs {need / GIB:.2f} GiB (its largest selected stage"
                f"{' plus the held weights' if hold else ''}), more than this machine can spare now: "
                "refusing rather than swapping. "
                "Trial fewer stages (trial.stages) or a smaller budget, or run the trial on a GPU worker.",
                budget_info, replanned,
            )
    if hold and not held:
        oom = _hold(backend, hold, held)
        if oom is not None:
            return _weights_oom(backend, hold, oom, budget_info)

    stages: list[StageTrial] = []
    for r in ranks:
        stage = _trial_stage(r, manifests[r], backend, cancel)
        stages.append(stage)
        if stage.status == "cancelled":
            return TrialResult(
                status="unavailable", reason=f"the trial was cancelled (timeout) during pp rank {r}; its memory was released",
                device=backend.label, stages=stages, budget=budget_info, plan=replanned,
            )
    status: TrialStatus = "oom" if any(s.status == "oom" for s in stages) else "ok"
    return TrialResult(
        status=status,
        reason=None if status == "ok" else _oom_reason(stages),
        device=backend.label,
        would_start=all(s.would_start for s in stages),
        stages=stages,
        budget=budget_info,
        plan=replanned,
    )


def host_available_bytes() -> int:
    """Memory a CPU trial may take without swapping or hitting a limit: the least of the
    host's available memory, its memory cgroup's room and its rlimits (host_memory.room)."""
    return host_memory.available_bytes()


# --------------------------------------------------------------------------- one stage


def _trial_stage(rank: int, tensors: list[TensorSpec], backend: Backend, cancel: threading.Event | None) -> StageTrial:
    t0 = time.monotonic()
    base = backend.snapshot()
    live: list = []
    measured: dict[int, int] = {}  # index in `tensors` -> measured bytes
    resident: dict[int, int | None] = {}  # CPU: the tensor's own resident bytes while held
    stats: dict[str, dict[str, int]] = {p: {} for p in POOLS}
    peak = 0
    oom: OOMInfo | None = None
    status = "ok"
    free_after = None
    try:
        try:
            for i, spec in enumerate(tensors):
                if cancel is not None and cancel.is_set():
                    raise TrialCancelled()
                before = backend.snapshot()
                try:
                    t = backend.zeros(spec.shape, spec.dtype)
                except Exception as exc:  # only OOMs are results
                    if not is_oom(exc):
                        raise
                    raise _StageOOM(_oom_info(spec, tensors[i:], backend, exc)) from None
                live.append(t)
                after = backend.snapshot()
                measured[i] = (after.allocated - before.allocated) if backend.kind == "cuda" else backend.tensor_bytes(t)
                resident[i] = backend.resident_bytes(t)
                del t
                _accumulate(stats[spec.pool], before, after)
                peak = max(peak, after.allocated - base.allocated)
            if backend.kind == "cuda":
                free_after = backend.snapshot().free
        except _StageOOM as exc:
            status, oom = "oom", exc.info
        except TrialCancelled:
            status = "cancelled"
    finally:
        live.clear()
        backend.release()
    leaked = max(0, backend.snapshot().allocated - base.allocated)
    return _stage_result(rank, tensors, measured, resident, stats, backend, status, oom, peak, leaked, free_after, t0)


def _accumulate(acc: dict[str, int], before, after) -> None:
    for field in ("reserved", "free", "rss"):
        b, a = getattr(before, field), getattr(after, field)
        if b is None or a is None:
            continue
        delta = (b - a) if field == "free" else (a - b)
        acc[field] = acc.get(field, 0) + delta


def _oom_info(spec: TensorSpec, remaining: list[TensorSpec], backend: Backend, exc: BaseException) -> OOMInfo:
    try:
        free = backend.free_bytes()
    except Exception:  # best effort while out of memory
        free = None
    rest = sum(t.nbytes for t in remaining)
    return OOMInfo(
        pool=spec.pool, tensor=spec.name, requested_bytes=spec.nbytes, remaining_bytes=rest, free_bytes=free,
        shortfall_bytes=None if free is None else max(0, rest - free),
        message=str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__,
    )


def _stage_result(rank, tensors, measured, resident, stats, backend, status, oom, peak, leaked, free_after, t0) -> StageTrial:
    pred: dict[str, int] = {}
    budgeted: dict[str, int] = {}
    meas: dict[str, int | None] = {}
    count: dict[str, int] = {}
    res: dict[str, int | None] = {}
    for i, t in enumerate(tensors):
        pred[t.pool] = pred.get(t.pool, 0) + t.nbytes
        budgeted[t.pool] = budgeted.get(t.pool, 0) + (t.nbytes - t.uncharged_bytes)
        count[t.pool] = count.get(t.pool, 0) + 1
        r, acc = resident.get(i), res.get(t.pool, 0)
        res[t.pool] = None if r is None or acc is None else acc + r
        if i in measured and meas.get(t.pool, 0) is not None:
            meas[t.pool] = meas.get(t.pool, 0) + measured[i]
        else:
            meas[t.pool] = None  # the pool was not (fully) allocated
    lines = []
    for p in POOLS:
        if p not in pred:
            continue
        m = meas[p]
        s = stats[p]
        lines.append(PoolLine(
            pool=p, tensors=count[p], predicted_bytes=pred[p], measured_bytes=m,
            difference_bytes=None if m is None else m - pred[p], budgeted_bytes=budgeted[p],
            reserved_delta_bytes=s.get("reserved") if backend.kind == "cuda" and m is not None else None,
            device_free_drop_bytes=s.get("free") if backend.kind == "cuda" and m is not None else None,
            rss_delta_bytes=s.get("rss") if backend.kind == "cpu" and m is not None else None,
            resident_bytes=res.get(p) if backend.kind == "cpu" and m is not None else None,
        ))
    unbudgeted = []
    for i, t in enumerate(tensors):
        if t.uncharged_bytes <= 0:
            continue
        got = measured.get(i)
        if t.budgeted:  # a part of a tensor: the padding rows
            unbudgeted.append(UnbudgetedLine(
                pool=t.pool, name=f"{t.name} padding page", predicted_bytes=t.unbudgeted_bytes,
                measured_bytes=None if got is None else got - (t.nbytes - t.unbudgeted_bytes), why=WHY["kv_pool"],
            ))
        else:
            unbudgeted.append(UnbudgetedLine(
                pool=t.pool, name=t.name, shape=list(t.shape), dtype=t.dtype, predicted_bytes=t.nbytes,
                measured_bytes=got, why=WHY.get(t.pool, "allocated, never charged"),
            ))
    unbudgeted = _merge_padding(unbudgeted)
    key: dict[str, str] = {p: f"{p}_bytes" for p in POOLS}
    return StageTrial(
        pp_rank=rank, status=status, device=backend.label, would_start=status == "ok",
        predicted=PoolBytes(**{key[p]: v for p, v in pred.items()}),
        measured=MeasuredPoolBytes(**{key[p]: v for p, v in meas.items()}),
        difference=MeasuredPoolBytes(**{key[p]: (None if (m := meas[p]) is None else m - pred[p]) for p in pred}),
        pools=lines, unbudgeted=unbudgeted, oom=oom, peak_bytes=peak, leaked_bytes=leaked,
        free_after_pools_bytes=free_after, elapsed_s=round(time.monotonic() - t0, 3),
    )


def _merge_padding(lines: list[UnbudgetedLine]) -> list[UnbudgetedLine]:
    """One line for the KV padding page over all of the stage's layers."""
    pads = [ln for ln in lines if ln.name.endswith(" padding page")]
    if not pads:
        return lines
    rest = [ln for ln in lines if not ln.name.endswith(" padding page")]
    got = [p.measured_bytes for p in pads if p.measured_bytes is not None]
    measured = sum(got) if len(got) == len(pads) else None
    rest.append(UnbudgetedLine(
        pool="kv_pool", name=f"kv padding page ({len(pads)} layer{'s' if len(pads) > 1 else ''})", predicted_bytes=sum(p.predicted_bytes for p in pads),
        measured_bytes=measured, why=WHY["kv_pool"],
    ))
    return rest


# --------------------------------------------------------------------------- helpers


def _hold(backend: Backend, nbytes: int, held: list) -> BaseException | None:
    """A placeholder for the rank's weights, allocated before the pools (SGLang loads the
    weights before it sizes the pools). Appended to `held`; returns the OOM if it failed."""
    try:
        held.append(backend.zeros((nbytes,), "uint8"))
        return None
    except Exception as exc:
        if not is_oom(exc):
            raise
        return exc


def _weights_oom(backend: Backend, hold: int, exc: BaseException, budget: TrialBudget) -> TrialResult:
    msg = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return TrialResult(
        status="oom", device=backend.label, would_start=False, budget=budget,
        reason=f"holding {hold / GIB:.2f} GiB of weights failed before any pool was allocated: {msg}",
    )


def _other_gpu_kind(request, backend: Backend) -> str | None:
    """Why a trial planned for one GPU kind (budget.gpu) cannot run on this device: another
    compute capability or runtime resolves differently in SGLang. None when they agree or
    when either side is unknown (no budget.gpu, a CPU backend, a driver that cannot say)."""
    name = request.budget.gpu
    if name is None or backend.kind != "cuda" or backend.capability is None:
        return None
    gpu = gpus.lookup(name)
    if (gpu.capability, gpu.runtime) == (backend.capability, backend.runtime):
        return None
    major, minor = backend.capability
    return (f"the trial was planned for budget.gpu {gpu.name!r} ({gpu.architecture}, compute capability "
            f"{gpu.capability[0]}.{gpu.capability[1]}, {gpu.runtime}) but this worker runs on {backend.device_name} "
            f"(compute capability {major}.{minor}, {backend.runtime}), where SGLang resolves differently: plan it for this GPU "
            "(GET /v1/gpus) or run it on a worker with that GPU")


def _rejected(backend: Backend, reason: str, budget: TrialBudget | None = None,
              plan: Plan | None = None, would_start: bool | None = None) -> TrialResult:
    return TrialResult(status="rejected", reason=reason, device=backend.label, would_start=would_start, budget=budget, plan=plan)


def _oom_reason(stages: list[StageTrial]) -> str:
    parts = []
    for s in stages:
        if s.oom is not None:
            short = "" if s.oom.shortfall_bytes is None else f", {s.oom.shortfall_bytes / GIB:.3f} GiB short"
            parts.append(f"pp rank {s.pp_rank}: out of memory at {s.oom.pool} ({s.oom.tensor}{short})")
    return "; ".join(parts)
