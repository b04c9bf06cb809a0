"""The estimated budget of `budget: {"gpu": ...}` / `{"gpu_memory_mib": N}`: what SGLang
0.5.23's two memory probes would return on that GPU (SIZING_SPEC §1.1), before any boot.

    F_pre  = capacity - what is resident before the weights load (CUDA context, cuBLAS
             workspace, NCCL communicators and custom all-reduce buffers)
    F_post = F_pre - this stage's weights (largest TP rank) - what else the load leaves
    both   = the MIN over every rank of the world, as SGLang's all-reduce takes it: the stage
             with the largest shard sets F_post for all of them

The weights are exact (weights.py, SGLang's own parameter shapes); the residents are
calibrated constants, so F_pre and F_post are estimates. Everything downstream (the
automatic mem_fraction_static, the mamba split, the KV tokens) is the unchanged pipeline.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Optional, Sequence

GIB = 1 << 30
MIB = 1 << 20

# ---------------------------------------------------------------- calibrated residents
# Each constant is calibrated on public SGLang start-up logs of 80 GB / 141 GB Hopper parts
# ("Load weight begin. avail mem=X GB", GB = GiB in SGLang's logs); the figures and their
# sources are kept in tests/data/fpre_calibration.json and checked (within 1 GiB) by
# tests/solver/test_gpu_budget.py.
#
# One rank (tp*pp == 1): CUDA context, cuBLAS/cuBLASLt workspaces, the allocator's first
# blocks. H100 80GB (81559 MiB = 79.65 GiB) shows 78.43-78.48 GiB free before load in 2026
# SGLang logs (docs CI notebooks, Llama-3.1-8B / Qwen2.5-0.5B), i.e. 1.17-1.22 GiB resident.
SINGLE_RANK_RESIDENT_GIB = 1.19
# More than one rank adds NCCL communicators (TP, PP and world groups), their channel
# buffers and the custom all-reduce IPC buffers. H100 TP8 (Grok-1, SGLang 2025-09): 77.43
# GiB free -> 2.22 GiB resident; H200 TP16 over two nodes (MiMo-V2, 2026): 138.09 -> 2.31;
# H200 TP8 (sglang PR #11716, 2025-10): 137.29-137.52 -> 2.9-3.1. The figures do not grow
# with TP size in a way these few logs resolve, so one constant covers every multi-rank world.
MULTI_RANK_EXTRA_GIB = 1.10
# What the load leaves besides the parameters (rotary cos/sin caches, small buffers):
# Llama-3.1-8B bf16 on H100, SGLang docs CI 2026-02: "mem usage=15.02 GB" for 14.96 GiB of
# parameters.
LOAD_RESIDENT_GIB = 0.06

# The figure a user's 2% weight perturbation is checked with (see plan.py).
WEIGHTS_SENSITIVITY = 0.02


def resident_before_load_bytes(world_size: int) -> int:
    gib = SINGLE_RANK_RESIDENT_GIB + (MULTI_RANK_EXTRA_GIB if world_size > 1 else 0.0)
    return int(gib * GIB)


def probe_gib(free_bytes: int, distributed: bool) -> float:
    """`get_available_gpu_memory`: with `distributed`, the byte count goes through a float32
    tensor (the MIN all-reduce) before the GiB conversion."""
    if distributed:
        free_bytes = struct.unpack("f", struct.pack("f", float(free_bytes)))[0]
    return free_bytes / GIB


class EstimatedBudget(NamedTuple):
    capacity_mib: int
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
    reserved_gib: Optional[float] = None,
    weights_scale: float = 1.0,
) -> EstimatedBudget:
    """F_pre and F_post on a GPU of `capacity_mib`, for stages holding these weights.
    `reserved_gib` replaces the calibrated pre-load residents; `weights_scale` perturbs
    the weights (the feasibility-sensitivity check)."""
    world = tp_size * pp_size
    distributed = world > 1
    resident = int(reserved_gib * GIB) if reserved_gib is not None else resident_before_load_bytes(world)
    free_before = capacity_mib * MIB - resident
    load_other = int(LOAD_RESIDENT_GIB * GIB)
    weights = tuple(int(w * weights_scale) for w in stage_weights_bytes)
    after = tuple(free_before - w - load_other for w in weights)
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
