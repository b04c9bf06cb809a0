"""The estimated budget of `budget: {"gpu": ...}` / `{"gpu_memory_mib": N}`: what SGLang
0.5.23's two memory probes would return on that GPU (SIZING_SPEC §1.1), before any boot.

    F_pre  = capacity - what is resident before the weights load (CUDA context, cuBLAS
             workspace, NCCL communicators and custom all-reduce buffers)
    F_post = F_pre - this stage's weights (largest TP rank) - what else the load leaves
    both   = the MIN over every rank of the world, as SGLang's all-reduce takes it: the stage
             with the largest shard sets F_post for all of them

The weights are computed (weights.py, SGLang's own parameter shapes); the residents are
calibrated constants, so F_pre and F_post are estimates. Everything downstream (the
automatic mem_fraction_static, the mamba split, the KV tokens) is the unchanged pipeline.
`estimate` is the arithmetic; `request_weights` / `for_request` apply it to a PlanRequest.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from mambasizer.schemas.request import LayoutModel, PlanRequest, PresetModel
from mambasizer.service.solver import gpus
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.platform import HOPPER, Platform, of_gpu
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights import stage_weight_bytes
from mambasizer.service.solver.weights.draft import draft_weight_bytes

if TYPE_CHECKING:
    from mambasizer.service.solver.launch import Launch

GIB = 1 << 30
MIB = 1 << 20

# ---------------------------------------------------------------- calibrated residents
# Each constant is calibrated on public SGLang start-up logs of 80 GB / 141 GB Hopper parts
# ("Load weight begin. avail mem=X GB", GB = GiB in SGLang's logs); the figures and their
# sources are kept in tests/data/fpre_calibration.json and checked (within 1 GiB) by
# tests/solver/test_gpu_budget.py.
#
# One rank (tp*pp == 1): CUDA context, cuBLAS/cuBLASLt workspaces, the allocator's first
# blocks. An 80 GB Hopper part (81559 MiB = 79.65 GiB) shows 78.43 GiB free before load in
# SGLang's docs CI (LoRA notebook, Llama-3.1-8B, 2026-02; docs.sglang.io/advanced_features/
# lora.html), i.e. 1.22 GiB resident; other 2026 single-GPU logs print 78.43-78.48.
SINGLE_RANK_RESIDENT_GIB = 1.19
# More than one rank adds NCCL communicators (TP, PP and world groups), their channel
# buffers and the custom all-reduce IPC buffers. H100 TP8 (Grok-1, SGLang 2025-09): 77.43
# GiB free -> 2.22 GiB resident; H200 TP16 over two nodes (MiMo-V2.5-Pro, sglang issue
# #24607, 2026-05): 138.09 -> 2.31;
# H200 TP8 (sglang PR #11716, 2025-10): 137.29-137.52 -> 2.9-3.1. The figures do not grow
# with TP size in a way these few logs resolve, so one constant covers every multi-rank world.
MULTI_RANK_EXTRA_GIB = 1.10
# What the load leaves besides the parameters (rotary cos/sin caches, small buffers):
# the same docs CI log loads Llama-3.1-8B bf16 with "mem usage=15.02 GB" for 14.96 GiB of
# parameters.
LOAD_RESIDENT_GIB = 0.06

# How much more (or less) weight the feasibility-sensitivity re-plan assumes (plan.py).
WEIGHTS_SENSITIVITY = 0.02


def resident_before_load_bytes(world_size: int) -> int:
    gib = SINGLE_RANK_RESIDENT_GIB + (MULTI_RANK_EXTRA_GIB if world_size > 1 else 0.0)
    return int(gib * GIB)


def load_bytes(weights_bytes: int) -> int:
    """What loading a rank's weights takes from its free memory: the parameters and what the
    load leaves besides them."""
    return weights_bytes + int(LOAD_RESIDENT_GIB * GIB)


def probe_gib(free_bytes: int, distributed: bool) -> float:
    """`get_available_gpu_memory`: with `distributed`, the byte count goes through a float32
    tensor (the MIN all-reduce) before the GiB conversion."""
    if distributed:
        free_bytes = struct.unpack("f", struct.pack("f", float(free_bytes)))[0]
    return free_bytes / GIB


class EstimatedBudget(NamedTuple):
    capacity_mib: int  # what F_pre starts from: the GPU capacity, or the host's available memory on an integrated part
    world_size: int
    resident_before_bytes: int
    free_before_bytes: int  # per rank (every rank starts equal)
    free_before_gib: float  # F_pre as SGLang's probe returns it
    stage_weights_bytes: tuple[int, ...]  # per stage, its largest TP rank
    stage_free_after_bytes: tuple[int, ...]
    free_after_gib: float  # F_post: the world MIN, as the probe returns it
    min_stage: int  # the stage whose rank set the MIN (the first on a tie)
    reserved_overridden: bool


def estimate(
    capacity_mib: int,
    stage_weights_bytes: Sequence[int],
    *,
    tp_size: int,
    pp_size: int,
    reserved_gib: float | None = None,
    weights_scale: float = 1.0,
) -> EstimatedBudget:
    """F_pre and F_post on a GPU of `capacity_mib`, for stages holding these weights.
    `reserved_gib` replaces the calibrated pre-load residents; `weights_scale` perturbs
    the weights (the feasibility-sensitivity check)."""
    world = tp_size * pp_size
    distributed = world > 1
    resident = int(reserved_gib * GIB) if reserved_gib is not None else resident_before_load_bytes(world)
    free_before = capacity_mib * MIB - resident
    weights = tuple(int(w * weights_scale) for w in stage_weights_bytes)
    after = tuple(free_before - load_bytes(w) for w in weights)
    low = min(after)
    return EstimatedBudget(
        capacity_mib=capacity_mib,
        world_size=world,
        resident_before_bytes=resident,
        free_before_bytes=free_before,
        free_before_gib=probe_gib(max(free_before, 0), distributed),
        stage_weights_bytes=weights,
        stage_free_after_bytes=after,
        # A negative free figure cannot be measured: SGLang would have hit a CUDA OOM while
        # loading; the pipeline's non-positive-rest check reports it (free_after 0).
        free_after_gib=probe_gib(max(low, 0), distributed),
        min_stage=after.index(low),
        reserved_overridden=reserved_gib is not None,
    )


# ------------------------------------------------------------------ per request (plan.py)


def named_gpu(req: PlanRequest) -> gpus.Gpu | None:
    """The catalog part `budget.gpu` names (PlanInputError on budget.gpu for an unknown name)."""
    return gpus.lookup(req.budget.gpu) if req.budget.gpu is not None else None


def capacity_mib(req: PlanRequest) -> int | None:
    """The GPU capacity (MiB) the request gives: `gpu_memory_mib`, or its catalog GPU's. A part
    without a confirmed capacity needs gpu_memory_mib in the estimated form."""
    b = req.budget
    if b.gpu_memory_mib is not None:
        if b.gpu is not None:
            named_gpu(req)  # the name is checked even when the capacity is the caller's
        return b.gpu_memory_mib
    gpu = named_gpu(req)
    if gpu is None:
        return None
    if gpu.memory_mib is None and b.estimated:
        raise PlanInputError(
            "budget.gpu_memory_mib",
            f"is needed with budget.gpu {gpu.name!r}: no public source confirms the capacity SGLang's probe reads on it "
            f"({gpu.source}); give the figure you read ({'rocminfo Pool 1 Size KB / 1024' if gpu.runtime == 'hip' else 'nvidia-smi memory.total'}) as gpu_memory_mib",
        )
    return gpu.memory_mib


def free_memory_from_host(gpu: gpus.Gpu | None) -> bool:
    """`get_available_gpu_memory`: on a part whose props.is_integrated is set SGLang reads
    free memory from psutil.virtual_memory().available (the host's), else from
    torch.cuda.mem_get_info (the GPU's)."""
    return gpu is not None and gpu.integrated


def host_available_mib(req: PlanRequest) -> int | None:
    """budget.host_available_mib, checked: it applies to an integrated part only."""
    b = req.budget
    if b.host_available_mib is None:
        return None
    gpu = named_gpu(req)
    if not free_memory_from_host(gpu):
        what = f"{gpu.name!r} is a discrete GPU" if gpu is not None else "no budget.gpu names an integrated part"
        raise PlanInputError(
            "budget.host_available_mib",
            f"applies only to an integrated (unified-memory) GPU, where SGLang reads free memory from the host; {what} "
            "(SGLang reads torch.cuda.mem_get_info there): drop it, or name the integrated part (gb10, mi300a, strix-halo)",
        )
    return b.host_available_mib


def free_base_mib(req: PlanRequest) -> int:
    """What the estimated F_pre starts from, in MiB: the GPU capacity SGLang's probe reads, or,
    on an integrated part, the host's available memory (budget.host_available_mib, else the
    capacity: the assumption request_warnings states)."""
    capacity = capacity_mib(req)
    assert capacity is not None  # only the GPU-only budget form is estimated, and it names a capacity
    host = host_available_mib(req)
    return host if host is not None else capacity


def device_report(req: PlanRequest) -> dict:
    """The device the plan resolved as (Plan.device)."""
    gpu = named_gpu(req)
    named = gpu is not None
    if gpu is None:
        gpu = gpus.CATALOG[gpus.DEFAULT_GPU]
    host = free_memory_from_host(gpu)
    given = req.budget.host_available_mib if host else None
    if not req.budget.estimated:
        basis = "measured: the budget's figures are what SGLang read"
    elif host:
        basis = ("host: budget.host_available_mib (psutil available) less the estimated residents" if given is not None else
                 "host (assumed): the whole capacity taken as the host's available memory; give budget.host_available_mib")
    else:
        basis = "device: the GPU capacity less the estimated residents (torch.cuda.mem_get_info)"
    return {
        "name": gpu.name,
        "named": named,
        "catalog": gpu.name in gpus.CATALOG,
        "product": gpu.product,
        "memory_mib": capacity_mib(req) if named or req.budget.gpu_memory_mib is not None else gpu.memory_mib,
        "compute_capability": gpu.gcn_arch or f"{gpu.capability[0]}.{gpu.capability[1]}",
        "device_class": gpu.device_class,
        "runtime": gpu.runtime,
        "integrated": gpu.integrated,
        "free_memory_from": "host" if host else "device",
        "host_available_mib": given,
        "free_memory_basis": basis,
    }


def platform_of(req: PlanRequest) -> Platform:
    """The platform whose SGLang resolution applies: the named part's, else Hopper's."""
    gpu = named_gpu(req)
    return of_gpu(gpu) if gpu is not None else HOPPER


def for_request(req: PlanRequest, launch: Launch, weights: Sequence[int], scale: float = 1.0) -> EstimatedBudget:
    return estimate(
        free_base_mib(req), weights, tp_size=launch.tp_size, pp_size=launch.pp_size,
        reserved_gib=req.budget.reserved_gib, weights_scale=scale,
    )


def request_warnings(req: PlanRequest) -> list[str]:
    b = req.budget
    out: list[str] = []
    if b.gpu is None and b.gpu_memory_mib is not None:
        same = gpus.by_capacity(b.gpu_memory_mib)
        if same is None or same.architecture != "hopper":
            what = f"is {same.name}'s capacity" if same is not None else "is not a catalog GPU's capacity"
            out.append(
                f"mambasizer: budget.gpu_memory_mib={b.gpu_memory_mib} {what}, but no budget.gpu names the device: the plan "
                "applies Hopper's resolution (page size, attention backend, automatic mem_fraction_static) and Hopper-calibrated "
                "CUDA/NCCL residents; name the part with budget.gpu (GET /v1/gpus) to resolve as SGLang does on it."
            )
    gpu = named_gpu(req)
    if gpu is not None and b.estimated and b.reserved_gib is None and gpu.architecture != "hopper":
        out.append(fpre_uncertainty_warning(gpu))
    if b.estimated and free_memory_from_host(gpu) and host_available_mib(req) is None:
        assert gpu is not None
        out.append(unified_memory_assumption_warning(gpu, free_base_mib(req)))
    return out


def unified_memory_assumption_warning(gpu: gpus.Gpu, assumed_mib: int) -> str:
    """What the plan assumed on an integrated part without budget.host_available_mib."""
    return (
        f"mambasizer: {gpu.product} is an integrated (unified-memory) GPU: SGLang reads its free memory from the host "
        "(psutil.virtual_memory().available), not from a GPU capacity, so free_gib_before_load / free_gib_after_load "
        f"depend on what else the host holds. No budget.host_available_mib was given: this plan ASSUMED the whole "
        f"{assumed_mib} MiB is available (an idle host, nothing else running, no page cache held), which overstates "
        "the KV pool (a public idle GB10 shows MemAvailable 113.07 GiB of its 121.7 GiB). Give budget.host_available_mib "
        "(MemAvailable in /proc/meminfo, MiB, read before SGLang starts) to plan from the host's figure."
    )


class FpreEvidence(NamedTuple):
    """A public start-up log of a non-Hopper class printing the free memory SGLang read
    before the load (avail mem after + mem usage of 'Load weight end'); the figures are
    kept in tests/data/fpre_off_hopper.json and checked by tests/solver/test_gpu_budget.py."""

    part: str  # the catalog part it ran on
    tp_size: int
    f_pre_gib: float
    source: str


# Per device class; a class not listed has no such public log (December 2026).
FPRE_EVIDENCE = {
    "sm89": FpreEvidence("rtx-4090", 2, 22.84, "github.com/kvcache-ai/ktransformers/issues/1870, SGLang 0.5.9 with kt-kernel"),
    "sm121": FpreEvidence("gb10", 1, 112.95, "albond/DGX_Spark_Qwen3.5-122B-A10B-AR-INT4, a dev build; read from the host"),
    "gfx1151": FpreEvidence("strix-halo", 1, 110.68, "a public repository file, a patched ROCm build; read from the host"),
}


def fpre_evidence_note(gpu: gpus.Gpu) -> str:
    """What public logs say about F_pre on `gpu`'s device class, with the estimate's error."""
    cls = gpu.device_class
    ev = FPRE_EVIDENCE.get(cls)
    if ev is None:
        return f"no public start-up log of class {cls} prints the free memory before the load, so this estimate's error there is unknown"
    part = gpus.CATALOG[ev.part]
    if part.memory_mib is None:
        return (f"one public log of class {cls} ({ev.part}, TP {ev.tp_size}; {ev.source}) read {ev.f_pre_gib} GiB before the "
                "load, but the part has no fixed capacity to compare the estimate with")
    ours = estimate(part.memory_mib, [0], tp_size=ev.tp_size, pp_size=1).free_before_gib
    how = "taking the whole capacity as the host's available memory gives" if part.integrated else "this estimate gives"
    return (f"one public log of class {cls} ({ev.part}, TP {ev.tp_size}; {ev.source}) read {ev.f_pre_gib} GiB before the load "
            f"where {how} {ours:.2f} GiB ({ours - ev.f_pre_gib:+.2f} GiB)")


def fpre_uncertainty_warning(gpu: gpus.Gpu) -> str:
    """F_pre off Hopper: the residents are calibrated on Hopper logs only, so Hopper's
    constants stand in, with what the public logs of the part's class say that may cost."""
    stack = "HIP context, hipBLASLt workspaces and RCCL communicators" if gpu.runtime == "hip" else "CUDA context, cuBLAS workspaces and NCCL communicators"
    return (
        f"mambasizer: on {gpu.name} ({gpu.architecture}) the memory resident before the weights load ({stack}) is not "
        f"calibrated: the Hopper figures stand in ({SINGLE_RANK_RESIDENT_GIB} GiB one rank, "
        f"{round(SINGLE_RANK_RESIDENT_GIB + MULTI_RANK_EXTRA_GIB, 2)} GiB several; Hopper logs alone span 1.2-1.3 and 2.2-3.1 GiB); "
        f"{fpre_evidence_note(gpu)}. So free_gib_before_load and everything after it may be off by a GiB or more per GPU "
        "(budget_source stays estimated). Give budget.reserved_gib (or measured free_gib_before_load / free_gib_after_load) "
        "to replace the estimate."
    )


# Weights per layout object and parallel layout: a preset's layout lives for the process, so
# its weights are computed once per (tp, pp, ep, stages, MTP, draft); a pasted config's layout
# is new per request and is cached only for the remedy re-plans of that request. The layout
# is kept beside its id so a recycled id never matches. Bounded: 64 layouts (at most 4 of
# them pasted configs, up to 1 MiB each), 256 parallel layouts each.
_WEIGHTS_CACHE: dict[int, tuple[ModelLayout, bool, dict]] = {}


def known_weights(layout: ModelLayout) -> dict[tuple, tuple[int, ...]]:
    """The weights computed so far for this layout, by parallel-layout key (a copy)."""
    cached = _WEIGHTS_CACHE.get(id(layout))
    return dict(cached[2]) if cached is not None and cached[0] is layout else {}


def add_known_weights(layout: ModelLayout, entries: dict[tuple, tuple[int, ...]], preset: bool = True) -> None:
    """Take weights another process computed for the same layout (the API's work pool hands
    back what a preset's first plan at a new parallel layout computed, so the event loop's
    next plan of it is a cache hit). Same bounds as request_weights."""
    cached = _WEIGHTS_CACHE.get(id(layout))
    if cached is None or cached[0] is not layout:
        if len(_WEIGHTS_CACHE) >= 64:
            _WEIGHTS_CACHE.pop(next(iter(_WEIGHTS_CACHE)))
        cached = _WEIGHTS_CACHE[id(layout)] = (layout, preset, {})
    for key, weights in entries.items():
        if len(cached[2]) >= 256:
            break
        cached[2].setdefault(key, weights)


def request_weights(req: PlanRequest, layout: ModelLayout, launch: Launch, stage_ranges: Sequence[StageRange]) -> tuple[int, ...]:
    """Per stage, the parameter bytes on its largest TP rank (weights.py), with the MTP
    layers when speculative decoding loads them from the target checkpoint and the draft
    model when one is given."""
    if isinstance(req.model, LayoutModel):
        raise PlanInputError(
            "model.layout",
            "an explicit layout carries no weights, so it cannot be planned from the GPU alone: give the model as a "
            "preset or its config.json (model.hf_config), or a measured budget (free_gib_before_load / "
            "free_gib_after_load, or rest_gib)",
        )
    ep = launch.ep_size  # DeepEP resolves it to tp_size (wide_ep.ep_size)
    if launch.tp_size % ep != 0:
        raise PlanInputError("server_args.ep_size", f"must divide tp_size={launch.tp_size} (experts shard over ep_size, the rest over tp_size // ep_size)")
    weights = _target_weights(req, layout, launch, stage_ranges, ep)
    draft_config = req.draft_model.hf_config if req.draft_model is not None else None
    if draft_config is None or not weights:
        return weights
    # A draft checkpoint's weights: loaded on the last stage before the pools are sized.
    return (*weights[:-1], weights[-1] + _draft_weights(draft_config, launch.tp_size, ep))


_DRAFT_CACHE: dict[tuple[int, int, int], tuple[dict, int]] = {}


def _draft_weights(hf_config: dict, tp_size: int, ep_size: int) -> int:
    """draft_weight_bytes, kept per (config object, tp, ep) while that request's config lives
    (a sweep or recommend re-plans one request many times). Bounded like request_weights."""
    key = (id(hf_config), tp_size, ep_size)
    hit = _DRAFT_CACHE.get(key)
    if hit is not None and hit[0] is hf_config:
        return hit[1]
    value = draft_weight_bytes(hf_config, tp_size=tp_size, ep_size=ep_size)
    if len(_DRAFT_CACHE) >= 64:
        _DRAFT_CACHE.pop(next(iter(_DRAFT_CACHE)))
    _DRAFT_CACHE[key] = (hf_config, value)
    return value


def _target_weights(req: PlanRequest, layout: ModelLayout, launch: Launch, stage_ranges: Sequence[StageRange], ep: int) -> tuple[int, ...]:
    draft = req.draft_model.num_layers if req.draft_model is not None else None
    # The MTP draft comes from the target checkpoint: `num_nextn_predict_layers` (DeepSeek-style
    # configs) or, in Qwen3.5 / Qwen3-Next configs, `mtp_num_hidden_layers` (which SGLang does
    # not read for the KV cell, SIZING_SPEC §8.5, but whose layers its draft worker builds).
    has_mtp = layout.num_nextn_predict_layers > 0 or int(layout.hf_text_config.get("mtp_num_hidden_layers") or 0) > 0
    load_nextn = launch.speculative_algorithm in ("EAGLE", "NEXTN") and draft is None and has_mtp
    key = (launch.tp_size, launch.pp_size, ep, tuple((s.start, s.end) for s in stage_ranges), load_nextn, draft)
    cached = _WEIGHTS_CACHE.get(id(layout))
    if cached is not None and cached[0] is layout and key in cached[2]:
        return cached[2][key]
    try:
        weights = tuple(stage_weight_bytes(
            layout, tp_size=launch.tp_size, pp_size=launch.pp_size, ep_size=ep, stages=stage_ranges,
            load_nextn=load_nextn, draft_num_layers=draft,
        ))
    except PlanInputError as exc:
        if isinstance(req.model, PresetModel) and exc.field.startswith("model.hf_config"):
            # The user sent a preset name, not a config: say which preset lacks what.
            missing = exc.field[len("model.hf_config"):].lstrip(".") or "config"
            raise PlanInputError(
                "model.preset",
                f"preset {req.model.preset!r} cannot be planned from the GPU alone: its {missing}: {exc.message}. "
                "Give a measured budget (free_gib_before_load / free_gib_after_load or rest_gib), or the full config.json as model.hf_config.",
            ) from None
        raise
    if cached is None or cached[0] is not layout:
        # A pasted config's layout holds up to 1 MiB of client JSON and serves only its own
        # request's re-plans: keep at most 4 of them (a few MiB), beside up to 64 presets.
        preset = isinstance(req.model, PresetModel)
        pasted = [k for k, (_, is_preset, _) in _WEIGHTS_CACHE.items() if not is_preset]
        if not preset and len(pasted) >= 4:
            _WEIGHTS_CACHE.pop(pasted[0])
        if len(_WEIGHTS_CACHE) >= 64:
            _WEIGHTS_CACHE.pop(next(iter(_WEIGHTS_CACHE)))
        cached = _WEIGHTS_CACHE[id(layout)] = (layout, preset, {})
    if len(cached[2]) < 256:
        cached[2][key] = weights
    return weights
