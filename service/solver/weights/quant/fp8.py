"""fp8 checkpoints (quant_method fp8; compressed-tensors fp8 maps here too)."""

from __future__ import annotations

from collections.abc import Sequence

from mambasizer.service.solver.weights.common import (
    cdiv,
)
from mambasizer.service.solver.weights.quant.base import Quant


class Fp8(Quant):
    """`Fp8LinearMethod` / `Fp8MoEMethod` for a serialized fp8 checkpoint: fp8 weights,
    block-wise `weight_scale_inv` (float32, one per block) or per-tensor `weight_scale`
    (float32, one per logical shard) plus `input_scale` when activations are static."""

    name = "fp8"
    kv_scale_bytes = 8

    def __init__(self, act_bytes, skip, block: Sequence[int] | None, static: bool):
        super().__init__(act_bytes, skip)
        self.block = tuple(block) if block else None
        self.static = static
        # Block-wise only: every layer whose shards do not fill whole blocks at this TP size,
        # (its checkpoint shards) -> why. SGLang refuses the first one it builds; the walk
        # goes on so the refusal (weights/__init__.py) can name every one and the fix.
        self.unfit: dict[tuple[str, ...], str] = {}

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        if self.block:
            bn, bk = self.block
            self._check_blocks(in_pr, outs_pr, parts)
            return in_pr * out + 4 * cdiv(out, bn) * cdiv(in_pr, bk)
        return in_pr * out + 4 * len(outs_pr) + (4 * len(outs_pr) if self.static else 0)

    # Fp8LinearMethod.validate_block_quant_shapes: a sharded or merged layer's every output
    # shard, and a row-parallel layer's input shard, must fill whole blocks.
    def _check_blocks(self, in_pr, outs_pr, parts):
        assert self.block is not None  # called for block-wise fp8 only
        bn, bk = self.block
        if self.sharded_in and in_pr % bk:
            bad = f"input_size_per_partition={in_pr} is not divisible by block_k={bk}"
        elif (self.sharded_out or len(outs_pr) > 1) and any(o % bn for o in outs_pr):
            bad = f"an output partition of {list(outs_pr)} is not divisible by block_n={bn}"
        else:
            return
        self.unfit.setdefault(tuple(parts), bad)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        w = n_local * (w13_pr * hidden + hidden * inter_pr)
        if self.block:
            bn, bk = self.block
            s = n_local * (cdiv(w13_pr, bn) * cdiv(hidden, bk) + cdiv(hidden, bn) * cdiv(inter_pr, bk))
            return w + 4 * s
        shards = 2 if w13_pr == 2 * inter_pr else 1
        scales = n_local * (shards + 1)
        return w + 4 * scales + (4 * 2 * n_local if self.static else 0)


