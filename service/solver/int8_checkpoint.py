"""The int8 mamba checkpoint pool (`--enable-int8-mamba-checkpoint`), as SGLang 0.5.23
allocates it (`mem_cache/mamba_checkpoint_pool.py`).

Where and when: `HybridReqToTokenPool.__init__` builds it right after the active
`MambaPool` (`maybe_init_int8_mamba_checkpoint_pool`), which `_init_pools` runs AFTER the
split has fixed K and the KV token count, and BEFORE it builds the KV pool. So the pool is
not in the budget: the KV tokens do not change (SGLang says so itself: "this pool's HBM is
NOT subtracted from the KV-cache budget ... it is allocated from --mem-fraction-static
headroom"). What it does change is whether the rank starts:

1. `estimate_mem_usage_bytes` against `torch.cuda.mem_get_info` (the free memory at that
   point: the probe's free memory after load, less the request table and the mamba pools
   already built): `total >= free` raises SGLang's RuntimeError;
2. the KV pool, built next, must fit in what the checkpoint pool left: otherwise CUDA
   runs out of memory allocating it;
3. what is left after both is all the activations and CUDA graphs get (the slack
   mem_fraction_static kept, less the pool): reported as a slack consumer.

Slots: `int8_mamba_ckpt_size or 2 * max_mamba_cache_size`, plus the reserved slot 0. Per
slot and mamba layer: the temporal state in int8 (H x d_v x d_k bytes), one scale per
(head, k-channel) in the temporal state's dtype, the conv windows in their own dtype.

Launch refusals (`mamba_hook.handle_int8_mamba_checkpoint`): with
`--enable-hierarchical-cache` (the host-offload path is not int8-aware).
Conformance: tests/conformance/test_int8_checkpoint_conformance.py builds SGLang's own pool
(on the meta device) and compares. Pure: no torch.
"""

from __future__ import annotations

from math import prod
from typing import NamedTuple

from mambasizer.service.solver.specs import DTYPE_BYTES, StateSpec

GIB = 1 << 30

HICACHE_REFUSAL = (
    "--enable-int8-mamba-checkpoint is not supported together with --enable-hierarchical-cache: the host-offload path "
    "is not int8-aware. Disable one of them."
)


class CheckpointPool(NamedTuple):
    slots: int  # the checkpoint slots asked for (the allocation holds one more: slot 0)
    qdata: int
    scale: int
    conv: int

    @property
    def total(self) -> int:
        return self.qdata + self.scale + self.conv


def slots(max_mamba_cache_size: int, int8_mamba_ckpt_size: int | None) -> int:
    """`mamba.int8_mamba_ckpt_size or (2 * mamba_size)` (0 is unset too)."""
    return int8_mamba_ckpt_size or 2 * max_mamba_cache_size


def pool_bytes(state: StateSpec, local_mamba_layers: int, num_slots: int) -> CheckpointPool:
    """`MambaCheckpointPool.estimate_mem_usage_bytes` for one rank (its own mamba layers)."""
    rows = local_mamba_layers * (num_slots + 1)
    h, d_v, d_k = state.temporal
    qdata = rows * h * d_v * d_k  # int8
    scale = rows * h * d_k * DTYPE_BYTES[state.ssm_dtype]
    conv = rows * sum(prod(s) for s in state.conv_shapes) * DTYPE_BYTES[state.conv_dtype]
    return CheckpointPool(num_slots, qdata, scale, conv)


def refuses(pool: CheckpointPool, free_bytes: int) -> bool:
    """SGLang's pre-allocation check: the estimate at least the free memory raises."""
    return pool.total >= free_bytes


def too_large_message(pool: CheckpointPool, free_bytes: int) -> str:
    """SGLang's RuntimeError when the estimate is at least the free memory (its GB are GiB)."""
    return (
        f"int8 mamba checkpoint pool needs ~{pool.total / GIB:.2f}GB but only {free_bytes / GIB:.2f}GB HBM is free. "
        f"Lower --int8-mamba-ckpt-size (currently {pool.slots}) or --mem-fraction-static."
    )


def kv_oom_message(pool: CheckpointPool, kv_pool_bytes: int, free_bytes: int, pp_rank: int) -> str:
    left = free_bytes - pool.total
    return (
        f"CUDA out of memory allocating the KV pool on PP stage {pp_rank}: it needs {kv_pool_bytes / GIB:.2f} GiB but the "
        f"int8 mamba checkpoint pool ({pool.total / GIB:.2f} GiB, {pool.slots} slots), allocated just before it and not "
        f"subtracted from the KV budget, left {left / GIB:.2f} GiB free. Lower --int8-mamba-ckpt-size or "
        "--mem-fraction-static."
    )


def slack_note(pool: CheckpointPool, left_bytes: int | None, checked: bool) -> str:
    note = (
        f"--enable-int8-mamba-checkpoint allocates {pool.slots} + 1 int8 checkpoint slots after the split, before the KV "
        "pool (mamba_checkpoint_pool.py): not in the KV budget, it comes out of the slack mem_fraction_static kept for "
        "activations and CUDA graphs"
    )
    if not checked:
        return note + "; the budget gives no free memory to check it against (give free_gib_* or a gpu)"
    if left_bytes is None:
        return note + "; it does not fit (see error)"
    return note + f"; {left_bytes / GIB:.2f} GiB of that slack is left after it and the KV pool"
