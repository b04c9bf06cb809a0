"""Per-layer memory specs: each knows its own bytes, so sizing sums specs instead of
branching on model families (the shape of vLLM's KV-cache spec objects).

StateSpec mirrors the per-TP-rank shapes of SGLang's `Mamba2StateShape` /
`KimiLinearStateShape` (configs/mamba_utils.py); KVSpec mirrors
`DefaultPoolConfigurator._compute_cell_size` (model_executor/pool_configurator.py).
"""

from __future__ import annotations

from math import prod
from typing import Literal, NamedTuple

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "mxfp8": 1, "float8_e8m0fnu": 1}
# MXFP8 KV: one UE8M0 scale byte per 32 elements of K and of V (MHATokenToKVPoolMXFP8).
MXFP8_SCALE_BLOCK = 32
FP32_BYTES = 4


class StateSpec(NamedTuple):
    """The mamba state one request holds in one layer, on one TP rank."""

    conv_shapes: tuple[tuple[int, int], ...]
    temporal: tuple[int, int, int]
    conv_dtype: str
    ssm_dtype: str
    num_k_heads_per_tp: int = 1
    is_kda: bool = False
    conv_kernel: int | None = None
    # KDA stores conv as (K-1, dim) and never uses the deduplicated window layout.
    disable_conv_window_dedup: bool = False

    @property
    def conv_itemsize(self) -> int:
        return DTYPE_BYTES[self.conv_dtype]

    @property
    def ssm_itemsize(self) -> int:
        return DTYPE_BYTES[self.ssm_dtype]

    @property
    def conv_bytes_per_layer(self) -> int:
        return sum(prod(s) for s in self.conv_shapes) * self.conv_itemsize

    @property
    def ssm_bytes_per_layer(self) -> int:
        return prod(self.temporal) * self.ssm_itemsize

    @property
    def bytes_per_layer(self) -> int:
        return self.conv_bytes_per_layer + self.ssm_bytes_per_layer

    def replayssm_ring_bytes_per_layer(self, record_len: int) -> int:
        """`replayssm_ring_bytes_per_req` for one layer (SIZING_SPEC §3.1)."""
        hv, v, k = self.temporal
        hk = self.num_k_heads_per_tp
        cb = self.conv_itemsize
        L = record_len
        if self.is_kda:
            return 2 * hv * L * v * cb + 2 * hk * L * k * cb + hv * L * FP32_BYTES + hv * L * k * FP32_BYTES
        ring = hv * L * v * cb + hk * L * k * cb + hv * L * FP32_BYTES
        if self.conv_dtype != "float32":
            ring += hv * L * v * cb + hk * L * k * cb  # the low parts of the d / k rings
        return ring


class KVSpec(NamedTuple):
    """KV bytes per token of one full-attention layer, before TP sharding."""

    kind: Literal["mha", "mla"]
    total_kv_heads: int = 0
    head_dim: int = 0
    v_head_dim: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0

    def heads_per_rank(self, attn_tp: int, attn_dcp: int = 1) -> int:
        # A rank always keeps at least one (replicated) head when TP exceeds the KV heads.
        return max(1, self.total_kv_heads // (attn_tp // attn_dcp))

    def cell_bytes(self, num_layers: int, itemsize: int, attn_tp: int, attn_dcp: int = 1, mxfp8: bool = False) -> int:
        if self.kind == "mla":
            # The latent is replicated on every rank: MLA cells are not TP-sharded (and the
            # MLA pool has no MXFP8 scales: `_compute_cell_size` adds them on the MHA branch).
            return (self.kv_lora_rank + self.qk_rope_head_dim) * num_layers * itemsize
        h = self.heads_per_rank(attn_tp, attn_dcp)
        cell = h * (self.head_dim + self.v_head_dim) * num_layers * itemsize
        if mxfp8:
            cell += h * (self.head_dim + self.v_head_dim) * num_layers // MXFP8_SCALE_BLOCK
        return cell
