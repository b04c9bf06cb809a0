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

    def __init__(self, act_bytes, skip, bits: int, group: int, flavour: str, zero_point: bool):
        super().__init__(act_bytes, skip)
        self.bits, self.group, self.flavour, self.zp = bits, group, flavour, zero_point
        self.name = flavour

    def _one(self, in_pr: int, out: int) -> int:
        pack = 32 // self.bits
        groups = cdiv(in_pr, self.group) if self.group > 0 else 1
        w = in_pr * out // pack * 4
        if self.flavour == "compressed-tensors":
            return w + groups * out * self.act + 16 + (groups * out // pack * 4 if self.zp else 0)
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
        return n_local * (self._one(hidden, w13_pr) + self._one(inter_pr, hidden))


