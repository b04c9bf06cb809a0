"""Weight bytes per pipeline stage, on the stage's largest TP rank, as SGLang 0.5.23 allocates
them when it loads a hybrid model (what its `Load weight end ... mem usage` line measures).

Pure: stdlib and our own modules only. The numbers come from walking the model the way
SGLang's model class builds it (`sglang/srt/models/<family>.py`):

* which parameters each PP stage holds (`make_pp_layers` / `PPMissingLayer`): embeddings on
  the first stage, final norm and lm_head on the last; tied embeddings are one tensor at
  pp_size 1 and a separate lm_head on the last stage at pp_size > 1 (Granite-4.0-H cannot
  build that at all: refused); Qwen3.5's and Kimi-K3's vision towers on every stage (Qwen3.5's
  pos_embed on the first);
* TP sharding of each linear (column / row / merged / QKV with KV heads replicated when fewer
  than TP / replicated), vocabulary padding (`pad_vocab`: to 64, or 64*tp when that does not
  split over TP), Mamba2 group replication, MoE experts over `ep_size` (moe_tp = tp / ep),
  Qwen3-Next's CUDA shared-expert fusion (one more local expert slot);
* dtypes as the classes create them: GemmaRMSNorm's two tensors, float32 A / A_log / KDA
  conv / e_score_correction_bias where the class says so, Falcon-H1's float32 lm_head, the
  rotary caches (float32, one per distinct rope, `get_rope` caches per process) and other
  buffers allocated with the weights (mup_vector, LFM2's verify indices, MRoPE axis_map);
* quantization from `quantization_config` (`_quant_scheme`), as each quant method's
  `create_weights` shapes its parameters, with the config's ignore / exclude lists matched on
  module-path boundaries like SGLang's `is_layer_skipped` (fused layers need all shards to agree);
* MTP drafts (`load_nextn`): the draft model speculative decoding builds from the checkpoint,
  counted on the last stage (its own embedding and lm_head, its MTP layers).

Exact (byte for byte against SGLang's own model classes built on the `meta` device,
tests/conformance/test_weights_conformance.py): Nemotron-H (dense, MoE, latent MoE), Qwen3-Next,
Qwen3.5 dense and MoE with the vision tower, Falcon-H1, Granite-4.0-H, LFM2, Kimi-Linear,
Kimi-K3 with its vision tower (pp 1 to 8), in bf16; fp8 block-wise and per-tensor; ModelOpt FP8 (flat form)
and NVFP4, ModelOpt MIXED_PRECISION (FP8 + W4A16_NVFP4, the nvidia Qwen3.6-27B-NVFP4
release); compressed-tensors int4 pack-quantized and MXFP4 MoE (Kimi-K3 as shipped); AWQ /
GPTQ int4 linear layers; the
Nemotron-3 and Qwen3.5 MTP drafts.

Estimated: AWQ / GPTQ MoE experts, compressed-tensors fp8 and MXFP4 linear layers / MXFP4 MoE
backend paddings, ModelOpt's nested
(hf_quant_config) form, a `draft_num_layers` that is not the checkpoint's MTP; anything a load
step allocates after construction (a kernel backend repacking or padding weights) and the
allocator's cache. Not modelled: awq_marlin's refusal of shards it cannot tile (SGLang fails
to start; we answer bytes).
Against real boot logs (tests/conformance/test_weights_bootlogs.py) the prediction is within 3%.

Refused with a PlanInputError naming the field (never a bf16 guess): a quantization method or
ModelOpt algorithm not listed above, LFM2-MoE, an explicit layout (no config to derive weights from), a layout SGLang
refuses to build (TP not dividing heads / experts, block-fp8 shapes that do not fill blocks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from service.solver.errors import PlanInputError
from service.solver.layout import ModelLayout
from service.solver.stages import StageRange

# The config classes' defaults for the keys read here (SGLang's configs/<family>.py; transformers'
# Lfm2Config), for configs that leave a key out. Qwen3.5's text configs inherit Qwen3-Next's.
_QWEN_DEFAULTS = {"hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 16, "num_key_value_heads": 2,
                  "max_position_embeddings": 32768, "tie_word_embeddings": False, "partial_rotary_factor": 0.25,
                  "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                  "linear_num_key_heads": 16, "linear_num_value_heads": 32, "moe_intermediate_size": 512,
                  "shared_expert_intermediate_size": 512}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen3_next": {**_QWEN_DEFAULTS, "num_experts": 512},
    "qwen3_5": _QWEN_DEFAULTS,
    "nemotron_h": {"tie_word_embeddings": False, "hidden_size": 4096, "intermediate_size": 21504, "num_attention_heads": 32,
                   "head_dim": 128, "num_key_value_heads": 8, "mlp_bias": False, "use_bias": False, "max_position_embeddings": 4096,
                   "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "use_conv_bias": True,
                   "n_routed_experts": 8, "n_shared_experts": 1, "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688},
    "falcon_h1": {"tie_word_embeddings": False, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "max_position_embeddings": 8192, "mamba_n_heads": 128, "mamba_n_groups": 1,
                  "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_conv_bias": True, "mamba_proj_bias": False},
    "kimi_linear": {"hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32, "tie_word_embeddings": False,
                    "num_shared_experts": 0, "first_k_dense_replace": 0, "moe_layer_freq": 1, "max_position_embeddings": 4096},
    "granitemoehybrid": {"tie_word_embeddings": True, "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
                         "num_key_value_heads": 8, "max_position_embeddings": 131072, "attention_bias": False,
                         "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_n_heads": 64, "mamba_n_groups": 1,
                         "mamba_conv_bias": True, "mamba_proj_bias": False, "num_local_experts": 0, "shared_intermediate_size": 8192},
    "lfm2": {"hidden_size": 2560, "intermediate_size": 12288, "num_attention_heads": 32, "num_key_value_heads": 8,
             "max_position_embeddings": 128000, "tie_word_embeddings": True, "conv_bias": False, "conv_L_cache": 3,
             "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": True},
}
# The config classes' vocab_size defaults (SGLang's configs/<family>.py; transformers' Lfm2Config).
_VOCAB_DEFAULT = {"qwen3_next": 151936, "nemotron_h": 131072, "falcon_h1": 128000, "kimi_linear": 163840,
                  "granitemoehybrid": 100352, "lfm2": 65536}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
VOCAB_PADDING = 64  # vocab_parallel_embedding.DEFAULT_VOCAB_PADDING_SIZE


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round(a: int, m: int) -> int:
    return _cdiv(a, m) * m


def pad_vocab(vocab: int, tp: int) -> int:
    """`VocabParallelEmbedding`'s padded vocabulary (all ranks together)."""
    pad = VOCAB_PADDING
    if _cdiv(vocab, pad) * pad % tp != 0:
        pad *= tp
    return _cdiv(vocab, pad) * pad


class StageWeights(NamedTuple):
    """One PP stage's weights on its largest TP rank, by parameter group."""

    pp_rank: int
    total_bytes: int
    groups: tuple[tuple[str, int], ...]  # (group, bytes), e.g. ("embed", ...), ("experts", ...)


# --------------------------------------------------------------------------- quantization


class _Quant:
    """How linear / MoE / embedding parameters are stored. Subclasses model one quant method."""

    name = "none"
    quantizes_lm_head = False  # only ModelOpt's get_quant_method takes ParallelLMHead
    n_global = 0  # the MoE layer's experts over all EP ranks (set per layer by _Rank.experts)
    kv_scale_bytes = 0  # k_scale + v_scale (float32) its KV-cache method gives each RadixAttention
    # Whether the layer being priced shards its input / output over TP (set per layer by
    # _Rank._linear; block-wise fp8 checks that every shard fills whole blocks).
    sharded_in = sharded_out = False

    def __init__(self, act_bytes: int, skip: Sequence[str] = ()):
        self.act = act_bytes  # the model dtype's bytes (unquantized parameters)
        self.skip = tuple(skip)

    # `parts` name the module's checkpoint shards (one name for an unfused module): SGLang's
    # is_layer_skipped matches each shard of a fused module and needs them all to agree.
    def skipped(self, parts: Sequence[str]) -> bool:
        if not self.skip:
            return False
        hits = [_matches(p, self.skip) for p in parts]
        if any(hits) and not all(hits):
            raise PlanInputError(
                "model.hf_config.quantization_config",
                f"lists some but not all shards of a fused layer ({', '.join(parts)}) as unquantized; "
                "SGLang requires all shards of a fused layer to have the same precision",
            )
        return all(hits)

    def skipped_moe(self, parts: Sequence[str]) -> bool:
        """FusedMoE: also skipped when an ignore entry names a path inside the experts."""
        return self.skipped(parts) or any(parts[0] in pat for pat in self.skip)

    def linear(self, in_pr: int, outs_pr: Sequence[int], parts: Sequence[str]) -> int:
        return in_pr * sum(outs_pr) * self.act

    def experts(self, n_local: int, w13_pr: int, hidden: int, inter_pr: int, parts: Sequence[str]) -> int:
        return n_local * (w13_pr * hidden + hidden * inter_pr) * self.act


def _path_match(ignored: str, name: str) -> bool:
    """An ignore entry matches on dotted module-path boundaries (`mlp.gate` is not
    `mlp.gate_up_proj`), like SGLang's quantization.utils._module_path_match."""
    ignored, name = ignored.rstrip("."), name.rstrip(".")
    return ignored == name or name.startswith(ignored + ".") or ("." + ignored + ".") in ("." + name + ".")


def _matches(name: str, patterns: Sequence[str]) -> bool:
    for pat in patterns:
        if pat.startswith("re:"):
            if re.match(pat[3:], name):
                return True
        elif _path_match(pat, name):
            return True
    return False


class _Fp8(_Quant):
    """`Fp8LinearMethod` / `Fp8MoEMethod` for a serialized fp8 checkpoint: fp8 weights,
    block-wise `weight_scale_inv` (float32, one per block) or per-tensor `weight_scale`
    (float32, one per logical shard) plus `input_scale` when activations are static."""

    name = "fp8"
    kv_scale_bytes = 8

    def __init__(self, act_bytes, skip, block: Sequence[int] | None, static: bool):
        super().__init__(act_bytes, skip)
        self.block = tuple(block) if block else None
        self.static = static

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        if self.block:
            bn, bk = self.block
            self._check_blocks(in_pr, outs_pr, parts)
            return in_pr * out + 4 * _cdiv(out, bn) * _cdiv(in_pr, bk)
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
        raise PlanInputError(
            "model.hf_config.quantization_config.weight_block_size",
            f"{parts[0]}: {bad}; SGLang refuses to load this block-fp8 checkpoint at this TP size "
            "(list the layer in modules_to_not_convert, or pick another tp_size)",
        )

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        w = n_local * (w13_pr * hidden + hidden * inter_pr)
        if self.block:
            bn, bk = self.block
            s = n_local * (_cdiv(w13_pr, bn) * _cdiv(hidden, bk) + _cdiv(hidden, bn) * _cdiv(inter_pr, bk))
            return w + 4 * s
        shards = 2 if w13_pr == 2 * inter_pr else 1
        scales = n_local * (shards + 1)
        return w + 4 * scales + (4 * 2 * n_local if self.static else 0)


class _ModelOptFp8(_Quant):
    """ModelOpt FP8 (per-tensor): fp8 weight, float32 weight_scale and input_scale per shard."""

    name = "modelopt_fp8"
    quantizes_lm_head = True
    kv_scale_bytes = 8

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


class _Nvfp4(_Quant):
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
        return out * in_pr // 2 + out * _cdiv(in_pr, self.group) + 8 * len(outs_pr)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        g = self.group
        shards = 2 if w13_pr == 2 * inter_pr else 1
        w = n_local * (w13_pr * hidden // 2 + hidden * inter_pr // 2)
        s = n_local * (w13_pr * _cdiv(hidden, g) + hidden * _cdiv(inter_pr, g))
        # The blockscales' swizzled copies (rows to 128, scale columns to 4) that
        # ModelOptNvFp4FusedMoEMethod allocates with the weights unless the runner is
        # FlashInfer TRT-LLM (which aliases them): the default runner on Hopper keeps them.
        sw = n_local * (_round(w13_pr, 128) * _round(_cdiv(hidden, g), 4) + _round(hidden, 128) * _round(_cdiv(inter_pr, g), 4))
        # weight_scale_2 per local expert; the input scales span every expert (all EP ranks).
        return w + s + sw + 4 * (n_local + self.n_global) * (shards + 1)


class _Mixed(_Quant):
    """ModelOpt MIXED_PRECISION: each module's algorithm from `quantized_layers` (FP8 per-tensor,
    NVFP4, W4A16_NVFP4), looked up under the checkpoint's and SGLang's language-model prefixes;
    a fused module's shards must agree; a module not listed stays in the model dtype."""

    name = "modelopt_mixed"
    quantizes_lm_head = True

    def __init__(self, act_bytes, skip, layers: Mapping[str, Any], kv_scales: bool, group: int):
        super().__init__(act_bytes, skip)
        self.layers = layers
        self.kv_scale_bytes = 8 if kv_scales else 0
        self.methods = {"FP8": _ModelOptFp8(act_bytes), "NVFP4": _Nvfp4(act_bytes, (), group),
                        "W4A16_NVFP4": _Nvfp4(act_bytes, (), group)}

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
        return None

    def _method(self, parts: Sequence[str]) -> _Quant | None:
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


class _WNA16(_Quant):
    """Int4 weight-only with group scales: compressed-tensors pack-quantized
    (`weight_packed` int32, `weight_scale` in the model dtype, `weight_shape` int64[2]) and
    AWQ / GPTQ (`qweight` int32, fp16 `scales`, int32 `qzeros`, GPTQ's int32 `g_idx`)."""

    def __init__(self, act_bytes, skip, bits: int, group: int, flavour: str, zero_point: bool):
        super().__init__(act_bytes, skip)
        self.bits, self.group, self.flavour, self.zp = bits, group, flavour, zero_point
        self.name = flavour

    def _one(self, in_pr: int, out: int) -> int:
        pack = 32 // self.bits
        groups = _cdiv(in_pr, self.group) if self.group > 0 else 1
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
            one = lambda k, n: k * n // pack * 4 + _cdiv(k, self.group) * n * self.act + 2 * 4 * k + 4  # noqa: E731
            return n_local * (one(hidden, w13_pr) + one(inter_pr, hidden))
        return n_local * (self._one(hidden, w13_pr) + self._one(inter_pr, hidden))


class _Mxfp4(_Quant):
    """MXFP4 (group 32): packed uint8 weight, uint8 (E8M0) scale per 32 inputs."""

    name = "mxfp4"

    def linear(self, in_pr, outs_pr, parts):
        if self.skipped(parts):
            return super().linear(in_pr, outs_pr, parts)
        out = sum(outs_pr)
        return out * in_pr // 2 + out * _cdiv(in_pr, 32)

    def experts(self, n_local, w13_pr, hidden, inter_pr, parts):
        if self.skipped_moe(parts):
            return super().experts(n_local, w13_pr, hidden, inter_pr, parts)
        # Mxfp4MoEMethod (compressed-tensors MXFP4 MoE): packed weights, uint8 scales per 32,
        # and w13 / w2 biases in the model dtype. The backend paddings (Marlin, SM100) are not
        # applied: dimensions already multiples of 256 (Kimi-K3's) are unaffected.
        w = w13_pr * hidden // 2 + w13_pr * _cdiv(hidden, 32) + hidden * inter_pr // 2 + hidden * _cdiv(inter_pr, 32)
        return n_local * (w + (w13_pr + hidden) * self.act)


def _quant_scheme(hf: Mapping[str, Any], text: Mapping[str, Any], act_bytes: int, path: str) -> _Quant:
    qc = hf.get("quantization_config") or text.get("quantization_config")
    qpath = f"{path}.quantization_config" if hf.get("quantization_config") else f"{path}.text_config.quantization_config"
    if not qc:
        return _Quant(act_bytes)
    if not isinstance(qc, dict):
        raise PlanInputError(qpath, "must be an object (the checkpoint's quantization_config)")
    method = str(qc.get("quant_method", "")).lower()
    field = f"{qpath}.quant_method"
    skip = list(qc.get("ignored_layers") or []) + list(qc.get("modules_to_not_convert") or []) + list(qc.get("ignore") or [])
    if method == "fp8":
        block = qc.get("weight_block_size")
        if block is not None and (not isinstance(block, list) or len(block) != 2 or not all(isinstance(b, int) and b > 0 for b in block)):
            raise PlanInputError(f"{qpath}.weight_block_size", "must be two positive integers [block_n, block_k]")
        return _Fp8(act_bytes, skip, block, qc.get("activation_scheme", "dynamic") == "static")
    if method in ("modelopt", "modelopt_fp8", "modelopt_fp4"):
        raw_nested = qc.get("quantization")
        nested: Mapping[str, Any] = raw_nested if isinstance(raw_nested, dict) else {}
        algo = str(qc.get("quant_algo") or nested.get("quant_algo") or "").upper()
        if algo == "FP8":
            # ModelOptFp8Config.from_config: the flat form's exclusions are its `ignore` list,
            # the hf_quant_config form's are quantization.exclude_modules.
            skip = list(qc.get("ignore") or []) if qc.get("quant_algo") else list(nested.get("exclude_modules") or [])
            return _ModelOptFp8(act_bytes, skip)
        skip += list(qc.get("exclude_modules") or nested.get("exclude_modules") or [])
        if algo == "NVFP4":
            return _Nvfp4(act_bytes, skip, int(qc.get("group_size") or 16))
        if algo == "MIXED_PRECISION":
            layers = qc.get("quantized_layers") or nested.get("quantized_layers")
            if not isinstance(layers, dict) or not layers:
                raise PlanInputError(f"{qpath}.quantized_layers", "MIXED_PRECISION needs a non-empty quantized_layers map")
            kvs = qc.get("kv_cache_scheme")
            kv = (isinstance(kvs, dict) and kvs.get("type") == "float") or bool(qc.get("kv_cache_quant_algo") or nested.get("kv_cache_quant_algo"))
            group = next((int(v.get("group_size", 16)) for v in layers.values() if isinstance(v, dict) and str(v.get("quant_algo", "")).upper() in ("NVFP4", "W4A16_NVFP4")), 16)
            mixed_skip = list(qc.get("ignore", qc.get("exclude_modules")) or []) if qc.get("quant_algo") else list(nested.get("exclude_modules") or [])
            return _Mixed(act_bytes, mixed_skip, layers, kv, group)
        raise PlanInputError(f"{qpath}.quant_algo", f"ModelOpt quant_algo {algo or None!r} is not modelled (FP8, NVFP4 and MIXED_PRECISION are); give a budget with measured memory instead")
    if method in ("awq", "gptq", "auto-round"):
        bits = qc.get("bits", qc.get("w_bit", 4))
        wgroup = qc.get("group_size", qc.get("q_group_size", 128))
        if bits != 4 or not isinstance(wgroup, int):
            raise PlanInputError(f"{qpath}.bits", f"only 4-bit {method} is modelled, got bits={bits!r}")
        flavour = "awq" if method == "awq" or str(qc.get("packing_format", "")).endswith("awq") else "gptq"
        return _WNA16(act_bytes, skip, 4, wgroup, flavour, True)
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        if not isinstance(groups, dict) or len(groups) != 1:
            raise PlanInputError(f"{qpath}.config_groups", "exactly one config group is modelled")
        g = next(iter(groups.values()))
        w = (g or {}).get("weights") or {}
        fmt = str(g.get("format") or qc.get("format") or "")
        if w.get("num_bits") == 4 and w.get("type") == "float" and "mxfp4" in fmt:
            return _Mxfp4(act_bytes, skip)
        if w.get("num_bits") == 4 and w.get("type", "int") == "int":
            return _WNA16(act_bytes, skip, 4, int(w.get("group_size") or -1), "compressed-tensors", not w.get("symmetric", True))
        if w.get("num_bits") == 8 and w.get("type") == "float":
            block = w.get("block_structure")
            return _Fp8(act_bytes, skip, block if w.get("strategy") == "block" else None, not (g.get("input_activations") or {}).get("dynamic", True))
        raise PlanInputError(field, f"compressed-tensors format {fmt or w!r} is not modelled (int4 pack-quantized, fp8 and mxfp4 are)"[:300])
    raise PlanInputError(field, f"quant_method {method!r} is not modelled (fp8, modelopt FP8/NVFP4, awq, gptq, compressed-tensors are); give a budget with measured memory instead")


# --------------------------------------------------------------------------- the walk


class _Rank:
    """Accumulates one rank's bytes by group while the family walker describes the model."""

    def __init__(self, tp: int, ep: int, act_bytes: int, quant: _Quant):
        self.tp, self.ep, self.act, self.q = tp, ep, act_bytes, quant
        self.moe_tp = tp // ep
        self.groups: dict[str, int] = {}

    def add(self, group: str, nbytes: int) -> None:
        self.groups[group] = self.groups.get(group, 0) + nbytes

    def _shard(self, n: int, what: str) -> int:
        if n % self.tp:
            raise PlanInputError("server_args.tp_size", f"{what}={n} is not divisible by the TP size {self.tp} (SGLang asserts this when it builds the model); pick a TP size that divides it")
        return n // self.tp

    # Linear layers: sizes are whole-model; parts are checkpoint names for ignore lists.
    def column(self, group, in_f, outs, name, parts=None, bias=False, quant=True):
        outs_pr = [self._shard(o, name) for o in outs]
        self._linear(group, in_f, outs_pr, name, parts, bias, quant, sharded_out=self.tp > 1)

    def row(self, group, in_f, out_f, name, bias=False, quant=True):
        self._linear(group, self._shard(in_f, name), [out_f], name, None, bias, quant, sharded_in=self.tp > 1)

    def replicated(self, group, in_f, out_f, name, bias=False, quant=True):
        self._linear(group, in_f, [out_f], name, None, bias, quant)

    def qkv(self, group, hidden, head_dim, heads, kv_heads, name, parts, bias=False, quant=True, v_head_dim=None):
        q = self._shard(heads, f"{name} num_heads") * head_dim
        if kv_heads >= self.tp:
            kv = self._shard(kv_heads, f"{name} num_kv_heads")
        else:
            if self.tp % kv_heads:
                raise PlanInputError("server_args.tp_size", f"the TP size {self.tp} is not a multiple of num_key_value_heads={kv_heads} (SGLang asserts this)")
            kv = 1  # fewer KV heads than TP ranks: each rank holds one, replicated
        self._linear(group, hidden, [q, kv * head_dim, kv * (v_head_dim or head_dim)], name, parts, bias, quant, sharded_out=self.tp > 1)

    def _linear(self, group, in_pr, outs_pr, name, parts, bias, quant, sharded_in=False, sharded_out=False):
        q = self.q if quant else _Quant(self.act)
        q.sharded_in, q.sharded_out = sharded_in, sharded_out
        self.add(group, q.linear(in_pr, outs_pr, parts or [name]) + (sum(outs_pr) * self.act if bias else 0))

    def kv_scales(self):
        """A RadixAttention built with the quant config: its KV-cache method's scales."""
        self.add("attention", self.q.kv_scale_bytes)

    def params(self, group, n, dtype_bytes=None):
        self.add(group, n * (self.act if dtype_bytes is None else dtype_bytes))

    def experts(self, group, n_experts, hidden, inter, name, gated=True, n_fused_shared=0):
        if n_experts % self.ep:
            raise PlanInputError("server_args.ep_size", f"{name}: {n_experts} experts do not split over ep_size={self.ep}")
        if inter % self.moe_tp:
            raise PlanInputError("server_args.tp_size", f"{name}: moe_intermediate_size={inter} is not divisible by tp/ep={self.moe_tp}")
        local = n_experts // self.ep + n_fused_shared
        i_pr = inter // self.moe_tp
        self.q.n_global = n_experts + n_fused_shared
        self.add(group, self.q.experts(local, (2 if gated else 1) * i_pr, hidden, i_pr, [name]))

    def vocab(self, group, vocab, hidden, name, quant=False, dtype_bytes=None):
        per_rank = pad_vocab(vocab, self.tp) // self.tp
        q = self.q if quant and self.q.quantizes_lm_head else _Quant(dtype_bytes or self.act)
        self.add(group, q.linear(hidden, [per_rank], [name]))


def _stage_layers(stage: StageRange) -> range:
    return range(stage.start, stage.end)


# --------------------------------------------------------------------------- families


def _get(cfg: Mapping[str, Any], key: str, default: Any = None) -> Any:
    v = cfg.get(key)
    return default if v is None else v


def _cfg(lay: ModelLayout) -> dict:
    """The text config as SGLang's config class sees it: the class defaults under the file's keys."""
    return {**_DEFAULTS.get(lay.family, {}), **lay.hf_text_config}


def _vocab(lay: ModelLayout) -> int:
    v = lay.hf_text_config.get("vocab_size")
    if v is None:
        v = _VOCAB_DEFAULT.get(lay.family)
    if v is None:
        raise KeyError("vocab_size")
    return int(v)


def _gated_mlp(r: _Rank, h: int, inter: int, prefix: str, group: str = "mlp", bias=False):
    r.column(group, h, [inter, inter], f"{prefix}.gate_up_proj", [f"{prefix}.gate_proj", f"{prefix}.up_proj"], bias)
    r.row(group, inter, h, f"{prefix}.down_proj", bias)


def _qwen_moe(r: _Rank, c: Mapping[str, Any], h: int, prefix: str, fusion: bool):
    n_exp = int(c["num_experts"])
    shared = int(_get(c, "shared_expert_intermediate_size", 0))
    moe_i = int(c["moe_intermediate_size"])
    # Qwen3-Next on CUDA fuses the shared expert into the MoE as one more expert slot on every
    # EP rank when its width equals the routed experts' (qwen2_moe.can_fuse_shared_expert);
    # Qwen3.5 does not ask for the CUDA fusion.
    fuse = fusion and shared > 0 and shared == moe_i and not (isinstance(r.q, _Nvfp4) and any("shared_expert" in s and "shared_expert_gate" not in s for s in r.q.skip))
    r.replicated("moe_gate", h, n_exp, f"{prefix}.gate", quant=False)
    r.experts("experts", n_exp, h, moe_i, f"{prefix}.experts", n_fused_shared=1 if fuse else 0)
    if shared > 0 and not fuse:
        _gated_mlp(r, h, shared, f"{prefix}.shared_expert", "shared_expert")
    r.params("moe_gate", h)  # shared_expert_gate: torch.nn.Linear(hidden, 1), always built


def _qwen_gdn_layer(r: _Rank, c: Mapping[str, Any], h: int, prefix: str, norm_dtype_bytes: int, packed: bool):
    kh, vh = int(c["linear_num_key_heads"]), int(c["linear_num_value_heads"])
    kd, vd, ck = int(c["linear_key_head_dim"]), int(c["linear_value_head_dim"]), int(c["linear_conv_kernel_dim"])
    key, value = kh * kd, vh * vd
    r.column("linear_attn", ck, [2 * key + value], f"{prefix}.conv1d", quant=False)
    # Qwen3.5's packed_modules_mapping splits the fused projections into checkpoint shards
    # for ignore lists; Qwen3-Next's does not.
    qkvz, ba = f"{prefix}.in_proj_qkvz", f"{prefix}.in_proj_ba"
    r.column("linear_attn", h, [key, key, value, value], qkvz, [f"{prefix}.in_proj_qkv", f"{prefix}.in_proj_z"] if packed else [qkvz])
    r.column("linear_attn", h, [vh, vh], ba, [f"{prefix}.in_proj_b", f"{prefix}.in_proj_a"] if packed else [ba])
    r.params("linear_attn", r._shard(vh, "linear_num_value_heads"))  # dt_bias
    r.params("linear_attn", vh // r.tp, 4)  # A_log float32
    r.params("linear_attn", vd, norm_dtype_bytes)  # gated RMSNorm over head_v_dim
    r.row("linear_attn", value, h, f"{prefix}.out_proj")


def _qwen_attn_layer(r: _Rank, c: Mapping[str, Any], h: int, prefix: str, quant_qkv: bool, kv_scales: bool = False):
    hd = int(_get(c, "head_dim", h // int(c["num_attention_heads"])))
    heads, kv = int(c["num_attention_heads"]), int(c["num_key_value_heads"])
    gate = 2 if _get(c, "attn_output_gate", True) else 1
    r.qkv("attention", h, hd, heads * gate, kv, f"{prefix}.qkv_proj",
          [f"{prefix}.q_proj", f"{prefix}.k_proj", f"{prefix}.v_proj"], quant=quant_qkv)
    # qkv heads: q carries the output gate (heads * 2) sharded like the heads themselves.
    r.row("attention", heads * hd, h, f"{prefix}.o_proj")
    r.params("norms", 2 * 2 * hd)  # q_norm, k_norm (GemmaRMSNorm: weight + gemma_weight)
    if kv_scales:  # RadixAttention built with the quant config
        r.kv_scales()


def _walk_qwen(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = _cfg(lay)
    h = int(c["hidden_size"])
    vocab = _vocab(lay)
    is_moe = "num_experts" in c and int(_get(c, "num_experts", 0)) > 0
    modelopt_fp4 = isinstance(r.q, _Nvfp4)
    lm = "model.language_model" if lay.hf_config is not lay.hf_text_config else "model"
    tied = bool(_get(lay.hf_config, "tie_word_embeddings", _get(c, "tie_word_embeddings", False)))
    # Qwen3-Next's RMSNormGated uses config.torch_dtype, Qwen3.5's the default dtype: both the model dtype.
    if first:
        r.vocab("embed", vocab, h, "model.embed_tokens")
    full = set(lay.full_attention_layer_ids)

    def layer(i: int, prefix: str):
        if i in full:
            _qwen_attn_layer(r, c, h, f"{prefix}.self_attn", quant_qkv=not (modelopt_fp4 and lay.family == "qwen3_next"),
                             kv_scales=True)
        else:
            _qwen_gdn_layer(r, c, h, f"{prefix}.linear_attn", r.act, packed=lay.family == "qwen3_5")
        if is_moe:
            _qwen_moe(r, c, h, f"{prefix}.mlp", lay.family == "qwen3_next")
        else:
            _gated_mlp(r, h, int(c["intermediate_size"]), f"{prefix}.mlp")
        r.params("norms", 2 * 2 * h)  # input / post-attention GemmaRMSNorm: weight + gemma_weight

    for i in _stage_layers(stage):
        layer(i, f"{lm}.layers.{i}")
    if any(stage.start <= i < stage.end for i in full):
        _rope_cache(r, c, int(_get(c, "head_dim", h // int(c["num_attention_heads"]))))
    if last:
        r.params("norms", 2 * h)
        if not (tied and pp == 1):
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)
        if nextn:  # the MTP draft model (Qwen3_5ForCausalLMMTP / Qwen3NextForCausalLMMTP)
            _qwen_mtp(r, lay, c, h, vocab, is_moe, nextn)
    vc = lay.hf_config.get("vision_config") if lay.hf_config is not lay.hf_text_config else None
    if isinstance(vc, dict) and not lay.hf_config.get("language_model_only"):
        # every PP stage builds the vision tower; pos_embed only the first
        _qwen_vision(r, vc, first)


def _qwen_mtp(r: _Rank, lay: ModelLayout, c: Mapping[str, Any], h: int, vocab: int, is_moe: bool, nextn: int):
    """The MTP draft speculative decoding builds from the same checkpoint, on the last stage:
    its own embedding and lm_head (allocated with it, before EAGLE shares the target's), then
    per MTP layer the replicated fc (2h -> h), two pre-fc Gemma norms and one full-attention
    decoder layer, and a final Gemma norm. Its rotary cache is the target's (`get_rope` caches
    per process)."""
    r.vocab("mtp", vocab, h, "mtp.embed_tokens")
    r.vocab("mtp", vocab, h, "mtp.lm_head")
    for k in range(nextn):
        r.replicated("mtp", 2 * h, h, "mtp.fc", quant=False)
        r.params("mtp", 2 * 2 * h)  # pre_fc_norm_embedding / pre_fc_norm_hidden
        save = r.groups.copy()
        _qwen_attn_layer(r, c, h, f"mtp.layers.{k}.self_attn", True, kv_scales=True)
        if is_moe:
            _qwen_moe(r, c, h, f"mtp.layers.{k}.mlp", lay.family == "qwen3_next")
        else:
            _gated_mlp(r, h, int(c["intermediate_size"]), f"mtp.layers.{k}.mlp")
        r.params("mtp", 2 * 2 * h)  # input / post-attention norms
        moved = sum(r.groups.values()) - sum(save.values())
        r.groups = save
        r.add("mtp", moved)
    r.params("mtp", 2 * h)  # final norm


def _qwen_vision(r: _Rank, vc: Mapping[str, Any], first: bool):
    """Qwen3-VL vision tower (`Qwen3VLMoeVisionModel`, never quantized): blocks with
    TP-sharded attention and MLP (row-parallel biases whole), LayerNorms with bias, the
    patch Conv3d, a TP-sharded position embedding, the merger (+ deepstack mergers) and
    its rotary cache (float32, 8192 positions, head_dim // 2 wide)."""
    d = int(_get(vc, "hidden_size", 1152))
    depth = int(_get(vc, "depth", 27))
    inter = int(_get(vc, "intermediate_size", 4304))
    out = int(_get(vc, "out_hidden_size", 3584))
    patch, tps, ch = int(_get(vc, "patch_size", 16)), int(_get(vc, "temporal_patch_size", 2)), int(_get(vc, "in_channels", 3))
    merge = int(_get(vc, "spatial_merge_size", 2))
    npos = int(_get(vc, "num_position_embeddings", 2304))
    heads = int(_get(vc, "num_heads", 16))
    deep = len(_get(vc, "deepstack_visual_indexes", [8, 16, 24]))  # Qwen3VLVisionConfig default
    save, r.q = r.q, _Quant(r.act)
    try:
        r.params("vision", ch * tps * patch * patch * d + d)
        if first:
            r.vocab("vision", npos, d, "visual.pos_embed")
        for _ in range(depth):
            r.column("vision", d, [d, d, d], "visual.attn.qkv_proj", bias=True)
            r.row("vision", d, d, "visual.attn.proj", bias=True)
            r.column("vision", d, [inter], "visual.mlp.linear_fc1", bias=True)
            r.row("vision", inter, d, "visual.mlp.linear_fc2", bias=True)
            r.params("vision", 4 * d)  # norm1, norm2 (LayerNorm weight + bias)
        m = d * merge * merge
        for k in range(1 + deep):
            r.params("vision", 2 * (d if k == 0 else m))  # merger norm (post-shuffle for deepstack)
            r.column("vision", m, [m], "visual.merger.linear_fc1", bias=True)
            r.row("vision", m, out, "visual.merger.linear_fc2", bias=True)
        r.add("vision", 8192 * ((d // heads) // 2) * 4)  # rotary_pos_emb.cos_sin_cache
    finally:
        r.q = save


def _rope_cache(r: _Rank, c: Mapping[str, Any], head_dim: int) -> None:
    """The attention layers' shared rotary cache (`get_rope`, one per distinct config and
    process): float32 on CUDA, (max_position [* YaRN factor], rotary_dim)."""
    rope = c.get("rope_scaling") or c.get("rope_parameters") or {}
    factor = c.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0) if isinstance(rope, dict) else 1.0)
    rotary = int(head_dim * factor) if factor and factor < 1.0 else head_dim
    positions = int(_get(c, "max_position_embeddings", 2048))
    kind = (rope.get("rope_type") or rope.get("type")) if isinstance(rope, dict) else None
    if kind == "yarn":
        positions = int(positions * float(rope.get("factor", 1.0)))
    r.add("rope_cache", positions * rotary * 4)
    if isinstance(rope, dict) and rope.get("mrope_section"):
        r.add("rope_cache", rotary // 2 * 8)  # MRotaryEmbedding.axis_map (int64 per rotary pair)


def _mamba2_mixer(r: _Rank, *, h: int, heads: int, head_dim: int, groups: int, state: int, conv_k: int,
                  conv_bias: bool, proj_bias: bool, prefix: str, use_norm: bool = True, quant: bool = True):
    inter = heads * head_dim
    if groups % r.tp == 0:
        gss = groups * state
        r.column("mamba", conv_k, [inter, gss, gss], f"{prefix}.conv1d", bias=conv_bias, quant=False)
        r.column("mamba", h, [inter, inter, gss, gss, heads], f"{prefix}.in_proj", bias=proj_bias, quant=quant)
    else:
        if groups != 1:
            raise PlanInputError("server_args.tp_size", f"mamba n_groups={groups} does not split over the TP size {r.tp} and is not 1 (SGLang asserts this)")
        conv_dim = inter + 2 * r.tp * state  # the one group is replicated to every rank
        r.column("mamba", conv_k, [conv_dim], f"{prefix}.conv1d", bias=conv_bias, quant=False)
        r.column("mamba", h, [inter + conv_dim + heads], f"{prefix}.in_proj", bias=proj_bias, quant=quant)
    hp = r._shard(heads, "mamba num_heads")
    r.params("mamba", hp, 4)  # A float32
    r.params("mamba", 2 * hp)  # D, dt_bias
    r.row("mamba", inter, h, f"{prefix}.out_proj", bias=proj_bias, quant=quant)
    if use_norm:
        r.params("mamba", inter // r.tp)


_NEMOTRON_CHARS = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _nemotron_blocks(c: Mapping[str, Any]) -> str:
    """The block letters, from layers_block_type (newer configs) or hybrid_override_pattern."""
    types = c.get("layers_block_type")
    if isinstance(types, list):
        return "".join(_NEMOTRON_CHARS.get(t, "?") for t in types)
    pattern = c.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        raise KeyError("hybrid_override_pattern")
    return pattern


def _walk_nemotron(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = _cfg(lay)
    h = int(c.get("hidden_size", 4096))
    vocab = _vocab(lay)
    blocks = _nemotron_blocks(c)
    tied = bool(_get(c, "tie_word_embeddings", False))
    if first:
        r.vocab("embed", vocab, h, "backbone.embeddings")
    for i in _stage_layers(stage):
        _nemotron_block(r, c, h, blocks[i], f"backbone.layers.{i}.mixer")
        r.params("norms", h)
    if last:
        r.params("norms", h)
        if not (tied and pp == 1):
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)
        if nextn:
            _nemotron_mtp(r, c, h, vocab, nextn)


def _nemotron_mtp(r: _Rank, c: Mapping[str, Any], h: int, vocab: int, nextn: int):
    """NemotronHForCausalLMMTP, built on the last stage when speculative decoding loads the
    checkpoint's MTP: its own embedding and lm_head, then per MTP block eh_proj (2h -> h,
    TP-sharded), enorm / hnorm / final_layernorm and the `mtp_hybrid_override_pattern` layers."""
    pattern = str(_get(c, "mtp_hybrid_override_pattern", "*E"))
    r.vocab("mtp", vocab, h, "mtp.embed_tokens")
    r.vocab("mtp", vocab, h, "mtp.lm_head")
    save = r.groups.copy()
    for k in range(nextn):
        r.column("mtp", 2 * h, [h], f"mtp.layers.{k}.eh_proj", quant=False)
        r.params("mtp", 3 * h)
        for j, b in enumerate(pattern):
            _nemotron_block(r, c, h, b, f"mtp.layers.{k}.{j}.mixer")
            r.params("mtp", h)
    moved = sum(r.groups.values()) - sum(save.values())
    r.groups = save
    r.add("mtp", moved)


def _nemotron_block(r: _Rank, c: Mapping[str, Any], h: int, kind: str, prefix: str):
    if kind == "M":
        _mamba2_mixer(
            r, h=h, heads=int(_get(c, "mamba_num_heads", 128)), head_dim=int(_get(c, "mamba_head_dim", 64)),
            groups=int(_get(c, "n_groups", _get(c, "mamba_n_groups", 8))), state=int(_get(c, "ssm_state_size", 128)),
            conv_k=int(_get(c, "conv_kernel", 4)), conv_bias=bool(_get(c, "use_conv_bias", True)),
            proj_bias=bool(_get(c, "use_bias", False)), prefix=prefix,
        )
    elif kind == "*":
        hd = int(_get(c, "head_dim", h // int(c["num_attention_heads"])))
        heads, kv = int(c["num_attention_heads"]), int(_get(c, "num_key_value_heads", 8))
        r.qkv("attention", h, hd, heads, kv, f"{prefix}.qkv_proj", [f"{prefix}.q_proj", f"{prefix}.k_proj", f"{prefix}.v_proj"])
        r.row("attention", heads * hd, h, f"{prefix}.o_proj")
        r.kv_scales()
    elif kind == "-":
        inter = c["intermediate_size"]
        inter = int(inter[0] if isinstance(inter, list) else inter)
        bias = bool(_get(c, "mlp_bias", False))
        r.column("mlp", h, [inter], f"{prefix}.up_proj", bias=bias)
        r.row("mlp", inter, h, f"{prefix}.down_proj", bias=bias)
    elif kind == "E":
        n = int(c["n_routed_experts"])
        latent = c.get("moe_latent_size")
        moe_h = int(latent) if latent else h
        r.replicated("moe_gate", h, n, f"{prefix}.gate", quant=False)
        r.params("moe_gate", n, 4)  # e_score_correction_bias float32
        r.experts("experts", n, moe_h, int(c["moe_intermediate_size"]), f"{prefix}.experts", gated=False)
        shared = int(_get(c, "n_shared_experts", 0) or 0)
        if shared:
            si = int(c["moe_shared_expert_intermediate_size"]) * shared
            r.column("shared_expert", h, [si], f"{prefix}.shared_experts.up_proj")
            r.row("shared_expert", si, h, f"{prefix}.shared_experts.down_proj")
        if latent:
            bias = bool(_get(c, "mlp_bias", False))
            r.replicated("experts", h, moe_h, f"{prefix}.fc1_latent_proj", bias=bias)
            r.replicated("experts", moe_h, h, f"{prefix}.fc2_latent_proj", bias=bias)
    else:
        raise PlanInputError("model.hf_config.hybrid_override_pattern", f"block {kind!r} has no weights model")


def _walk_falcon(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = _cfg(lay)
    h = int(_get(c, "hidden_size", 4096))
    vocab = _vocab(lay)
    heads = int(_get(c, "num_attention_heads", 32))
    kv = int(_get(c, "num_key_value_heads", heads))
    hd = int(_get(c, "head_dim", h // heads))
    st = lay.state_at(1, "float32", "float32")
    m_heads = int(_get(c, "mamba_n_heads", 128))
    m_inter = st.temporal[0] * st.temporal[1]
    m_hd = m_inter // m_heads
    groups = int(_get(c, "mamba_n_groups", 1))
    state = int(_get(c, "mamba_d_state", 256))
    inter = int(c["intermediate_size"])
    tied = bool(_get(c, "tie_word_embeddings", False))
    # FalconH1ForCausalLM calls lm_head.float(): the head (the embedding itself when tied) is float32.
    r.vocab("embed", vocab, h, "model.embed_tokens", dtype_bytes=4 if tied else None)
    for i in _stage_layers(stage):
        p = f"model.layers.{i}"
        r.qkv("attention", h, hd, heads, kv, f"{p}.self_attn.qkv_proj", [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"])
        r.row("attention", heads * hd, h, f"{p}.self_attn.o_proj")
        _mamba2_mixer(r, h=h, heads=m_heads, head_dim=m_hd, groups=groups, state=state, conv_k=int(_get(c, "mamba_d_conv", 4)),
                      conv_bias=bool(_get(c, "mamba_conv_bias", True)), proj_bias=bool(_get(c, "mamba_proj_bias", False)),
                      prefix=f"{p}.mamba", use_norm=bool(_get(c, "mamba_rms_norm", False)), quant=False)
        _gated_mlp(r, h, inter, f"{p}.feed_forward")
        r.params("norms", 2 * h + 2 * hd)  # input / pre_ff layernorms, q_norm, k_norm
        g_eff = groups if groups % r.tp == 0 else r.tp
        r.params("mamba", (2 * m_inter + 2 * g_eff * state + m_heads) // r.tp)  # mup_vector buffer
    _rope_cache(r, c, hd)
    r.params("norms", h)
    if not tied:
        r.vocab("lm_head", vocab, h, "lm_head", dtype_bytes=4)


def _walk_granite(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = _cfg(lay)
    h = int(_get(c, "hidden_size", 2048))
    vocab = _vocab(lay)
    heads = int(_get(c, "num_attention_heads", 32))
    kv = int(_get(c, "num_key_value_heads", 8))
    hd = h // heads
    full = set(lay.full_attention_layer_ids)
    n_exp = int(_get(c, "num_local_experts", 0))
    shared = int(_get(c, "shared_intermediate_size", 0))
    tied = bool(_get(c, "tie_word_embeddings", True))
    if tied and pp > 1:
        # GraniteMoeHybridForCausalLM ties lm_head.weight to embed_tokens.weight on every rank,
        # and a stage past the first has no embedding: SGLang 0.5.23 fails to build the model.
        raise PlanInputError("server_args.pp_size", "SGLang 0.5.23 cannot build a Granite-4.0-H model with tied embeddings at pp_size > 1 (the last stage ties lm_head to an embedding it does not hold); use pp_size 1")
    if first:
        r.vocab("embed", vocab, h, "model.embed_tokens")
    for i in _stage_layers(stage):
        p = f"model.layers.{i}"
        if i in full:
            r.qkv("attention", h, hd, heads, kv, f"{p}.self_attn.qkv_proj", [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"], bias=bool(_get(c, "attention_bias", False)))
            r.row("attention", heads * hd, h, f"{p}.self_attn.o_proj", bias=bool(_get(c, "attention_bias", False)))
            r.kv_scales()
        else:
            _mamba2_mixer(r, h=h, heads=int(_get(c, "mamba_n_heads", 64)), head_dim=int(_get(c, "mamba_d_head", 64)),
                          groups=int(_get(c, "mamba_n_groups", 1)), state=int(_get(c, "mamba_d_state", 128)),
                          conv_k=int(_get(c, "mamba_d_conv", 4)), conv_bias=bool(_get(c, "mamba_conv_bias", True)),
                          proj_bias=bool(_get(c, "mamba_proj_bias", False)), prefix=f"{p}.mamba")
        if n_exp > 0:
            r.replicated("moe_gate", h, n_exp, f"{p}.block_sparse_moe.router.layer", quant=False)
            r.experts("experts", n_exp, h, int(c["intermediate_size"]), f"{p}.block_sparse_moe.experts")
        if shared:
            r.column("shared_expert", h, [shared, shared], f"{p}.shared_mlp.input_linear")
            r.row("shared_expert", shared, h, f"{p}.shared_mlp.output_linear")
        r.params("norms", 2 * h)
    if last:
        r.params("norms", h)
        if not tied:
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)


def _walk_lfm2(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = _cfg(lay)
    if c.get("model_type") == "lfm2_moe" or c.get("num_experts"):
        raise PlanInputError("model.hf_config.model_type", "LFM2-MoE weights are not modelled yet; give a budget with measured memory instead")
    h = int(_get(c, "hidden_size", 2560))
    vocab = _vocab(lay)
    heads = int(_get(c, "num_attention_heads", 32))
    kv = int(_get(c, "num_key_value_heads", 8))
    hd = h // heads
    inter = int(_get(c, "intermediate_size", 12288))
    if _get(c, "block_auto_adjust_ff_dim", True):
        inter = int(2 * inter / 3)
        mult = c.get("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            inter = int(mult * inter)
        m = int(_get(c, "block_multiple_of", 256))
        inter = m * ((inter + m - 1) // m)
    k = int(_get(c, "conv_L_cache", 3))
    full = set(lay.full_attention_layer_ids)
    r.vocab("embed", vocab, h, "model.embed_tokens")
    for i in _stage_layers(stage):
        p = f"model.layers.{i}"
        if i in full:
            r.qkv("attention", h, hd, heads, kv, f"{p}.self_attn.qkv_proj", [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"])
            r.row("attention", heads * hd, h, f"{p}.self_attn.out_proj")
            r.params("norms", 2 * hd)
        else:
            bias = bool(_get(c, "conv_bias", False))
            r.column("conv", h, [h, h, h], f"{p}.conv.in_proj", bias=bias)
            r.row("conv", h, h, f"{p}.conv.out_proj", bias=bias)
            r.params("conv", (h // r.tp) * k + (h // r.tp if bias else 0))
            r.add("conv", 256 * 4)  # _intermediate_state_indices: int32[256] verify buffer
        if i in full and not any(j in full for j in range(stage.start, i)):
            _rope_cache(r, c, hd)
        r.column("mlp", h, [inter], f"{p}.feed_forward.w1")
        r.column("mlp", h, [inter], f"{p}.feed_forward.w3")
        r.row("mlp", inter, h, f"{p}.feed_forward.w2")
        r.params("norms", 2 * h)
    r.params("norms", h)
    r.vocab("lm_head", vocab, h, "lm_head", quant=True)


def _walk_kimi(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    if lay.hf_config.get("model_type") == "kimi_k3" or lay.architecture.startswith("KimiK3"):
        return _walk_kimi_k3(r, lay, stage, first, last, pp, nextn)
    c = _cfg(lay)
    h = int(_get(c, "hidden_size", 4096))
    vocab = _vocab(lay)
    lac = c["linear_attn_config"]
    kh, kd, ck = int(lac["num_heads"]), int(lac["head_dim"]), int(lac["short_conv_kernel_size"])
    proj = kh * kd
    heads = int(_get(c, "num_attention_heads", 32))
    nope, rope, vdim = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
    rank_kv = int(c["kv_lora_rank"])
    q_rank = c.get("q_lora_rank")
    n_exp = int(_get(c, "num_experts", 0))
    first_dense = int(_get(c, "first_k_dense_replace", 0))
    freq = int(_get(c, "moe_layer_freq", 1))
    shared = c.get("num_shared_experts")
    full = set(lay.full_attention_layer_ids)
    tied = bool(_get(c, "tie_word_embeddings", False))
    if first:
        r.vocab("embed", vocab, h, "model.embed_tokens")
    for i in _stage_layers(stage):
        p = f"model.layers.{i}.self_attn"
        if i in full:  # MLA (estimated: q_proj / kv_a / kv_b / o_proj, kv_a_layernorm)
            if q_rank:
                r.replicated("attention", h, int(q_rank), f"{p}.q_a_proj")
                r.params("attention", int(q_rank))
                r.column("attention", int(q_rank), [heads * (nope + rope)], f"{p}.q_b_proj")
            else:
                r.column("attention", h, [heads * (nope + rope)], f"{p}.q_proj")
            r.replicated("attention", h, rank_kv + rope, f"{p}.kv_a_proj_with_mqa")
            r.params("attention", rank_kv)
            r.column("attention", rank_kv, [heads * (nope + vdim)], f"{p}.kv_b_proj")
            r.row("attention", heads * vdim, h, f"{p}.o_proj")
        else:  # KDA
            r.column("linear_attn", h, [proj, proj, proj, kh], f"{p}.qkvb_proj", [f"{p}.q_proj", f"{p}.k_proj", f"{p}.v_proj", f"{p}.b_proj"])
            r.replicated("linear_attn", h, 2 * kd, f"{p}.fg_a_proj", quant=False)
            r.column("linear_attn", kd, [proj, proj], f"{p}.fg_b_proj", quant=False)
            r.params("linear_attn", proj // r.tp, 4)  # dt_bias float32
            r.add("linear_attn", 3 * (proj // r.tp) * ck * 4)  # qkv_conv1d float32
            r.params("linear_attn", kh // r.tp, 4)  # A_log float32
            r.params("linear_attn", kd)  # o_norm
            r.row("linear_attn", proj, h, f"{p}.o_proj")
        m = f"model.layers.{i}.mlp"
        if n_exp and i >= first_dense and i % freq == 0:
            r.replicated("moe_gate", h, n_exp, f"{m}.gate", quant=False)
            r.params("moe_gate", n_exp)  # e_score_correction_bias: torch.empty, the default dtype
            r.experts("experts", n_exp, h, int(c["moe_intermediate_size"]), f"{m}.experts")
            if shared:
                _gated_mlp(r, h, int(c["moe_intermediate_size"]) * int(shared), f"{m}.shared_experts", "shared_expert")
        else:
            _gated_mlp(r, h, int(c["intermediate_size"]), m)
        r.params("norms", 2 * h)
    if last:
        r.params("norms", h)
        if not (tied and pp == 1):
            r.vocab("lm_head", vocab, h, "lm_head", quant=True)


def _walk_kimi_k3(r: _Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    """KimiK3ForConditionalGeneration (models/kimi_k3.py): KDA with a full-rank gate fused into
    q/k/v (`fused_qkvg_proj`), MLA with a q LoRA (`fused_qkv_a_proj_with_mqa`), latent routed
    experts (replicated routed_expert_down/up_proj around experts of routed_expert_hidden_size)
    and the MoonViT tower with its projector, replicated.
    Under PP (make_pp_layers): the embedding on the first stage, the final norm (and its
    attention-residual read) and lm_head on the last, each stage its own layers; the wrapper
    builds the vision tower and projector on every stage. K3 has no MTP layers."""
    c = _cfg(lay)
    attn_res = bool(c.get("attn_res_block_size"))
    latent_norm = bool(c.get("latent_moe_use_norm"))
    mla_gate = bool(c.get("mla_use_output_gate"))
    h = int(c["hidden_size"])
    vocab = _vocab(lay)
    lac = c["linear_attn_config"]
    kh, kd, ck = int(lac["num_heads"]), int(lac["head_dim"]), int(lac["short_conv_kernel_size"])
    proj = kh * kd
    heads = int(c["num_attention_heads"])
    nope, rope, vdim = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
    q_rank, kv_rank = int(c["q_lora_rank"]), int(c["kv_lora_rank"])
    n_exp, latent = int(c["num_experts"]), int(c["routed_expert_hidden_size"])
    moe_i, shared = int(c["moe_intermediate_size"]), int(_get(c, "num_shared_experts", 0))
    first_dense, freq = int(_get(c, "first_k_dense_replace", 0)), int(_get(c, "moe_layer_freq", 1))
    full = set(lay.full_attention_layer_ids)
    if first:
        r.vocab("embed", vocab, h, "language_model.model.embed_tokens")
    for i in _stage_layers(stage):
        p = f"language_model.model.layers.{i}.self_attn"
        if i in full:
            r.replicated("attention", h, q_rank + kv_rank + rope, f"{p}.fused_qkv_a_proj_with_mqa")
            r.params("norms", q_rank + kv_rank)  # q_a_layernorm, kv_a_layernorm
            r.column("attention", q_rank, [heads * (nope + rope)], f"{p}.q_b_proj")
            r.column("attention", kv_rank, [heads * (nope + vdim)], f"{p}.kv_b_proj")
            r.row("attention", heads * vdim, h, f"{p}.o_proj")
            if mla_gate:
                r.column("attention", h, [heads * vdim], f"{p}.g_proj")
        else:
            r.column("linear_attn", h, [proj, proj, proj, proj], f"{p}.fused_qkvg_proj")
            r.column("linear_attn", h, [kh], f"{p}.b_proj")
            r.replicated("linear_attn", h, kd, f"{p}.f_a_proj")
            r.column("linear_attn", kd, [proj], f"{p}.f_b_proj")
            r.params("linear_attn", r._shard(proj, "KDA num_heads*head_dim"), 4)  # dt_bias float32
            r.add("linear_attn", 3 * (proj // r.tp) * ck * 4)  # qkv_conv1d float32
            r.params("linear_attn", kh // r.tp, 4)  # A_log float32
            r.params("linear_attn", kd)  # o_norm
            r.row("linear_attn", proj, h, f"{p}.o_proj")
        m = f"language_model.model.layers.{i}.mlp"
        if i >= first_dense and i % freq == 0:
            r.replicated("moe_gate", h, n_exp, f"{m}.gate", quant=False)
            r.params("moe_gate", n_exp, 4)  # e_score_correction_bias float32
            # The latent projections take the quant config only if it says it supports them
            # (supports_kimi_k3_quantized_latent_projections); none modelled here does.
            r.replicated("experts", h, latent, f"{m}.routed_expert_down_proj", quant=False)
            r.experts("experts", n_exp, latent, moe_i, f"{m}.experts")
            r.replicated("experts", latent, h, f"{m}.routed_expert_up_proj", quant=False)
            if latent_norm:
                r.params("norms", latent)  # routed_expert_norm
            if shared:
                _gated_mlp(r, h, moe_i * shared, f"{m}.shared_experts", "shared_expert")
        else:
            _gated_mlp(r, h, int(c["intermediate_size"]), m)
        r.params("norms", (2 + (4 if attn_res else 0)) * h)  # + attention-residual norms / projections
    if last:  # norm, + output_attn_res_norm / output_attn_res_proj; K3 never ties lm_head
        r.params("norms", (1 + (2 if attn_res else 0)) * h)
        r.vocab("lm_head", vocab, h, "language_model.lm_head", quant=True)
    vc = lay.hf_config.get("vision_config") or {}
    d = int(_get(vc, "vt_hidden_size", 1024))
    qkv = int(_get(vc, "qkv_hidden_size", 1536))
    vi = int(_get(vc, "vt_intermediate_size", 4096))
    patch = int(_get(vc, "patch_size", 14))
    mk = _get(vc, "merge_kernel_size", [2, 2])
    mm = d * int(mk[0]) * int(mk[1])
    for _ in range(int(_get(vc, "vt_num_hidden_layers", 27))):  # MoonViT blocks (replicated)
        r.params("vision", d * 3 * qkv + qkv * d + 2 * d * vi + 2 * d)
    r.params("vision", d + 3 * patch * patch * d + int(_get(vc, "init_pos_emb_height", 64)) * int(_get(vc, "init_pos_emb_width", 64)) * d)
    r.params("vision", int(_get(vc, "init_pos_emb_time", 4)) * d, 4)  # temporal position embedding, float32
    r.params("vision", mm * mm + mm * h + h)  # mm_projector: proj.0, proj.2, post_norm


_WALKERS = {
    "qwen3_next": _walk_qwen,
    "qwen3_5": _walk_qwen,
    "nemotron_h": _walk_nemotron,
    "falcon_h1": _walk_falcon,
    "granitemoehybrid": _walk_granite,
    "lfm2": _walk_lfm2,
    "kimi_linear": _walk_kimi,
}


# --------------------------------------------------------------------------- entry points


def stage_weight_breakdown(layout: ModelLayout, *, tp_size: int, pp_size: int, ep_size: int,
                           stages: Sequence[StageRange], load_nextn: bool,
                           draft_num_layers: int | None = None) -> tuple[StageWeights, ...]:
    """Per PP stage, the largest TP rank's weight bytes by parameter group."""
    walker = _WALKERS.get(layout.family)
    if walker is None or not layout.hf_text_config:
        raise PlanInputError(
            "model.hf_config",
            f"weights cannot be derived for this model form (family {layout.family!r}): give the model as a preset or its "
            "config.json (model.hf_config), or give a budget with measured memory",
        )
    if tp_size < 1 or pp_size < 1 or ep_size < 1 or tp_size % ep_size:
        raise PlanInputError("server_args.ep_size", f"ep_size={ep_size} must divide tp_size={tp_size}")
    if len(stages) != pp_size:
        raise PlanInputError("server_args.pp_size", f"{len(stages)} stages given for pp_size={pp_size}")
    if pp_size > 1 and not layout.pp_supported:
        raise PlanInputError("server_args.pp_size", f"SGLang 0.5.23 builds {layout.architecture} on a single pipeline stage only (it asserts pp_size == 1); use pp_size 1")
    dtype = layout.hf_text_config.get("torch_dtype") or layout.hf_text_config.get("dtype") or layout.hf_config.get("torch_dtype") or layout.hf_config.get("dtype") or "bfloat16"
    # SGLang loads float32 checkpoints in bfloat16 (dtype=auto), as it does float16 ones in float16.
    act = DTYPE_BYTES.get(str(dtype), 2)
    act = 2 if act == 4 else act
    path = "model.hf_config"
    quant = _quant_scheme(layout.hf_config, layout.hf_text_config, act, path)
    nextn = layout.num_nextn_predict_layers or int(layout.hf_text_config.get("mtp_num_hidden_layers") or 0)
    nextn = (draft_num_layers if draft_num_layers is not None else nextn) if load_nextn else 0
    out = []
    for s in stages:
        r = _Rank(tp_size, ep_size, act, quant)
        try:
            walker(r, layout, s, s.pp_rank == 0, s.pp_rank == pp_size - 1, pp_size, nextn)
        except PlanInputError:  # already names its field (and is a ValueError)
            raise
        except KeyError as e:  # a key the model class needs and has no default for
            raise PlanInputError(f"{path}.{e.args[0]}", "is needed to derive the weights (SGLang's config class has no default); add it from the checkpoint's config.json") from None
        except (TypeError, ValueError, ZeroDivisionError) as e:
            raise PlanInputError(path, f"a value the weights are derived from is malformed ({e}); check the config.json"[:300]) from None
        groups = tuple(sorted(r.groups.items()))
        out.append(StageWeights(s.pp_rank, sum(r.groups.values()), groups))
    return tuple(out)


def stage_weight_bytes(layout: ModelLayout, *, tp_size: int, pp_size: int, ep_size: int,
                       stages: Sequence[StageRange], load_nextn: bool,
                       draft_num_layers: int | None = None) -> tuple[int, ...]:
    """Per PP stage (same order as `stages`, from service/solver/stages.py pp_stages), the
    parameter bytes SGLang 0.5.23 allocates on that stage's largest TP rank."""
    return tuple(
        s.total_bytes
        for s in stage_weight_breakdown(
            layout, tp_size=tp_size, pp_size=pp_size, ep_size=ep_size, stages=stages,
            load_nextn=load_nextn, draft_num_layers=draft_num_layers,
        )
    )
