"""MXFP4 (compressed-tensors mxfp4-pack-quantized)."""

from __future__ import annotations

from mambasizer.service.solver.weights.common import (
    cdiv,
)
from mambasizer.service.solver.weights.quant.base import Quant


class Mxfp4(Quant):
    """MXFP4 (group 32): packed uint8 weight, uint8 (E8M0) scale per 32 inputs."""

    name = "mxfp4"

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        return out * in_pr // 2 + out * cdiv(in_pr, 32)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        # Mxfp4MoEMethod (compressed-tensors MXFP4 MoE): packed weights, uint8 scales per 32,
        # and w13 / w2 biases in the model dtype. The backend paddings (Marlin, SM100) are not
        # applied: dimensions already multiples of 256 (Kimi-K3's) are unaffected.
        w = w13_pr * hidden // 2 + w13_pr * cdiv(hidden, 32) + hidden * inter_pr // 2 + hidden * cdiv(inter_pr, 32)
        return n_local * (w + (w13_pr + hidden) * self.act)


