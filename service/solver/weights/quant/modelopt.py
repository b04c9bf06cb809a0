"""NVIDIA ModelOpt: FP8, NVFP4 and MIXED_PRECISION."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.common import (
    cdiv,
    round_up,
)
from mambasizer.service.solver.weights.quant.base import Quant


class ModelOptFp8(Quant):
    """ModelOpt FP8 (per-tensor): fp8 weight, float32 weight_scale and input_scale per shard."""

    name = "modelopt_fp8"
    quantizes_lm_head = True

    def __init__(self, act_bytes, skip=(), kv_scales: bool = True):
        super().__init__(act_bytes, skip)
        self.kv_scale_bytes = 8 if kv_scales else 0

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        return in_pr * sum(outs_pr) + 8 * len(outs_pr)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        shards = 2 if w13_pr == 2 * inter_pr else 1
        # float32 w13_weight_scale (E, shards), w2_weight_scale, w13/w2 input scales (E,) each
        return n_local * (w13_pr * hidden + hidden * inter_pr) + 4 * n_local * (shards + 3)


class Nvfp4(Quant):
    """ModelOpt NVFP4 (group 16): packed uint8 weight (2 values a byte), fp8 block scales
    (one per 16 inputs), float32 weight_scale_2 and input_scale per shard."""

    name = "modelopt_fp4"
    quantizes_lm_head = True
    kv_scale_bytes = 8

    def __init__(self, act_bytes, skip, group: int = 16):
        super().__init__(act_bytes, skip)
        self.group = group

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        return out * in_pr // 2 + out * cdiv(in_pr, self.group) + 8 * len(outs_pr)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        g = self.group
        shards = 2 if w13_pr == 2 * inter_pr else 1
        w = n_local * (w13_pr * hidden // 2 + hidden * inter_pr // 2)
        # create_weights floors the scale columns (`size // group_size`): a TP shard of the
        # intermediate size that is no multiple of 16 (Nemotron-3 Nano at tp 8) loses the tail.
        s = n_local * (w13_pr * (hidden // g) + hidden * (inter_pr // g))
        # The blockscales' swizzled copies (rows to 128, scale columns to 4) that
        # ModelOptNvFp4FusedMoEMethod allocates with the weights unless the runner is
        # FlashInfer TRT-LLM (which aliases them): the default runner on Hopper keeps them.
        sw = n_local * (round_up(w13_pr, 128) * round_up(hidden // g, 4) + round_up(hidden, 128) * round_up(inter_pr // g, 4))
        # weight_scale_2 per local expert; the input scales span every expert (all EP ranks).
        return w + s + sw + 4 * (n_local + self.n_global) * (shards + 1)


class ModelOptMixed(Quant):
    """ModelOpt MIXED_PRECISION: each module's algorithm from `quantized_layers` (FP8 per-tensor,
    NVFP4, W4A16_NVFP4), looked up under the checkpoint's and SGLang's language-model prefixes;
    a fused module's shards must agree; a module not listed stays in the model dtype."""

    name = "modelopt_mixed"
    quantizes_lm_head = True

    def __init__(self, act_bytes, skip, layers: Mapping[str, Any], kv_scales: bool, group: int):
        super().__init__(act_bytes, skip)
        self.layers = layers
        self.kv_scale_bytes = 8 if kv_scales else 0
        self.methods = {"FP8": ModelOptFp8(act_bytes), "NVFP4": Nvfp4(act_bytes, (), group),
                        "W4A16_NVFP4": Nvfp4(act_bytes, (), group)}

    def _algo_of(self, name: str) -> str | None:
        cands = [name]
        if name.startswith("model.language_model."):
            cands.append("model." + name[len("model.language_model."):])
        elif name.startswith("model."):
            cands.append("model.language_model." + name[len("model."):])
        for cand in cands:
            info = self.layers.get(cand)
            if isinstance(info, dict):
                return str(info.get("quant_algo", "")).upper()
        # `_resolve_quant_algo`'s last resort: the first listed module under this prefix
        # (a FusedMoE `...experts` takes its experts' algorithm).
        for cand in cands:
            algo = self._under.get(cand)
            if algo is not None:
                return algo
        return None

    @cached_property
    def _under(self) -> dict[str, str]:
        """Each dotted prefix of a listed module -> the algorithm of the first module listed
        under it (dict order, as SGLang scans), built once instead of a scan per module."""
        out: dict[str, str] = {}
        for key, info in self.layers.items():
            if not isinstance(info, dict) or not isinstance(key, str):
                continue
            algo = str(info.get("quant_algo", "")).upper()
            parts = key.split(".")
            for i in range(1, len(parts)):
                out.setdefault(".".join(parts[:i]), algo)
        return out

    def _method(self, parts: Sequence[str]) -> Quant | None:
        algos = {a for p in parts if (a := self._algo_of(p)) is not None}
        if len(algos) > 1:
            raise PlanInputError("model.hf_config.quantization_config.quantized_layers",
                                 f"the shards of a fused layer ({', '.join(parts)}) use different algorithms {sorted(algos)}; SGLang refuses this")
        if not algos:
            return None
        algo = algos.pop()
        if algo not in self.methods:
            raise PlanInputError("model.hf_config.quantization_config.quantized_layers",
                                 f"{parts[0]}: quant_algo {algo!r} is not modelled (FP8, NVFP4, W4A16_NVFP4 are)")
        return self.methods[algo]

    def linear(self, in_pr, outs_pr, parts):
        m = None if self.skipped(parts) else self._method(parts)
        return m.linear(in_pr, outs_pr, parts) if m else super().linear(in_pr, outs_pr, parts)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        m = self._method(parts)
        if m is None:
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        m.n_global = self.n_global
        return m.experts(n_local, w13_pr, hidden, inter_pr, parts)


