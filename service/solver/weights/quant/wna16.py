"""Int4 weight-only (compressed-tensors pack-quantized, AWQ, GPTQ)."""

from __future__ import annotations

from mambasizer.service.solver.weights.common import (
    cdiv,
)
from mambasizer.service.solver.weights.quant.base import Quant


class WNA16(Quant):
    """Int4 weight-only with group scales: compressed-tensors pack-quantized
    (`weight_packed` int32, `weight_scale` in the model dtype, `weight_shape` int64[2]) and
    AWQ / GPTQ (`qweight` int32, fp16 `scales`, int32 `qzeros`, GPTQ's int32 `g_idx`)."""

    def __init__(self, act_bytes, skip, bits: int, group: int, flavour: str, zero_point: bool, desc_act: bool = False):
        super().__init__(act_bytes, skip)
        self.bits, self.group, self.flavour, self.zp = bits, group, flavour, zero_point
        self.desc_act = desc_act
        self.name = flavour

    def _one(self, in_pr: int, out: int) -> int:
        pack = 32 // self.bits
        w = in_pr * out // pack * 4
        if self.flavour == "compressed-tensors":
            groups = cdiv(in_pr, self.group) if self.group > 0 else 1
            return w + groups * out * self.act + 16 + (groups * out // pack * 4 if self.zp else 0)
        # AWQ / GPTQ (Marlin) floor the group count (`input_size_per_partition // group_size`):
        # a row-parallel shard that is no multiple of the group loses the tail group.
        groups = in_pr // self.group if self.group > 0 else 1
        total = w + groups * out * 2 + groups * out // pack * 4
        return total + (in_pr * 4 if self.flavour == "gptq" else 0)

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        return self._one(in_pr, sum(outs_pr))

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        if self.flavour == "compressed-tensors":
            # CompressedTensorsWNA16MoEMethod: packed int32 weights, group scales, per-expert
            # int32 g_idx and its sort indices (one per input feature), 4 bytes of weight_shape.
            pack = 32 // self.bits
            one = lambda k, n: k * n // pack * 4 + cdiv(k, self.group) * n * self.act + 2 * 4 * k + 4  # noqa: E731
            return n_local * (one(hidden, w13_pr) + one(inter_pr, hidden))
        if self.flavour == "gptq":
            return n_local * self._gptq_marlin_expert(hidden, inter_pr)
        # AWQ's MoE scheme (awq_moe) allocates w13 2I wide whether or not the experts are gated.
        return n_local * (self._one(hidden, 2 * inter_pr) + self._one(inter_pr, hidden))

    def _gptq_marlin_expert(self, hidden: int, inter_pr: int) -> int:
        """One expert under GPTQMarlinMoEScheme.create_weights: w13 always 2I wide (gated or
        not), fp16 scales whose w2 groups span the full intermediate size unless desc_act,
        zero points in the model dtype, and int32 g_idx plus its sort indices."""
        pack = 32 // self.bits
        w13 = 2 * inter_pr
        if self.group != -1:
            s13 = hidden // self.group
            s2 = (inter_pr if self.desc_act else inter_pr * self.moe_tp) // self.group
        else:
            s13 = s2 = 1
        qweight = (hidden // pack) * w13 * 4 + (inter_pr // pack) * hidden * 4
        scales = (s13 * w13 + s2 * hidden) * 2
        qzeros = (s13 * (w13 // pack) + s2 * (hidden // pack)) * self.act
        g_idx = 2 * (hidden + inter_pr) * 4
        return qweight + scales + qzeros + g_idx


