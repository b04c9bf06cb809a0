"""VllmPlan: what vLLM decides at start-up for one deployment of a hybrid model, given the
measured "Available KV cache memory" per worker (or --kv-cache-memory-bytes /
--num-gpu-blocks-override). Every figure is the one vLLM computes or prints."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mambasizer.schemas.plan import Out


class VllmError(Out):
    kind: Literal["no_memory_for_kv", "one_request_does_not_fit", "max_num_seqs_exceeds_blocks"]
    exception: str = Field(description="The Python exception vLLM raises.")
    message: str = Field(description="vLLM's own wording (the one-request check: up to its memory hint, which varies by release and mode).")
    remedies: list[str] = Field(default_factory=list, description="Computed fixes that make this deployment start.")


class VllmResolved(Out):
    """The values the vLLM pipeline ran with, after vLLM's defaults and config hooks."""

    tp_size: int
    pp_size: int
    max_model_len: int
    max_model_len_reason: str
    max_num_seqs: int
    max_num_seqs_reason: str
    enable_prefix_caching: bool
    mamba_cache_mode: Literal["align", "none"]
    requested_block_size: int = Field(description="--block-size, else the release's default (16; 64 from 0.34).")
    kv_cache_dtype: str
    model_dtype: str
    mamba_cache_dtype: str = Field(description="The conv state's dtype.")
    mamba_ssm_cache_dtype: str
    mamba_ssm_cache_dtype_reason: str
    num_speculative_tokens: int
    mtp_layers: int = Field(description="Draft (MTP) attention layers added to the last stage's groups.")
    full_cuda_graphs: bool = Field(description="FULL CUDA graphs are part of the CUDA-graph mode (off with --enforce-eager): the max_num_seqs check applies.")
    prefill_checkpoint_alignment: int | None = Field(description="The mamba layers' checkpoint grid the block size is aligned to (align mode, 0.33+ for FlashInfer GDN).")
    extensible_kv_cache: bool = Field(description="0.34's extensible KV cache (on by default on CUDA unless --kv-cache-memory-bytes or --num-gpu-blocks-override): the block count is measured again after warm-up; this plan sizes the reserved count.")


class VllmGroup(Out):
    kind: Literal["attention", "mamba"]
    layers: list[int] = Field(description="Layer ids in the group (MTP layers numbered after the model's).")
    blocks_per_request: int = Field(description="cdiv(max_memory_usage_bytes, page): what the capacity line charges a max_model_len request in this group.")


class VllmStage(Out):
    pp_rank: int
    start_layer: int
    end_layer: int
    kv_cache_memory_bytes: int = Field(description="The worker's available KV cache memory (bytes).")
    bytes_per_block: int = Field(description="The largest projected group's layers x page on this stage.")
    num_blocks: int = Field(description="This stage's own floor(available / bytes_per_block), before the minimum over workers.")


class VllmPlan(Out):
    engine: Literal["vllm"] = "vllm"
    reference: str
    vllm_version: str
    epoch: str = Field(description="The accounting epoch of the release (research/VLLM_SIZING.md §12).")
    feasible: bool
    error: VllmError | None = None
    warnings: list[str] = Field(default_factory=list)
    model_name: str
    family: str
    resolved: VllmResolved
    block_size: int = Field(description="The attention block size after alignment (\"Setting attention block size to N tokens\").")
    attention_page_bytes_per_token: int
    mamba_page_bytes: int = Field(description="One mamba layer's state page before padding.")
    page_bytes: int = Field(description="Every layer's page: the attention page, the mamba page padded to it.")
    mamba_padding_pct: float = Field(description="\"Padding mamba page size by X%\" (0 when equal).")
    groups: list[VllmGroup]
    group_size: int = Field(description="Layers per KV-cache group.")
    padding_layers: int = Field(description="\"Add N padding layers\" over all buckets (0: none logged).")
    stages: list[VllmStage]
    num_gpu_blocks: int | None = Field(description="Blocks of the one shared pool: the minimum over all TP x PP workers.")
    kv_cache_tokens: int | None = Field(description="\"GPU KV cache size: N tokens\" as vLLM prints it (0.21+: concurrency x max_model_len).")
    max_concurrency: float | None = Field(description="\"Maximum concurrency for L tokens per request\" (unrounded; printed with 2 decimals).")
    capacity_log: str | None = Field(description="The capacity line(s) vLLM prints.")
    blocks_per_request: int = Field(description="Blocks one max_model_len request is charged over all groups.")
    max_num_seqs_that_starts: int | None = Field(description="The largest --max-num-seqs that passes the start-up check (null: no check applies).")
    min_kv_cache_memory_bytes: list[int] | None = Field(description="Per stage: the smallest available KV cache memory with which the resolved max_num_seqs starts.")
