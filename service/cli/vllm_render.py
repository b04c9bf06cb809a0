"""Text rendering of a VllmPlan for `mambasizer plan` (the JSON form is the plan as-is)."""

from __future__ import annotations

from mambasizer.schemas.vllm_plan import VllmPlan


def render_vllm(p: VllmPlan, ignored: list[str] | None = None) -> str:
    r = p.resolved
    gib = 1 << 30
    lines = [
        (f"{p.model_name} ({p.family}) under vLLM {p.vllm_version} [{p.epoch}]: TP {r.tp_size} x PP {r.pp_size}, "
        f"max_model_len {r.max_model_len:,}, max_num_seqs {r.max_num_seqs} ({r.max_num_seqs_reason})"),
        (f"  prefix caching {'on' if r.enable_prefix_caching else 'off'} (mamba_cache_mode {r.mamba_cache_mode}); KV {r.kv_cache_dtype}; "
        f"mamba state {r.mamba_cache_dtype} / SSM {r.mamba_ssm_cache_dtype}"),
        f"  block size {p.block_size} tokens; page {p.page_bytes:,} B (mamba {p.mamba_page_bytes:,} B padded by {p.mamba_padding_pct:.2f}%)",
        f"  {len(p.groups)} KV-cache groups of {p.group_size} layers "
        f"({sum(g.kind == 'mamba' for g in p.groups)} mamba, {sum(g.kind == 'attention' for g in p.groups)} attention)"
        + (f"; {p.padding_layers} padding layers" if p.padding_layers else ""),
    ]
    for s in p.stages:
        lines.append(
            f"  stage {s.pp_rank} (layers {s.start_layer}-{s.end_layer - 1}): {s.kv_cache_memory_bytes / gib:.2f} GiB available, "
            f"{s.bytes_per_block:,} B per block -> {s.num_blocks:,} blocks"
        )
    if p.num_gpu_blocks is not None:
        lines.append(f"  num_gpu_blocks {p.num_gpu_blocks:,}; a max_model_len request holds {p.blocks_per_request} blocks")
        lines.extend(f"  {ln}" for ln in (p.capacity_log or "").splitlines())
    if p.max_num_seqs_that_starts is not None:
        lines.append(f"  largest --max-num-seqs that starts: {p.max_num_seqs_that_starts:,}")
    if p.error is not None:
        lines.append(f"  WOULD NOT START: {p.error.exception}: {p.error.message}")
        lines.extend(f"    remedy: {rem}" for rem in p.error.remedies)
    lines.extend(f"  note: {w}" for w in p.warnings)
    if ignored:
        lines.append(f"  ignored flags: {' '.join(ignored)}")
    return "\n".join(lines)
