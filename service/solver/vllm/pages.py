"""Per-layer pages of vLLM's one block pool, and the hybrid block-size alignment.

* `state_dtypes`: the mamba state dtypes after the per-architecture config hooks
  (`model_executor/models/config.py`: NemotronH's default float32 SSM state, Qwen3.5's
  `mamba_ssm_dtype`) and `MambaStateDtypeCalculator` (conv = --mamba-cache-dtype or the model
  dtype; SSM = --mamba-ssm-cache-dtype, else the conv dtype).
* `mamba_page_bytes`: `MambaSpec.page_size_bytes` of one layer before padding: the conv state
  (kernel - 1 + speculative tokens rows) plus the temporal state, from the family adapter's
  per-rank shapes.
* `attention_page_bytes_per_token`: `FullAttentionSpec(block_size=1).page_size_bytes`.
* `align_block_size`: `Platform._align_hybrid_block_size` (platforms/interface.py): the
  attention block is raised until one attention page holds a mamba page; the mamba page is
  padded up to exactly that page.
"""

from __future__ import annotations

from math import lcm, prod
from typing import NamedTuple

from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.specs import DTYPE_BYTES
from mambasizer.service.solver.vllm.flags import KV_DTYPES, MODEL_DTYPES, VllmArgs

# FlashAttention (FA2/FA3, SM80-SM120) accepts any multiple of 16 tokens per kernel block;
# MLA kernels need manager blocks that are multiples of 128 (MLA hybrids are refused here).
KERNEL_BLOCK = 16
# FlashInfer's GDN prefill emits checkpoints on a 64-token grid (qwen_gdn_linear_attn.py).
GDN_FLASHINFER_ALIGNMENT = 64
GDN_FAMILIES = frozenset({"qwen3_next", "qwen3_5"})


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class StateDtypes(NamedTuple):
    conv: str
    ssm: str
    reason: str


def model_dtype(layout: ModelLayout, args: VllmArgs) -> str:
    return MODEL_DTYPES[args.dtype] or layout.model_dtype


def state_dtypes(layout: ModelLayout, args: VllmArgs) -> StateDtypes:
    mdt = model_dtype(layout, args)
    conv = mdt if args.mamba_cache_dtype == "auto" else args.mamba_cache_dtype
    ssm_flag = args.mamba_ssm_cache_dtype
    reason = "--mamba-ssm-cache-dtype" if ssm_flag != "auto" else ""
    if ssm_flag == "auto" and layout.family == "nemotron_h":
        ssm_flag = str(layout.hf_config.get("mamba_ssm_cache_dtype", "float32"))
        reason = "NemotronH's config hook (the HF config's mamba_ssm_cache_dtype, default float32)"
    elif ssm_flag == "auto" and layout.family == "qwen3_5":
        cfg_dtype = layout.hf_text_config.get("mamba_ssm_dtype")
        if isinstance(cfg_dtype, str):
            ssm_flag = cfg_dtype
            reason = "Qwen3.5's config hook (the HF text config's mamba_ssm_dtype)"
    if ssm_flag == "auto":
        return StateDtypes(conv, conv, reason or "the conv state's dtype (no hook, no flag)")
    return StateDtypes(conv, ssm_flag, reason)


def kv_itemsize(layout: ModelLayout, args: VllmArgs) -> int:
    size = KV_DTYPES[args.kv_cache_dtype]
    return size if size is not None else DTYPE_BYTES[model_dtype(layout, args)]


def attention_page_bytes_per_token(layout: ModelLayout, args: VllmArgs) -> int:
    """K and V of one token in one attention layer on one TP rank (KV heads replicated when
    TP exceeds them: `max(1, heads // tp)`)."""
    return layout.kv.cell_bytes(1, kv_itemsize(layout, args), args.tp_size)


def mamba_page_bytes(layout: ModelLayout, args: VllmArgs, dtypes: StateDtypes) -> int:
    """One mamba layer's state on one TP rank: conv rows (kernel - 1 + speculative tokens)
    plus the temporal state."""
    spec = layout.state_at(args.tp_size, dtypes.conv, dtypes.ssm)
    conv = 0
    for dim, rows in spec.conv_shapes:
        conv += (rows + args.num_speculative_tokens) * dim
    return conv * DTYPE_BYTES[dtypes.conv] + prod(spec.temporal) * DTYPE_BYTES[dtypes.ssm]


class Alignment(NamedTuple):
    block_size: int
    mamba_page_bytes: int
    page_bytes: int  # attention page = padded mamba page
    padding_pct: float  # as vLLM logs it ("Padding mamba page size by X%")
    alignment: int  # the token multiple the block was raised on


def align_block_size(attn_1tok: int, mamba_page: int, block_size: int, checkpoint_alignment: int | None) -> Alignment:
    """`_align_hybrid_block_size`: `checkpoint_alignment` is the mamba layers' prefill
    checkpoint grid in align mode (64 for FlashInfer GDN, 1 for Mamba2), None otherwise."""
    align = max(KERNEL_BLOCK, block_size)
    if checkpoint_alignment:
        align = lcm(align, checkpoint_alignment)
    raised = align * _cdiv(mamba_page, align * attn_1tok)
    raised = KERNEL_BLOCK * _cdiv(raised, KERNEL_BLOCK)
    block = max(block_size, raised)
    page = block * attn_1tok
    pct = 100 * (page - mamba_page) / mamba_page if mamba_page else 0.0
    return Alignment(block, mamba_page, page, pct, align)
