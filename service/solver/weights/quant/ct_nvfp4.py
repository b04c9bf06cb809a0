"""compressed-tensors NVFP4 (`nvfp4-pack-quantized`: float 4-bit weights, tensor_group strategy,
group 16), as SGLang 0.5.23's linear schemes create its parameters. On Hopper the w4a4 scheme
needs SM100 and falls back to `CompressedTensorsW4A16Fp4(has_input_global_scale=True)`; both
allocate the same tensors: `weight_packed` uint8 (two values a byte), `weight_scale` fp8 (one per
16 inputs, floored: `input_size_per_partition // group_size`), float32 `weight_global_scale` per
logical shard, and with activations quantized (a w4a4 checkpoint) float32 `input_global_scale`
per shard. Experts (CompressedTensorsW4A4Nvfp4MoE / its Marlin fallback) are not modelled."""

from __future__ import annotations

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.quant.base import Quant


class CtNvfp4(Quant):
    name = "compressed-tensors-nvfp4"

    def __init__(self, act_bytes, skip, group: int, input_scales: bool, kv_scales: bool):
        super().__init__(act_bytes, skip)
        self.group, self.input_scales = group, input_scales
        # k_scale / v_scale only with a kv_cache_scheme (CompressedTensorsKVCacheMethod).
        self.kv_scale_bytes = 8 if kv_scales else 0

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        per_shard = 4 * len(outs_pr) * (2 if self.input_scales else 1)
        return out * (in_pr // 2) + out * (in_pr // self.group) + per_shard

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        raise PlanInputError("model.hf_config.quantization_config.format",
                             f"{parts[0]}: compressed-tensors NVFP4 experts are not modelled (its linear layers are); "
                             "list the experts in the checkpoint's ignore list only if they are stored unquantized, or give "
                             "a measured budget (free_gib_before_load / free_gib_after_load, or rest_gib)")
