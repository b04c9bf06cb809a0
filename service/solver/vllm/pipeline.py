"""plan_vllm(request, layout) -> VllmPlan: vLLM's start-up sizing of one hybrid deployment.

    flags + release profile + config hooks       (flags.py, profiles.py, pages.state_dtypes)
 1  pages: attention per token, mamba state      (pages.py)
 2  block-size alignment, mamba padding          (pages.align_block_size)
 3  KV-cache groups over the whole model          (pool.group_layers)
 4  per PP stage: bytes per block, num_blocks     (pool.stage_bytes_per_block)
 5  one-request check per worker, minimum over workers
 6  capacity line (worker 0's groups), blocks per request
 7  the max_num_seqs start-up check (FULL CUDA graphs)

Input: the measured "Available KV cache memory" per worker (budget.kv_cache_memory_gib), or
--kv-cache-memory-bytes, or --num-gpu-blocks-override. Pure: no I/O, no torch.
"""

from __future__ import annotations

from mambasizer.schemas.request import PlanRequest, ServerArgs
from mambasizer.schemas.vllm_plan import VllmError, VllmGroup, VllmPlan, VllmResolved, VllmStage
from mambasizer.service.solver import gpu_budget, stages
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.vllm import pages, pool
from mambasizer.service.solver.vllm.flags import VllmArgs, parse_vllm_args
from mambasizer.service.solver.vllm.profiles import PROFILES, VllmProfile

GIB = 1 << 30
MAMBA2_FAMILIES = frozenset({"nemotron_h", "falcon_h1", "granitemoehybrid"})
# Families vLLM sizes through this path (the architectures each release's registry loads).
SIZED_FAMILIES = pages.GDN_FAMILIES | MAMBA2_FAMILIES | {"lfm2"}
MAX_NUM_SEQS_ERROR = (
    "max_num_seqs ({n}) exceeds available Mamba cache blocks ({b}). Each decode sequence requires one Mamba cache "
    "block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most {b} or increase gpu_memory_utilization."
)


def _check_request(req: PlanRequest, layout: ModelLayout) -> VllmArgs:
    if req.server_args != ServerArgs():
        raise PlanInputError("server_args", "engine \"vllm\" takes its flags in vllm_args (the `vllm serve` flags as typed), not SGLang's server_args")
    if req.draft_model is not None:
        raise PlanInputError("draft_model", "engine \"vllm\" sizes MTP through --speculative-config in vllm_args; draft models are not modelled")
    if layout.family not in SIZED_FAMILIES:
        reason = "its MLA attention and KDA layers take vLLM's MLA/packed paths, which are not modelled here" if layout.family == "kimi_linear" else "its family is not modelled for vLLM"
        raise PlanInputError("model", f"{layout.architecture} ({layout.family}) cannot be sized for vLLM: {reason}", sorted(SIZED_FAMILIES))
    if not layout.full_attention_layer_ids or not layout.mamba_layer_ids:
        raise PlanInputError("model", "vLLM's hybrid path needs both attention and mamba layers; this layout has only one kind")
    args = parse_vllm_args(req.vllm_args or [])
    if args.num_speculative_tokens and layout.family not in pages.GDN_FAMILIES:
        raise PlanInputError("vllm_args.--speculative-config", f"MTP is sized for the Qwen GDN families only, not {layout.family}")
    if args.pp_size > layout.num_hidden_layers:
        raise PlanInputError("vllm_args.--pipeline-parallel-size", f"is {args.pp_size}, more than the model's {layout.num_hidden_layers} layers")
    return args


def _available(req: PlanRequest, args: VllmArgs, pp: int) -> list[int] | None:
    """Bytes per PP stage, or None with --num-gpu-blocks-override alone."""
    gib = req.budget.kv_cache_memory_gib
    if args.kv_cache_memory_bytes is not None:
        if gib is not None:
            raise PlanInputError("budget.kv_cache_memory_gib", "give the KV cache memory once: --kv-cache-memory-bytes in vllm_args fixes it, or the logged figure here")
        return [args.kv_cache_memory_bytes] * pp
    if gib is None:
        if args.num_gpu_blocks_override is not None:
            return None
        raise PlanInputError(
            "budget.kv_cache_memory_gib",
            "engine \"vllm\" needs the measured figure: the \"Available KV cache memory: X GiB\" vLLM logs per worker "
            "(or --kv-cache-memory-bytes / --num-gpu-blocks-override in vllm_args); the estimate from the GPU alone is not built for vLLM",
        )
    values = [gib] * pp if isinstance(gib, float | int) else list(gib)
    if len(values) != pp:
        raise PlanInputError("budget.kv_cache_memory_gib", f"has {len(values)} figures; give one, or one per PP stage ({pp})")
    return [round(v * GIB) for v in values]


def _device_defaults(req: PlanRequest) -> tuple[int, str, int, bool]:
    """(max_num_seqs default, its reason, SM, FlashInfer GDN prefill) for the request's device:
    `EngineArgs.get_batch_defaults` (1024 on parts with >= 70 GiB that are not an A100 or a
    GB10, else 256) and `_resolve_gdn_prefill_backend` (FlashInfer on SM90, and on SM10x/12x
    with CUDA 13, which the 0.33+ CUDA wheels are built with)."""
    gpu = gpu_budget.named_gpu(req)
    if gpu is None:
        return 1024, "vLLM's default on an H100/H200-class GPU (budget.gpu unset)", 90, True
    plat = gpu_budget.platform_of(req)
    mib = req.budget.gpu_memory_mib or gpu.memory_mib or 0
    gib = mib / 1024
    big = gib >= 160 or (gib >= 70 and "a100" not in gpu.product.lower() and gpu.capability != (12, 1))
    n = 1024 if big else 256
    sm = plat.device_sm
    flashinfer = not plat.is_hip and (sm == 90 or sm >= 100)
    return n, f"vLLM's default on {gpu.name} ({gib:.0f} GiB)", sm, flashinfer


def plan_vllm(req: PlanRequest, layout: ModelLayout) -> VllmPlan:
    args = _check_request(req, layout)
    profile: VllmProfile = PROFILES[req.vllm_version]
    warnings: list[str] = []
    pp, tp = args.pp_size, args.tp_size
    default_seqs, seqs_reason, _sm, flashinfer_gdn = _device_defaults(req)
    max_num_seqs = args.max_num_seqs or default_seqs
    if args.max_num_seqs:
        seqs_reason = "--max-num-seqs"
    max_model_len = args.max_model_len or layout.derived_context_len
    prefix = profile.prefix_caching_default if args.enable_prefix_caching is None else args.enable_prefix_caching
    align = prefix
    requested_block = args.block_size or profile.default_block_size
    extensible = profile.extensible_kv_cache_default and args.kv_cache_memory_bytes is None and args.num_gpu_blocks_override is None

    # Prefill checkpoints (align mode): Mamba2 from 0.32 (grid 1), Qwen GDN with FlashInfer from 0.33 (grid 64).
    gdn = layout.family in pages.GDN_FAMILIES
    ckpt_blocks, ckpt_align = 0, None
    if gdn and profile.gdn_checkpoint and flashinfer_gdn:
        ckpt_blocks, ckpt_align = 1, pages.GDN_FLASHINFER_ALIGNMENT
    elif layout.family in MAMBA2_FAMILIES and profile.mamba2_checkpoint_block:
        ckpt_blocks, ckpt_align = 1, 1
    if not (align and profile.gdn_checkpoint):
        ckpt_align = None

    dtypes = pages.state_dtypes(layout, args)
    attn_1tok = pages.attention_page_bytes_per_token(layout, args)
    mamba_page = pages.mamba_page_bytes(layout, args, dtypes)
    al = pages.align_block_size(attn_1tok, mamba_page, requested_block, ckpt_align)

    mtp_layers = 0
    if args.num_speculative_tokens:
        mtp_layers = int(layout.hf_text_config.get("mtp_num_hidden_layers") or layout.num_nextn_predict_layers or 0)
        if mtp_layers <= 0:
            raise PlanInputError("vllm_args.--speculative-config", "this checkpoint declares no MTP layers (mtp_num_hidden_layers)")
        warnings.append("MTP: the draft's attention layers join the attention groups on the last stage; this grouping is not yet checked against vLLM's code")
    n = layout.num_hidden_layers
    attn_ids = tuple(layout.full_attention_layer_ids) + tuple(range(n, n + mtp_layers))
    first_mamba = layout.mamba_layer_ids[0] <= layout.full_attention_layer_ids[0]
    buckets = [("mamba", layout.mamba_layer_ids), ("attention", attn_ids)]
    grouping = pool.group_layers(buckets if first_mamba else buckets[::-1])
    if grouping.padding_layers:
        warnings.append(f"vLLM logs \"Add {grouping.padding_layers} padding layers\": groups of {grouping.group_size} layers")

    ranges = stages.pp_stages(n, pp, None, layout.mamba_layer_ids, layout.full_attention_layer_ids)
    stage_sets = []
    for s in ranges:
        own = set(range(s.start, s.end))
        if s.pp_rank == pp - 1:
            own |= set(range(n, n + mtp_layers))
        stage_sets.append(frozenset(own))
    bpb = [pool.stage_bytes_per_block(grouping.groups, own, al.page_bytes) for own in stage_sets]

    available = _available(req, args, pp)
    if available is None:
        assert args.num_gpu_blocks_override is not None
        available = [args.num_gpu_blocks_override * b for b in bpb]
    elif args.num_gpu_blocks_override is not None:
        available = [args.num_gpu_blocks_override * b for b in bpb]

    req_blocks = pool.group_blocks_per_request(
        grouping.groups, max_model_len, al.block_size, align=align, num_spec=args.num_speculative_tokens, checkpoint_blocks=ckpt_blocks,
    )
    own_blocks = [a // b for a, b in zip(available, bpb, strict=True)]
    stage_rows = [
        VllmStage.trusted(dict(pp_rank=s.pp_rank, start_layer=s.start, end_layer=s.end, kv_cache_memory_bytes=a, bytes_per_block=b, num_blocks=nb))
        for s, a, b, nb in zip(ranges, available, bpb, own_blocks, strict=True)
    ]
    groups = [
        VllmGroup.trusted(dict(kind=g.kind, layers=list(g.layers), blocks_per_request=k))
        for g, k in zip(grouping.groups, req_blocks.per_group, strict=True)
    ]
    resolved = VllmResolved.trusted(dict(
        tp_size=tp, pp_size=pp, max_model_len=max_model_len,
        max_model_len_reason="--max-model-len" if args.max_model_len else "the model config's context length",
        max_num_seqs=max_num_seqs, max_num_seqs_reason=seqs_reason, enable_prefix_caching=prefix,
        mamba_cache_mode="align" if align else "none", requested_block_size=requested_block,
        kv_cache_dtype=args.kv_cache_dtype, model_dtype=pages.model_dtype(layout, args),
        mamba_cache_dtype=dtypes.conv, mamba_ssm_cache_dtype=dtypes.ssm, mamba_ssm_cache_dtype_reason=dtypes.reason,
        num_speculative_tokens=args.num_speculative_tokens, mtp_layers=mtp_layers, full_cuda_graphs=not args.enforce_eager,
        prefill_checkpoint_alignment=ckpt_align, extensible_kv_cache=extensible,
    ))
    if extensible:
        warnings.append(
            "vLLM 0.34's extensible KV cache measures the block count again after warm-up (\"Memory after warmup: ... N KV cache "
            "blocks\"); this plan sizes the reserved count from the profiled figure"
        )
    if args.dp_size > 1:
        warnings.append(f"-dp {args.dp_size}: each data-parallel engine sizes itself as this plan does")
    base = dict(
        engine="vllm", reference=f"vllm=={req.vllm_version}", vllm_version=req.vllm_version, epoch=profile.epoch, warnings=warnings,
        model_name=layout.name, family=layout.family, resolved=resolved, block_size=al.block_size,
        attention_page_bytes_per_token=attn_1tok, mamba_page_bytes=al.mamba_page_bytes, page_bytes=al.page_bytes,
        mamba_padding_pct=al.padding_pct, groups=groups, group_size=grouping.group_size, padding_layers=grouping.padding_layers,
        stages=stage_rows, blocks_per_request=req_blocks.total,
    )

    def failed(kind: str, message: str, remedies: list[str], **extra) -> VllmPlan:
        err = VllmError.trusted(dict(kind=kind, exception="ValueError", message=message, remedies=remedies))
        values = dict(num_gpu_blocks=None, kv_cache_tokens=None, max_concurrency=None, capacity_log=None,
                      max_num_seqs_that_starts=None, min_kv_cache_memory_bytes=None)
        values.update(extra)
        return VllmPlan.trusted({**base, "feasible": False, "error": err, **values})

    # get_kv_cache_configs: the one-request check per worker (null block held back from 0.29).
    needed = [b * req_blocks.total for b in bpb]
    for a, b, need in zip(available, bpb, needed, strict=True):
        check = a - b if profile.null_block_reserved else a
        if check <= 0:
            return failed("no_memory_for_kv", "No available memory for the cache blocks.", [f"give each worker at least {pool.format_gib(need + b)} GiB of KV cache memory"])
        if need > check:
            est = pool.estimate_max_model_len(check, b, grouping.groups, max_model_len, al.block_size, align=align,
                                              num_spec=args.num_speculative_tokens, checkpoint_blocks=ckpt_blocks)
            est_msg = f"Based on the available memory, the estimated maximum model length is {est}. " if est > 0 else ""
            msg = (
                f"To serve at least one request with the {'models' if profile.models_typo else 'model'}'s max seq len ({max_model_len}), ({pool.format_gib(need)} GiB KV "
                f"cache is needed, which is larger than the available KV cache memory ({pool.format_gib(check)} GiB). {est_msg}"
            ).rstrip()
            fixes = [f"--max-model-len {est}"] if est > 0 else []
            fixes.append(f"give each worker at least {pool.format_gib(need + (b if profile.null_block_reserved else 0))} GiB of KV cache memory")
            return failed("one_request_does_not_fit", msg, fixes)

    num_blocks = min(own_blocks)
    conc = num_blocks / req_blocks.total
    if profile.token_figure == "concurrency":
        tokens = int(conc * max_model_len)
    else:
        mamba_block = al.block_size if align else max_model_len
        tokens = num_blocks // len(grouping.groups) * min(al.block_size, mamba_block)
    size = f"GPU KV cache size: {tokens:,} tokens"
    line = f"Maximum concurrency for {max_model_len:,} tokens per request: {conc:.2f}x"
    log = f"{size}, {line}" if profile.capacity_one_line else f"{size}\n{line}"
    check_applies = not args.enforce_eager
    min_mem = [max_num_seqs * b for b in bpb]
    capacity = dict(num_gpu_blocks=num_blocks, kv_cache_tokens=tokens, max_concurrency=conc, capacity_log=log,
                    max_num_seqs_that_starts=num_blocks if check_applies else None,
                    min_kv_cache_memory_bytes=min_mem if check_applies else None)
    if check_applies and max_num_seqs > num_blocks:
        fixes = [f"--max-num-seqs {num_blocks}",
                 "give each worker at least " + " / ".join(f"{pool.format_gib(m)} GiB" for m in min_mem) + " of KV cache memory",
                 "--enforce-eager (no FULL CUDA graphs, no check; slower decode)"]
        return failed("max_num_seqs_exceeds_blocks", MAX_NUM_SEQS_ERROR.format(n=max_num_seqs, b=num_blocks), fixes, **capacity)
    return VllmPlan.trusted({**base, "feasible": True, "error": None, **capacity})
