"""Launch-flag resolution: the values SGLang 0.5.23 fixes while resolving ServerArgs,
before sizing runs (arg_groups/: memory_hook, overrides, speculative_hook).

Operators pass flags, not resolved values; this module turns the former into the latter:
the `auto` radix strategy, PP turning overlap off (after the strategy resolved), the
speculative defaults, the page size, the SSM/conv dtypes and the automatic
mem_fraction_static from a GPU capacity. Flags SGLang refuses at launch become
`rejections` (the plan is then not startable), never silently sized.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from schemas.request import Env, ServerArgs
from service.solver.errors import PlanInputError
from service.solver.layout import ModelLayout

DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9
SPEC_DEFAULT_MAX_RUNNING_REQUESTS = 48
# (num_steps, eagle_topk, num_draft_tokens) SGLang picks for these archs when unset.
SPEC_DEFAULT_PARAMS = (3, 1, 4)
EAGLE_FAMILY = {"EAGLE", "EAGLE3", "NEXTN"}
KV_ITEMSIZE = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1}

# Archs that get the mamba radix-cache resolution, and those that support the extra buffer.
RADIX_FAMILIES = {"qwen3_next", "qwen3_5", "kimi_linear", "nemotron_h", "falcon_h1", "granitemoehybrid", "lfm2"}
EXTRA_BUFFER_FAMILIES = RADIX_FAMILIES - {"lfm2"}


@dataclass(frozen=True)
class Rejection:
    exception: str
    message: str


@dataclass(frozen=True)
class Launch:
    tp_size: int
    pp_size: int
    attn_dp_size: int
    attn_tp_size: int
    page_size: int
    kv_cache_dtype: str
    kv_itemsize: int
    mem_fraction_static: Optional[float]
    mamba_full_memory_ratio: float
    strategy: str
    extra_buffer: bool
    extra_buffer_lazy: bool
    disable_radix_cache: bool
    disable_overlap_schedule: bool
    max_running_requests: Optional[int]
    user_set_max_running_requests: bool
    max_mamba_cache_size: Optional[int]
    max_total_tokens: Optional[int]
    speculative_algorithm: Optional[str]
    num_draft_tokens: Optional[int]
    replayssm_spec: bool
    replayssm_cache_len: int
    context_len: int
    conv_dtype: str
    ssm_dtype: str
    draft_kv_layers: int
    prices_draft_kv: bool
    skip_decode_lock: bool
    pp_max_micro_batch_size: Optional[int]
    rejections: list[Rejection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _kv_dtype(args: ServerArgs, layout: ModelLayout) -> str:
    if args.kv_cache_dtype == "auto":
        return layout.model_dtype
    return {"bf16": "bfloat16", "fp16": "float16"}.get(args.kv_cache_dtype, args.kv_cache_dtype)


def auto_mem_fraction_static(layout: ModelLayout, args: ServerArgs, gpu_mib: int, page_size: int) -> float:
    """`memory_hook.handle_gpu_memory_settings` for a CUDA Hopper GPU (SIZING_SPEC §2.1.1, §8.1)."""
    tp, pp = args.tp_size, args.pp_size
    if gpu_mib < 20 * 1024:
        chunked, max_bs = 2048, 8
    elif gpu_mib < 35 * 1024:
        chunked, max_bs = 4096, (48 if tp < 4 else 160)
    elif gpu_mib < 60 * 1024:
        chunked, max_bs = 4096, (32 if tp < 4 else 160)
    elif gpu_mib < 160 * 1024:
        chunked, max_bs = 8192, (256 if tp < 4 else 512)
    else:
        chunked, max_bs = 16384, 512
    if args.chunked_prefill_size is not None:
        chunked = args.chunked_prefill_size
    if args.cuda_graph_max_bs is not None:
        max_bs = args.cuda_graph_max_bs
    elif args.max_running_requests is not None and args.max_running_requests < max_bs:
        max_bs = args.max_running_requests
    is_mla = layout.kv.kind == "mla"
    # The breakable prefill graph is off for PP > 1, KDA models and multimodal models.
    prefill_graph = not (pp > 1 or layout.linear_kind == "kda" or layout.is_multimodal or args.disable_cuda_graph)
    decode_graph = not args.disable_cuda_graph
    activation_tokens = max(chunked, 2048) if chunked > 0 else 2048
    graph_reserve = 0.0
    if decode_graph:
        graph_reserve += 2 * max_bs
    if args.attn_dp_size > 1:
        graph_reserve += 3 * max_bs * args.attn_dp_size
        if max_bs > 300:
            graph_reserve += 1.5 * max_bs * args.attn_dp_size
    if prefill_graph:
        if is_mla:
            graph_reserve += 1536
        else:
            max_bs_prefill = chunked if not is_mla else min(8192, chunked)
            if pp > 1:
                max_bs_prefill = min(max_bs_prefill, 8192)
            if args.max_total_tokens is not None:
                max_bs_prefill = min(max_bs_prefill, args.max_total_tokens)
            graph_reserve += 8 * len(_prefill_graph_sizes(max_bs_prefill))
    reserved = 512 + 1.5 * activation_tokens + tp * pp / 8 * 1024 + graph_reserve
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10240)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def _prefill_graph_sizes(limit: int) -> list[int]:
    sizes = list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
    sizes += list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, limit + 1, 512))
    return [s for s in sizes if s <= limit]


def resolve(layout: ModelLayout, args: ServerArgs, env: Env, gpu_memory_mib: Optional[int], draft_layers: Optional[int], needs_mfs: bool) -> Launch:
    rejections: list[Rejection] = []
    warnings: list[str] = []
    tp, pp, dp = args.tp_size, args.pp_size, args.attn_dp_size
    if tp % dp != 0:
        raise PlanInputError("server_args.attn_dp_size", f"must divide tp_size={tp} (attention TP = tp_size // attn_dp_size)")
    attn_tp = tp // dp
    if pp > 1 and not layout.pp_supported:
        raise PlanInputError(
            "server_args.pp_size",
            f"{layout.family} does not support pipeline parallelism in SGLang 0.5.23 (the model asserts pp_size == 1); use pp_size 1",
            allowed=["1"],
        )
    page = args.page_size or 1

    # Radix strategy: resolved while overlap is still what the user asked for; PP turns
    # overlap off only afterwards (SIZING_SPEC §2.1.2 ordering trap).
    disable_overlap = args.disable_overlap_schedule
    strategy = args.mamba_radix_cache_strategy
    if layout.family in RADIX_FAMILIES and not args.disable_radix_cache:
        supports_extra = layout.family in EXTRA_BUFFER_FAMILIES
        if strategy == "auto":
            strategy = "extra_buffer" if ((not disable_overlap or page > 1) and supports_extra) else "no_buffer"
        if strategy in ("extra_buffer", "extra_buffer_lazy") and not supports_extra:
            rejections.append(Rejection("AssertionError", f"extra_buffer is not supported for {layout.architecture}; use no_buffer."))
        if strategy == "no_buffer":
            disable_overlap = True
            if page > 1:
                rejections.append(Rejection("AssertionError", f"--mamba-radix-cache-strategy no_buffer requires --page-size 1 (got {page})"))
    if pp > 1:
        disable_overlap = True
    extra_buffer = not args.disable_radix_cache and strategy in ("extra_buffer", "extra_buffer_lazy")
    lazy = not args.disable_radix_cache and strategy == "extra_buffer_lazy"

    spec = args.speculative_algorithm
    mrr = args.max_running_requests
    num_draft = args.speculative_num_draft_tokens
    if spec is not None:
        if mrr is None:
            mrr = SPEC_DEFAULT_MAX_RUNNING_REQUESTS
        if num_draft is None:
            num_draft = SPEC_DEFAULT_PARAMS[2]
    prices_draft = spec in EAGLE_FAMILY or spec == "STANDALONE"
    draft_kv_layers = draft_layers if draft_layers is not None else layout.num_nextn_predict_layers

    context_len = layout.derived_context_len
    if args.context_length is not None:
        if args.context_length > context_len:
            rejections.append(Rejection(
                "ValueError",
                f"User-specified context_length ({args.context_length}) is greater than the derived context_length ({context_len}). "
                "To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
            ))
        else:
            context_len = args.context_length

    # --mamba-ssm-dtype sets SGLANG_MAMBA_SSM_DTYPE, which beats the config's own value.
    ssm_dtype = args.mamba_ssm_dtype or env.SGLANG_MAMBA_SSM_DTYPE or layout.config_ssm_dtype or "float32"
    conv_dtype = env.SGLANG_MAMBA_CONV_DTYPE or "bfloat16"

    kv_dtype = _kv_dtype(args, layout)
    mfs = args.mem_fraction_static
    if mfs is None and needs_mfs:
        if gpu_memory_mib is None:
            raise PlanInputError(
                "budget.gpu_memory_mib",
                "is needed to derive SGLang's automatic mem_fraction_static; give it, or set server_args.mem_fraction_static",
            )
        mfs = auto_mem_fraction_static(layout, args, gpu_memory_mib, page)

    if args.enable_linear_replayssm_spec and spec is None:
        rejections.append(Rejection("ValueError", "--enable-linear-replayssm-spec requires --speculative-algorithm"))

    return Launch(
        tp_size=tp, pp_size=pp, attn_dp_size=dp, attn_tp_size=attn_tp, page_size=page,
        kv_cache_dtype=kv_dtype, kv_itemsize=KV_ITEMSIZE[kv_dtype], mem_fraction_static=mfs,
        mamba_full_memory_ratio=args.mamba_full_memory_ratio if args.mamba_full_memory_ratio is not None else DEFAULT_MAMBA_FULL_MEMORY_RATIO,
        strategy=strategy, extra_buffer=extra_buffer, extra_buffer_lazy=lazy,
        disable_radix_cache=args.disable_radix_cache, disable_overlap_schedule=disable_overlap,
        max_running_requests=mrr, user_set_max_running_requests=args.max_running_requests is not None,
        max_mamba_cache_size=args.max_mamba_cache_size, max_total_tokens=args.max_total_tokens,
        speculative_algorithm=spec, num_draft_tokens=num_draft,
        replayssm_spec=args.enable_linear_replayssm_spec, replayssm_cache_len=args.linear_replayssm_cache_len,
        context_len=context_len, conv_dtype=conv_dtype, ssm_dtype=ssm_dtype,
        draft_kv_layers=draft_kv_layers if prices_draft else 0, prices_draft_kv=prices_draft,
        skip_decode_lock=env.SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK,
        pp_max_micro_batch_size=args.pp_max_micro_batch_size,
        rejections=rejections, warnings=warnings,
    )
