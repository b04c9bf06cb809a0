"""compressed-tensors W8A8 fp8 (`CompressedTensorsW8A8Fp8` for linear layers,
`CompressedTensorsW8A8Fp8MoEMethod` for experts): fp8 weights with float32 scales per
tensor (one per logical shard), per output channel or per block, plus per-shard input
scales when activations are static."""

from __future__ import annotations

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.common import cdiv
from mambasizer.service.solver.weights.quant.fp8 import Fp8


class CtFp8(Fp8):
    name = "compressed-tensors-fp8"

    def __init__(self, act_bytes, skip, strategy: str, block, static: bool, kv_scales: bool, input_strategy: str = "token"):
        super().__init__(act_bytes, skip, block if strategy == "block" else None, static)
        self.strategy, self.input_strategy = strategy, input_strategy
        # k_scale / v_scale only with a kv_cache_scheme (CompressedTensorsKVCacheMethod).
        self.kv_scale_bytes = 8 if kv_scales else 0

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts) or self.strategy == "block":
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        scales = out if self.strategy == "channel" else len(outs_pr)
        return in_pr * out + 4 * scales + (4 * len(outs_pr) if self.static else 0)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        if (self.strategy, self.input_strategy) not in (("tensor", "tensor"), ("channel", "token")) and self.strategy != "block":
            # CompressedTensorsW8A8Fp8MoE asserts one of these pairs.
            raise PlanInputError("model.hf_config.quantization_config.config_groups",
                                 f"{parts[0]}: fp8 experts with {self.strategy} weights and {self.input_strategy} activations: "
                                 "SGLang's compressed-tensors fp8 MoE takes tensor/tensor, channel/token or block weights (AssertionError)")
        # get_moe_weight_sizes(is_concat=True): w13 holds gate and up whether or not the
        # model's experts are gated (Nemotron's relu2 experts get a 2I-row w13 too).
        w13 = 2 * inter_pr
        w = n_local * (w13 * hidden + hidden * inter_pr)
        if self.strategy == "tensor":
            s = n_local * (2 + 1)
        elif self.strategy == "channel":
            s = n_local * (w13 + hidden)
        else:
            assert self.block is not None
            bn, bk = self.block
            s = n_local * (2 * cdiv(inter_pr, bn) * cdiv(hidden, bk) + cdiv(hidden, bn) * cdiv(inter_pr, bk))
        return w + 4 * s + (4 * 2 * n_local if self.static else 0)
