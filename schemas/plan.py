"""Plan: what SGLang 0.5.23 would decide at start-up, per pipeline stage.

Every byte and token figure here is the one SGLang computes (or allocates, where the
field says so), so a Plan can be diffed against a boot log line by line.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mambasizer.schemas.request import Accounting

REFERENCE = "sglang==0.5.23"

BindingLimit = Literal[
    "mamba_slots",  # K // ratio capped it
    "kv_tokens",  # max_total_num_tokens // 2 capped it
    "user_max_running_requests",  # --max-running-requests set it
    "speculative_default",  # the 48 running requests SGLang defaults to under speculative decoding
    "estimate",  # SGLang's context-length estimate, clamped to [2048, 4096]
]


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def trusted(cls, values: dict):
        """An instance from values the solver computed, every field given with its exact
        type, WITHOUT validation: validating a plan's own output cost more than the
        sizing itself (pydantic's `model_construct` skips validation too, but re-walks
        every field's default and is slower still). The solver tests re-validate every
        plan they build (`model_validate(plan.model_dump()) == plan`), so a value of the
        wrong type or a missing field fails there, not on the wire."""
        obj = cls.__new__(cls)
        _set(obj, "__dict__", values)
        _set(obj, "__pydantic_fields_set__", set(values))
        _set(obj, "__pydantic_extra__", None)
        _set(obj, "__pydantic_private__", None)
        return obj


_set = object.__setattr__  # frozen models refuse setattr; this is how pydantic itself builds them


class PlanError(Out):
    kind: Literal[
        "mamba_cache_too_small",  # _handle_max_mamba_cache RuntimeError
        "no_memory_for_kv",  # _profile_available_bytes ValueError
        "not_enough_memory",  # MemoryPoolConfig RuntimeError (T <= 0)
        "state_cache_serves_no_request",  # resolve_max_num_reqs RuntimeError
        "launch_rejected",  # an assertion SGLang raises while resolving or starting
        "weights_do_not_fit",  # estimated budget: the weights alone exceed the GPU (CUDA OOM while loading)
        "checkpoint_pool_does_not_fit",  # the int8 mamba checkpoint pool, or the KV pool after it, exceeds free memory
    ]
    exception: str = Field(description="The Python exception SGLang raises.")
    message: str = Field(description="SGLang's own wording.")
    remedies: list[str] = Field(default_factory=list, description="Computed fixes that make this plan start.")


class ResolvedArgs(Out):
    """The launch values the pipeline ran with, after SGLang's own resolution."""

    tp_size: int
    pp_size: int
    attn_dp_size: int
    attn_tp_size: int
    page_size: int
    kv_cache_dtype: str
    kv_cache_dtype_reason: str = Field("", description="Why kv_cache_dtype: given, or `auto` resolved as SGLang's configure_kv_cache_dtype does (the checkpoint's declared FP8 KV cache, else the model dtype).")
    mem_fraction_static: float | None
    mamba_full_memory_ratio: float
    mamba_radix_cache_strategy: str
    enable_mamba_extra_buffer: bool
    enable_mamba_extra_buffer_lazy: bool
    disable_radix_cache: bool
    disable_overlap_schedule: bool
    max_running_requests: int | None
    max_mamba_cache_size: int | None
    max_total_tokens: int | None
    speculative_algorithm: str | None
    speculative_num_draft_tokens: int | None
    enable_linear_replayssm_spec: bool
    context_length: int
    conv_dtype: str
    ssm_dtype: str
    draft_kv_layers: int
    draft_kv_layers_reason: str = Field("", description="Speculative EAGLE/STANDALONE only: where draft_kv_layers came from (draft_model, the checkpoint's MTP), or that the draft's KV is priced at zero and what one draft layer costs per token.")
    speculative_num_steps: int | None = Field(None, description="Draft steps after SGLang's speculative defaults (NGRAM: num_draft_tokens // topk).")
    speculative_eagle_topk: int | None = Field(None, description="Draft tree width after SGLang's speculative defaults (NGRAM: --speculative-ngram-max-bfs-breadth, 10).")
    attention_backend: str = Field("", description="The (decode) attention backend SGLang resolves on this GPU (its architecture's default and the model's override when --attention-backend is unset).")
    gpu: str = Field("h200", description="The catalog GPU whose SGLang resolution applied (budget.gpu; h200's Hopper rules when none is named).")
    disaggregation_mode: Literal["null", "prefill", "decode"] = Field("null", description="The PD role: null (aggregated), prefill or decode.")
    disaggregation_decode_extra_slots: int = Field(0, description="Decode role: in-transfer request rows the decode pool adds (SGLang's default: 2 x max_running_requests per DP rank when <= 32, else 0).")
    dcp_size: int = Field(1, description="Decode context parallelism: KV heads shard over attn_tp_size // dcp_size, tokens over dcp_size.")
    moe_a2a_backend: str = Field("none", description="MoE all-to-all backend (deepep: ep_size = tp_size).")
    ep_size: int = Field(1, description="Expert-parallel size after resolution (DeepEP sets it to tp_size).")
    enable_two_batch_overlap: bool = False


class PlanDevice(Out):
    """The device the plan resolved as: the probes SGLang's resolution and memory reads see."""

    name: str = Field(description="The catalog part (`described:<product>` for a described device; h200 when budget.gpu names none).")
    named: bool = Field(description="Whether budget.gpu named or described it (false: the default Hopper part was assumed).")
    catalog: bool = Field(description="Whether the device is a catalog part (GET /v1/gpus).")
    product: str = Field(description="torch.cuda.get_device_name().")
    memory_mib: int | None = Field(description="The capacity SGLang's probe reads (MiB), when known.")
    compute_capability: str = Field(description="The torch compute capability (`12.1`), or the gfx arch on ROCm (`gfx942`).")
    device_class: str = Field(description="The class SGLang's resolution branches on (sm90, sm100, sm121, gfx942, ...).")
    runtime: Literal["cuda", "hip"]
    integrated: bool = Field(description="props.is_integrated: unified memory.")
    free_memory_from: Literal["device", "host"] = Field(
        description="Where SGLang reads free memory: torch.cuda.mem_get_info (device), or psutil.virtual_memory().available on an integrated part (host).")
    host_available_mib: int | None = Field(description="budget.host_available_mib, when given (integrated parts).")
    free_memory_basis: str = Field(description="What free_gib_before_load / free_gib_after_load were taken from, and any assumption.")


class SlackConsumer(Out):
    """Memory SGLang allocates after sizing, out of the slack mem_fraction_static leaves."""

    name: str
    bytes: int | None = Field(description="Bytes per rank when known (null: set at run time, not by the budget).")
    note: str


class DecodePool(Out):
    """A decode node's HybridMambaDecodeReqToTokenPool (disaggregation/decode.py): what it
    allocates against what _handle_max_mamba_cache charged, on the stage where the gap is largest."""

    extra_slots: int = Field(description="disaggregation_decode_extra_slots: in-transfer request rows.")
    request_rows: int = Field(description="req_to_token rows: max_running_requests + extra_slots + 1.")
    mamba_rows_allocated: int = Field(description="Mamba pool rows: max(K, (N + extra_slots) x (1 + tracking slots)) + 1.")
    mamba_rows_charged: int = Field(description="Mamba rows the budget charged: K + 1.")
    uncharged_mamba_bytes: int = Field(description="Mamba state (and speculative rows) allocated beyond what the budget charged.")
    uncharged_req_to_token_bytes: int = Field(description="req_to_token rows beyond the N + 1 an aggregated pool holds.")
    avoid: str = Field(description="The flag that avoids the gap.")


class Stage(Out):
    pp_rank: int
    start_layer: int
    end_layer: int
    mamba_layers: int
    full_attention_layers: int
    mamba_layer_ids: list[int]
    full_attention_layer_ids: list[int]
    stage_per_req_bytes: int = Field(description="Mamba bytes per slot charged on every stage (the largest stage's share).")
    conv_state_bytes: int = Field(description="Conv state this stage allocates for its own layers, padding slot included.")
    ssm_state_bytes: int = Field(description="Temporal (SSM) state this stage allocates for its own layers, padding slot included.")
    intermediate_state_bytes: int = Field(description="Speculative intermediate buffers this stage allocates (0 without spec).")
    replayssm_ring_bytes: int = Field(0, description="ReplaySSM ring tensors this stage allocates.")
    charged_mamba_bytes: int = Field(description="What the budget charged for the mamba pool (state + ring + intermediate).")
    kv_budget_bytes: int = Field(description="Bytes left for the KV pool after the mamba split.")
    kv_cell_bytes: int = Field(description="KV bytes per token on this stage (draft layers included when priced).")
    kv_tokens: int | None = Field(description="This stage's own page-floored capacity, before max_total_tokens and the MIN across stages; null when the stage holds no full-attention layer.")
    kv_pool_bytes: int = Field(description="Bytes the target KV pool allocates: (max_total_num_tokens + page_size) x cell of the stage's own full-attention layers.")
    req_to_token_bytes: int = Field(description="The req-to-token table: (max_running_requests + 1) x (context_len + extra) int32; not budgeted by SGLang.")
    idle_bytes: int = Field(description="Budgeted but not allocated on this stage: KV capacity above the MIN, and the charge above this stage's own mamba layers.")
    weights_bytes: int | None = Field(None, description="Estimated budget only: parameter bytes SGLang 0.5.23 loads on this stage's largest TP rank (target, MTP and draft); null when measured.")
    free_gib_before_load: float | None = Field(None, description="Estimated budget only: free GiB on this stage's ranks before the weights load (GPU capacity minus CUDA/NCCL residents); null when measured.")
    free_gib_after_load: float | None = Field(None, description="Estimated budget only: free GiB this stage's largest rank would measure after its weights load, before SGLang's world MIN; null when measured.")


class Plan(Out):
    reference: str = REFERENCE
    accounting: Accounting
    feasible: bool
    error: PlanError | None = None
    warnings: list[str] = Field(default_factory=list)
    advice: list[str] = Field(
        default_factory=list,
        description="mambasizer's own suggestions for a startable plan that misses what was asked "
        "(e.g. the --max-mamba-cache-size that reaches the requested max_running_requests), each re-planned and verified.",
    )
    model_name: str
    family: str
    resolved: ResolvedArgs
    rest_gib: float | None = Field(description="R0: GiB handed to the mamba split.")
    mamba_ratio: int | None = Field(description="Mamba slots per running request (null when SGLang would fail before computing it).")
    max_mamba_cache_size: int | None
    mamba_cache_per_req_bytes: int = Field(description="Per-request state bytes over all of the model's mamba layers.")
    kv_budget_bytes: int | None
    max_total_num_tokens: int | None
    max_running_requests: int | None
    pp_max_micro_batch_size: int | None
    binding_limit: BindingLimit | None
    budget_source: Literal["measured", "estimated"] = Field(
        "measured", description="measured: the budget came from figures SGLang printed (rest_gib or free GiB); "
        "estimated: from the GPU alone (budget.gpu / gpu_memory_mib): weights exact, residents calibrated.",
    )
    gpu_memory_mib: int | None = Field(None, description="The GPU capacity the plan used (nvidia-smi memory.total), when known.")
    device: PlanDevice | None = Field(None, description="The device the plan resolved as (budget.gpu's part or description; h200 when none is named).")
    free_gib_before_load: float | None = Field(None, description="F_pre the pipeline ran with (the world MIN SGLang's probe returns); null for rest_gib.")
    free_gib_after_load: float | None = Field(None, description="F_post the pipeline ran with (the world MIN after the weights load); null for rest_gib.")
    min_free_stage: int | None = Field(None, description="Estimated budget only: the PP stage whose largest rank set the world MIN of free memory after load.")
    logical_max_total_num_tokens: int | None = Field(None, description="Request tokens the KV pool holds: max_total_num_tokens per-rank rows x dcp_size (the allocator's logical ids); equal to max_total_num_tokens without DCP.")
    decode_pool: DecodePool | None = Field(None, description="Decode role only: the decode request pool, allocated beyond the budget where it is larger than charged.")
    slack_consumers: list[SlackConsumer] = Field(default_factory=list, description="What SGLang allocates after sizing out of the slack (DeepEP buffers, the symmetric-memory pool, HiCache host pools).")
    stages: list[Stage]
