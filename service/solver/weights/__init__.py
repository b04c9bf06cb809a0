"""Weight bytes per pipeline stage, on the stage's largest TP rank, as SGLang 0.5.23 allocates
them when it loads a hybrid model (what its `Load weight end ... mem usage` line measures).

Pure: stdlib and our own modules only. The numbers come from walking the model the way
SGLang's model class builds it (`sglang/srt/models/<family>.py`; one walker per family in
families/, on the shared Rank in rank.py and the blocks in blocks.py):

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
* quantization from `quantization_config` (`quant.quant_scheme`; one module per scheme in
  quant/), as each quant method's
  `create_weights` shapes its parameters, with the config's ignore / exclude lists matched on
  module-path boundaries like SGLang's `is_layer_skipped` (fused layers need all shards to agree);
* MTP drafts (`load_nextn`): the draft model speculative decoding builds from the checkpoint,
  counted on the last stage (its own embedding and lm_head, its MTP layers).

Exact (byte for byte against SGLang's own model classes built on the `meta` device,
tests/conformance/test_weights_conformance.py and test_checkpoint_conformance.py): Nemotron-H
(dense, MoE, latent MoE), Qwen3-Next, Qwen3.5 dense and MoE with the vision tower, Falcon-H1,
Granite-4.0-H, LFM2 (with its config-key aliases), Kimi-Linear, Kimi-K3 with its vision tower
(pp 1 to 8), in bf16; fp8 block-wise and per-tensor; ModelOpt FP8 and NVFP4 in the flat
(config.json) and nested (hf_quant_config.json) forms, with glob exclude lists; ModelOpt
MIXED_PRECISION (FP8 + W4A16_NVFP4); compressed-tensors int4 pack-quantized and MXFP4 MoE
(Kimi-K3 as shipped); AWQ / GPTQ int4 linear layers and GPTQ-Marlin / AWQ (gated) MoE experts;
compressed-tensors fp8 (tensor, channel) linear layers and experts; compressed-tensors NVFP4
(nvfp4-pack-quantized) linear layers; every shipped quantized checkpoint at
tp 1/2/4/8 and pp 2; the Nemotron-3 and Qwen3.5 MTP drafts in bf16, and the Nemotron-3
Super / Ultra MTP drafts under ModelOpt FP8 as shipped.

Estimated: AWQ on non-gated (relu2) experts (3.4% under on Nemotron-3 Nano), compressed-tensors
fp8 block-wise, MXFP4 linear layers / MXFP4 MoE
backend paddings, MTP drafts under other quant methods, a `draft_num_layers` that is not the checkpoint's MTP (a draft checkpoint of its own is draft.py's); anything a load
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
from collections.abc import Sequence
from typing import Any

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights.common import DTYPE_BYTES, StageWeights, pad_vocab
from mambasizer.service.solver.weights.families import WALKERS
from mambasizer.service.solver.weights.quant import quant_scheme
from mambasizer.service.solver.weights.rank import Rank

__all__ = ['DTYPE_BYTES', 'StageWeights', 'pad_vocab', 'stage_weight_breakdown', 'stage_weight_bytes']


def stage_weight_breakdown(layout: ModelLayout, *, tp_size: int, pp_size: int, ep_size: int,
                           stages: Sequence[StageRange], load_nextn: bool,
                           draft_num_layers: int | None = None) -> tuple[StageWeights, ...]:
    """Per PP stage, the largest TP rank's weight bytes by parameter group."""
    walker = WALKERS.get(layout.family)
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
    nextn = layout.num_nextn_predict_layers or int(layout.hf_text_config.get("mtp_num_hidden_layers") or 0)
    nextn = (draft_num_layers if draft_num_layers is not None else nextn) if load_nextn else 0

    def walk(tp: int, ep: int) -> tuple[list[StageWeights], Any]:
        quant = quant_scheme(layout.hf_config, layout.hf_text_config, act, path)
        out = []
        for s in stages:
            r = Rank(tp, ep, act, quant)
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
        return out, quant

    out, quant = walk(tp_size, ep_size)
    unfit = getattr(quant, "unfit", None)
    if unfit:
        raise _block_fp8_refusal(layout, quant, unfit, tp_size, ep_size, walk)
    return tuple(out)


# The TP sizes a block-fp8 refusal tries before it offers one (each walked in full).
_BLOCK_FIT_TP_SIZES = (1, 2, 4, 8, 16, 32, 64)


def _shard_suffix(name: str) -> str:
    """'model.layers.3.linear_attn.in_proj_b' -> 'linear_attn.in_proj_b': the module path below
    the layer index, which an ignore entry matches in every layer (on dotted boundaries)."""
    m = re.match(r"^.*?\.layers\.\d+\.(.+)$", name)
    return m.group(1) if m else name


def _block_fp8_refusal(layout: ModelLayout, quant: Any, unfit: dict, tp_size: int, ep_size: int, walk: Any) -> PlanInputError:
    """SGLang's Fp8LinearMethod refuses a layer whose TP shards do not fill whole blocks
    (validate_block_quant_shapes). Names every such layer's shards (a fused layer's shards
    must all be listed: SGLang requires them to agree), the key that keeps them unquantized,
    and a TP size only when one passes the same check for the whole model."""
    shards: list[str] = []
    for parts in unfit:
        for p in parts:
            suffix = _shard_suffix(p)
            if suffix not in shards:
                shards.append(suffix)
    (first, why), more = next(iter(unfit.items())), len(unfit) - 1
    raw = layout.hf_config.get("quantization_config")
    qc: dict = raw if isinstance(raw, dict) else {}
    # Fp8Config.from_config reads the first of these keys the config has.
    key = "ignored_layers" if "ignored_layers" in qc else "modules_to_not_convert"
    fits = []
    for tp in _BLOCK_FIT_TP_SIZES:
        if tp == tp_size:
            continue
        ep = ep_size if tp % ep_size == 0 else 1
        try:
            _, q = walk(tp, ep)
        except PlanInputError:  # TP does not divide the heads / experts there, etc.
            continue
        if not q.unfit:
            fits.append(str(tp))
    bn, bk = quant.block
    listed = ", ".join(f'"{s}"' for s in shards)
    tp_hint = (f"; or use tp_size {' or '.join(fits)}, where every shard fills whole blocks" if fits else
               f"; no tp_size in {', '.join(map(str, _BLOCK_FIT_TP_SIZES))} fills them (a fused layer's shards are checked at every TP size)")
    return PlanInputError(
        "model.hf_config.quantization_config.weight_block_size",
        f"{', '.join(first)}: {why}" + (f" (and {more} more layer(s))" if more else "")
        + f"; SGLang refuses to load this block-fp8 checkpoint ([{bn}, {bk}] blocks) at tp_size {tp_size}. "
        f"Keep these shards unquantized by listing every one in quantization_config.{key}: [{listed}] "
        "(SGLang requires all shards of a fused layer to have the same precision)" + tp_hint,
    )


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
