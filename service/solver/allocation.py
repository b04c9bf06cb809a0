"""What one PP stage physically allocates (`mem_cache/memory_pool.py`), as tensor shapes.

The plan reports these bytes and the GPU worker allocates exactly these tensors, so
"measured vs predicted" compares two views of one source. `budgeted` marks what SGLang's
sizing charges; the rest (padding page, req-to-token table, uncharged spec scratch) is
allocated outside the budget (SIZING_SPEC §4.3) and reported on its own line.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Literal, Optional

from service.solver.specs import DTYPE_BYTES, KVSpec, StateSpec

Pool = Literal["conv_state", "ssm_state", "intermediate_state", "replayssm_ring", "kv_pool", "req_to_token"]


@dataclass(frozen=True)
class TensorSpec:
    pool: Pool
    name: str
    shape: tuple[int, ...]
    dtype: str  # "bfloat16" | "float16" | "float32" | "fp8_e4m3" | "fp8_e5m2" | "int32"
    budgeted: bool

    @property
    def nbytes(self) -> int:
        itemsize = 4 if self.dtype == "int32" else DTYPE_BYTES[self.dtype]
        return prod(self.shape) * itemsize


@dataclass(frozen=True)
class StageAllocationInputs:
    state: StateSpec
    local_mamba_layers: int
    local_full_layers: int
    kv: KVSpec
    kv_dtype: str
    attn_tp: int
    max_mamba_cache_size: int  # K
    max_running_requests: int  # N
    max_total_num_tokens: int  # T
    page_size: int
    context_len: int
    speculative: bool
    num_draft_tokens: int  # Dm (0 without spec)
    eagle_topk: Optional[int]
    replayssm_spec: bool
    replayssm_cache_len: int
    req_to_token_extra: int
    device_kind: Literal["cuda", "cpu"] = "cuda"


def stage_tensors(x: StageAllocationInputs) -> list[TensorSpec]:
    s = x.state
    Lr, K, N, Dm = x.local_mamba_layers, x.max_mamba_cache_size, x.max_running_requests, x.num_draft_tokens
    tensors: list[TensorSpec] = []
    if Lr > 0:
        # MambaPool: K + 1 rows, slot 0 is the padding slot.
        for i, conv in enumerate(s.conv_shapes):
            tensors.append(TensorSpec("conv_state", f"conv[{i}]", (Lr, K + 1, *conv), s.conv_dtype, True))
        tensors.append(TensorSpec("ssm_state", "temporal", (Lr, K + 1, *s.temporal), s.ssm_dtype, True))
        if x.speculative:
            if not x.replayssm_spec:
                tensors.append(TensorSpec("intermediate_state", "intermediate_ssm", (Lr, N + 1, Dm, *s.temporal), s.ssm_dtype, True))
            dedup = (
                x.device_kind == "cuda"
                and not s.disable_conv_window_dedup
                and not s.is_kda
                and (x.eagle_topk is None or x.eagle_topk <= 1)
            )
            for i, conv in enumerate(s.conv_shapes):
                if dedup:
                    # One shared (dim, D + K - 2) window per slot instead of D windows.
                    win = s.conv_kernel - 1 if s.conv_kernel else conv[1]
                    axis = 1 if conv[1] == win else 0
                    phys = list(conv)
                    phys[axis] = Dm + win - 1
                    shape = (Lr, N + 1, *phys)
                else:
                    shape = (Lr, N + 1, Dm, conv[0], conv[1])
                # Charged as part of the intermediate only when the ssm scratch is.
                tensors.append(TensorSpec("intermediate_state", f"intermediate_conv_window[{i}]", shape, s.conv_dtype, not x.replayssm_spec))
        if x.replayssm_spec:
            tensors.extend(_replayssm_rings(x))
    if x.local_full_layers > 0:
        rows = x.max_total_num_tokens + x.page_size  # the padded page holds slot 0
        if x.kv.kind == "mla":
            dim = x.kv.kv_lora_rank + x.kv.qk_rope_head_dim
            for layer in range(x.local_full_layers):
                tensors.append(TensorSpec("kv_pool", f"kv[{layer}]", (rows, 1, dim), x.kv_dtype, True))
        else:
            h = x.kv.heads_per_rank(x.attn_tp)
            for layer in range(x.local_full_layers):
                # The hybrid wrapper does not pass v_head_dim: V uses head_dim.
                tensors.append(TensorSpec("kv_pool", f"k[{layer}]", (rows, h, x.kv.head_dim), x.kv_dtype, True))
                tensors.append(TensorSpec("kv_pool", f"v[{layer}]", (rows, h, x.kv.head_dim), x.kv_dtype, True))
    tensors.append(TensorSpec("req_to_token", "req_to_token", (N + 1, x.context_len + x.req_to_token_extra), "int32", False))
    return tensors


def _replayssm_rings(x: StageAllocationInputs) -> list[TensorSpec]:
    s = x.state
    hv, v, k = s.temporal
    hk = s.num_k_heads_per_tp
    L = x.replayssm_cache_len
    Lr = x.local_mamba_layers
    # GDN spec rings are request scratch (N + 1 rows); KDA rides on every mamba slot.
    slots = (x.max_mamba_cache_size + 1) if s.is_kda else (x.max_running_requests + 1)
    cd = s.conv_dtype
    rings = [
        TensorSpec("replayssm_ring", "ring_d", (Lr, slots, hv, L, v), cd, True),
        TensorSpec("replayssm_ring", "ring_k", (Lr, slots, hk, L, k), cd, True),
    ]
    if s.is_kda:
        rings += [
            TensorSpec("replayssm_ring", "ring_g", (Lr, slots, hv, L, k), "float32", True),
            TensorSpec("replayssm_ring", "ring_rawv", (Lr, slots, hv, L, v), cd, True),
            TensorSpec("replayssm_ring", "ring_rawk", (Lr, slots, hk, L, k), cd, True),
            TensorSpec("replayssm_ring", "ring_beta", (Lr, slots, hv, L), "float32", True),
        ]
    else:
        rings.append(TensorSpec("replayssm_ring", "ring_g", (Lr, slots, hv, L), "float32", True))
        if cd != "float32":
            rings += [
                TensorSpec("replayssm_ring", "ring_d_low", (Lr, slots, hv, L, v), cd, True),
                TensorSpec("replayssm_ring", "ring_k_low", (Lr, slots, hk, L, k), cd, True),
            ]
    return rings


def req_to_token_extra(num_draft_tokens: int, speculative: bool, page_size: int, num_steps: int, topk: int) -> int:
    """`get_req_to_token_extra_context_len`: decode over-allocation headroom per row."""
    extra = 4 + num_draft_tokens
    if speculative and page_size > 1:
        if page_size == 1 or topk == 1:
            per_decode = max(num_steps * topk, num_draft_tokens)
        else:
            pages = ((page_size - 1) + num_steps + page_size - 1) // page_size
            per_decode = max(pages * page_size * topk, num_draft_tokens)
        extra = max(extra, 2 * per_decode + page_size - 1)
    return extra


def pool_bytes(tensors: list[TensorSpec]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for t in tensors:
        totals[t.pool] = totals.get(t.pool, 0) + t.nbytes
    return totals
