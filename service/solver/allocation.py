"""What one PP stage physically allocates (`mem_cache/memory_pool.py`), as tensor shapes.

The plan reports these bytes and the GPU worker allocates exactly these tensors, so
"measured vs predicted" compares two views of one source. `budgeted` marks what SGLang's
sizing charges; the rest (req-to-token table, uncharged spec scratch, the small index
tables) is allocated outside the budget (SIZING_SPEC §4.3) and reported on its own line.
A budgeted tensor can still carry uncharged rows (`unbudgeted_bytes`: the KV padding page).

Tensors are listed in the order SGLang 0.5.23 allocates them on a rank:
`HybridReqToTokenPool` (req_to_token, then the `MambaPool`: conv, temporal, ReplaySSM
rings, spec intermediates, ring cursors; then the slot free list and the request ->
slot maps), then `HybridLinearKVPool` (one K/V or MLA buffer per local full layer).
"""

from __future__ import annotations

from math import prod
from typing import Literal, NamedTuple

from mambasizer.service.solver.specs import DTYPE_BYTES, MXFP8_SCALE_BLOCK, KVSpec, StateSpec

Pool = Literal[
    "conv_state", "ssm_state", "intermediate_state", "replayssm_ring", "kv_pool", "req_to_token", "side_tables",
    "int8_checkpoint",
]
# Storage bytes per element. fp8 KV is stored as uint8 (`KVCache.store_dtype`): same size.
_INDEX_BYTES = {"int32": 4, "int64": 8, "int8": 1}
_ITEMSIZE = {**DTYPE_BYTES, **_INDEX_BYTES}


class TensorSpec(NamedTuple):
    pool: Pool
    name: str
    shape: tuple[int, ...]
    dtype: str  # "bfloat16" | "float16" | "float32" | "fp8_e4m3" | "fp8_e5m2" | "mxfp8" | "float8_e8m0fnu" | "int32" | "int64" | "int8"
    budgeted: bool
    # Bytes of a budgeted tensor that the budget does not charge (the KV padding page).
    unbudgeted_bytes: int = 0

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self.dtype]

    @property
    def nbytes(self) -> int:
        return prod(self.shape) * self.itemsize

    @property
    def uncharged_bytes(self) -> int:
        """What SGLang allocates for this tensor beyond what its sizing charged."""
        return self.unbudgeted_bytes if self.budgeted else self.nbytes


class StageAllocationInputs(NamedTuple):
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
    eagle_topk: int | None
    replayssm_spec: bool
    replayssm_cache_len: int
    req_to_token_extra: int
    device_kind: Literal["cuda", "cpu"] = "cuda"
    # The ping-pong track map exists only with the extra buffer; its width follows overlap.
    extra_buffer: bool = False
    overlap_schedule: bool = True
    # DCP: KV heads shard over attn_tp // attn_dcp (service/solver/dcp.py).
    attn_dcp: int = 1
    # A decode node's HybridMambaDecodeReqToTokenPool: its in-transfer rows
    # (disaggregation_decode_extra_slots); None for every other pool (disaggregation.py).
    decode_pre_alloc: int | None = None
    # --enable-int8-mamba-checkpoint: the checkpoint slots (int8_checkpoint.slots), else None.
    # Built after the MambaPool, outside the budget (service/solver/int8_checkpoint.py).
    int8_checkpoint_slots: int | None = None


def _rows(x: StageAllocationInputs) -> tuple[int, int, int]:
    """(request rows, mamba slots, speculative rows) the stage's request pool is built
    with, padding rows not included: (N, K, N), or the decode pool's widened ones."""
    if x.decode_pre_alloc is None:
        return x.max_running_requests, x.max_mamba_cache_size, x.max_running_requests
    track = (2 if x.overlap_schedule else 1) if x.extra_buffer else 0  # get_mamba_tracking_slots, lazy=False
    reqs = x.max_running_requests + x.decode_pre_alloc
    return reqs, max(x.max_mamba_cache_size, reqs * (1 + track)), reqs


def stage_tensors(x: StageAllocationInputs) -> list[TensorSpec]:
    """Every tensor one rank of this stage allocates, in SGLang's order."""
    tensors = _state_and_table_tensors(x)
    # HybridLinearKVPool: one buffer per local full-attention layer, all of one shape.
    for layer in range(x.local_full_layers):
        tensors.extend(t._replace(name=t.name.replace("kv", f"kv[{layer}]", 1)) for t in _kv_layer_tensors(x))
    return tensors


def stage_pool_bytes(x: StageAllocationInputs) -> dict[str, int]:
    """The budget-relevant totals of `pool_bytes(stage_tensors(x))` (every pool but the
    side tables), what every plan reports per stage, so it is on the hot path: the state
    and table rows in closed form (the shapes `_state_and_table_tensors` lists), the spec
    scratch and ReplaySSM rings from the manifest's own helpers, one KV buffer times the
    layer count. tests/solver/test_pool_bytes.py checks it against the manifest."""
    s = x.state
    Lr = x.local_mamba_layers
    N, K, _ = _rows(x)
    totals = {"req_to_token": (N + 1) * (x.context_len + x.req_to_token_extra) * 4}  # int32
    if Lr > 0:
        rows = Lr * (K + 1)
        totals["conv_state"] = rows * sum(a * b for a, b in s.conv_shapes) * _ITEMSIZE[s.conv_dtype]
        totals["ssm_state"] = rows * prod(s.temporal) * _ITEMSIZE[s.ssm_dtype]
        if x.replayssm_spec:
            totals["replayssm_ring"] = sum(t.nbytes for t in _replayssm_rings(x))
        if x.speculative:
            totals["intermediate_state"] = sum(t.nbytes for t in _spec_scratch(x))
    if x.local_full_layers > 0:
        totals["kv_pool"] = sum(t.nbytes for t in _kv_layer_tensors(x)) * x.local_full_layers
    return totals


def _state_and_table_tensors(x: StageAllocationInputs) -> list[TensorSpec]:
    """The req-to-token table, the MambaPool and the side tables, in allocation order."""
    s = x.state
    Lr = x.local_mamba_layers
    N, K, _ = _rows(x)
    # ReqToTokenPool.__init__ runs first: (N + 1) rows, row 0 is padding.
    tensors: list[TensorSpec] = [
        TensorSpec("req_to_token", "req_to_token", (N + 1, x.context_len + x.req_to_token_extra), "int32", False),
    ]
    # MambaPool. Built on every stage, even one without mamba layers (zero-size state).
    if Lr > 0:
        # K + 1 rows, slot 0 is the padding slot.
        for i, conv in enumerate(s.conv_shapes):
            tensors.append(TensorSpec("conv_state", f"conv[{i}]", (Lr, K + 1, *conv), s.conv_dtype, True))
        tensors.append(TensorSpec("ssm_state", "temporal", (Lr, K + 1, *s.temporal), s.ssm_dtype, True))
        if x.replayssm_spec:
            tensors.extend(_replayssm_rings(x))
        if x.speculative:
            tensors.extend(_spec_scratch(x))
    if x.replayssm_spec and not s.is_kda:
        # GDN spec cursors (write_pos, cache_base: int32; is_flush: int8), one per request row.
        tensors += [
            TensorSpec("side_tables", "replayssm_spec_write_pos", (N + 1,), "int32", False),
            TensorSpec("side_tables", "replayssm_cache_base", (N + 1,), "int32", False),
            TensorSpec("side_tables", "replayssm_is_flush", (N + 1,), "int8", False),
        ]
    # MambaSlotAllocator's free list (slots 1..K) and the request -> slot maps.
    tensors.append(TensorSpec("side_tables", "mamba_free_slots", (K,), "int64", False))
    tensors.append(TensorSpec("side_tables", "req_index_to_mamba_index", (N + 1,), "int32", False))
    if x.extra_buffer:
        track = 2 if x.overlap_schedule else 1  # get_mamba_tracking_slots(extra_buffer=True, overlap)
        tensors.append(TensorSpec("side_tables", "req_index_to_mamba_ping_pong_track", (N + 1, track), "int64", False))
    if x.int8_checkpoint_slots is not None:
        tensors.extend(_int8_checkpoint_tensors(x, x.int8_checkpoint_slots))
    return tensors


def _int8_checkpoint_tensors(x: StageAllocationInputs, slots: int) -> list[TensorSpec]:
    """`MambaCheckpointPool` (mamba_checkpoint_pool.py): the int8 temporal state and its
    per-(head, k-channel) scale in the temporal dtype, the conv windows in their own dtype,
    each over the rank's mamba layers and slots + 1 rows (slot 0 reserved), then its slot
    free list. Never charged by the budget (int8_checkpoint.pool_bytes is its estimate)."""
    s = x.state
    Lr, rows = x.local_mamba_layers, slots + 1
    h, d_v, d_k = s.temporal
    out = [
        TensorSpec("int8_checkpoint", "ckpt.qdata", (Lr, rows, h, d_v, d_k), "int8", False),
        TensorSpec("int8_checkpoint", "ckpt.scale", (Lr, rows, h, 1, d_k), s.ssm_dtype, False),
    ]
    out += [TensorSpec("int8_checkpoint", f"ckpt.conv[{i}]", (Lr, rows, *conv), s.conv_dtype, False) for i, conv in enumerate(s.conv_shapes)]
    out.append(TensorSpec("int8_checkpoint", "ckpt.free_slots", (slots,), "int64", False))
    return out


def _spec_scratch(x: StageAllocationInputs) -> list[TensorSpec]:
    """The speculative-decoding intermediates of a stage with mamba layers: the SSM scratch
    (not under ReplaySSM) and one conv window per conv shape, (N + 1) request rows each."""
    s = x.state
    Lr, Dm = x.local_mamba_layers, x.num_draft_tokens
    N = _rows(x)[2]
    out = []
    if not x.replayssm_spec:
        out.append(TensorSpec("intermediate_state", "intermediate_ssm", (Lr, N + 1, Dm, *s.temporal), s.ssm_dtype, True))
    dedup = (
        x.device_kind == "cuda"
        and not s.disable_conv_window_dedup
        and not s.is_kda
        and (x.eagle_topk is None or x.eagle_topk <= 1)
    )
    axis = _conv_window_axis(s) if dedup else None
    for i, conv in enumerate(s.conv_shapes):
        if axis is not None:
            # One shared window of Dm + (C - 1) - 1 columns per slot instead of Dm windows.
            phys = list(conv)
            phys[axis] = Dm + conv[axis] - 1
            shape = (Lr, N + 1, *phys)
        else:
            shape = (Lr, N + 1, Dm, conv[0], conv[1])
        # Charged as part of the intermediate only when the ssm scratch is.
        out.append(TensorSpec("intermediate_state", f"intermediate_conv_window[{i}]", shape, s.conv_dtype, not x.replayssm_spec))
    return out


def _kv_layer_tensors(x: StageAllocationInputs) -> list[TensorSpec]:
    """The KV buffers of one local full-attention layer (named "kv..."); none without any.
    MXFP8 on an MHA model: `MHATokenToKVPoolMXFP8`, K and V in fp8 over T + page rows and
    one UE8M0 scale per 32 elements of each (the interleaved page-128 layout holds as many)."""
    if x.kv_dtype in ("nvfp4", "fp4_mx_block16"):
        return []  # FP4 pools are not modelled: only plans SGLang refuses get here (launch.py)
    kv = _kv_layer_tensor(x)
    if kv is None:
        return []
    if x.kv_dtype != "mxfp8" or x.kv.kind == "mla":
        return [kv]
    rows = x.max_total_num_tokens + x.page_size
    h, d = x.kv.heads_per_rank(x.attn_tp, x.attn_dcp), x.kv.head_dim
    pad = (rows - x.max_total_num_tokens) * h * d
    return [
        TensorSpec("kv_pool", "kv.k", (rows, h, d), "mxfp8", True, pad),
        TensorSpec("kv_pool", "kv.v", (rows, h, d), "mxfp8", True, pad),
        TensorSpec("kv_pool", "kv.k_scale", (rows, h, d // MXFP8_SCALE_BLOCK), "float8_e8m0fnu", True, pad // MXFP8_SCALE_BLOCK),
        TensorSpec("kv_pool", "kv.v_scale", (rows, h, d // MXFP8_SCALE_BLOCK), "float8_e8m0fnu", True, pad // MXFP8_SCALE_BLOCK),
    ]


def _kv_layer_tensor(x: StageAllocationInputs) -> TensorSpec | None:
    """The KV buffer of one local full-attention layer (named "kv"), or None without any."""
    if x.local_full_layers <= 0:
        return None
    T, page = x.max_total_num_tokens, x.page_size
    rows = T + page  # the padded page holds slot 0
    if x.kv.kind == "mla":
        dim = x.kv.kv_lora_rank + x.kv.qk_rope_head_dim
        pad = (rows - T) * dim * _kv_itemsize(x.kv_dtype)
        return TensorSpec("kv_pool", "kv", (rows, 1, dim), x.kv_dtype, True, pad)
    h = x.kv.heads_per_rank(x.attn_tp, x.attn_dcp)
    # The hybrid wrapper does not pass v_head_dim, so V uses head_dim and K/V have one
    # shape: MHATokenToKVPool stores them as the two halves of ONE page-aligned
    # allocation per layer, (2, ceil_align(rows, page), heads, head_dim).
    padded = -(-rows // page) * page
    pad = 2 * (padded - T) * h * x.kv.head_dim * _kv_itemsize(x.kv_dtype)
    return TensorSpec("kv_pool", "kv", (2, padded, h, x.kv.head_dim), x.kv_dtype, True, pad)


def _kv_itemsize(dtype: str) -> int:
    return DTYPE_BYTES[dtype]


def _conv_window_axis(s: StateSpec) -> int | None:
    """`MambaPool._detect_conv_window_axis`: the axis of length conv_kernel - 1, the trailing
    one preferred. SGLang raises ValueError when no axis (or no common axis) fits; the
    manifest then keeps the dense layout, and the plan's spec figure is a lower bound."""
    if not s.conv_kernel:
        return len(s.conv_shapes[0]) - 1
    win = s.conv_kernel - 1
    axis = None
    for conv in s.conv_shapes:
        this = len(conv) - 1 if conv[-1] == win else (0 if conv[0] == win else None)
        if this is None or (axis is not None and this != axis):
            return None
        axis = this
    return axis


def _replayssm_rings(x: StageAllocationInputs) -> list[TensorSpec]:
    s = x.state
    hv, v, k = s.temporal
    hk = s.num_k_heads_per_tp
    L = x.replayssm_cache_len
    Lr = x.local_mamba_layers
    # GDN spec rings are request scratch (N + 1 rows); KDA rides on every mamba slot.
    _, K, spec_rows = _rows(x)
    slots = (K + 1) if s.is_kda else (spec_rows + 1)
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


def req_to_token_extra(
    num_draft_tokens: int, speculative: bool, page_size: int, num_steps: int, topk: int, has_draft_kv: bool = True,
) -> int:
    """`get_req_to_token_extra_context_len`: decode over-allocation headroom per row.
    NGRAM writes no draft KV, so its per-decode length needs no per-topk page rounding."""
    extra = 4 + num_draft_tokens
    if speculative and page_size > 1:
        if page_size == 1 or topk == 1 or not has_draft_kv:
            per_decode = max(num_steps * topk, num_draft_tokens)
        else:
            pages = ((page_size - 1) + num_steps + page_size - 1) // page_size
            per_decode = max(pages * page_size * topk, num_draft_tokens)
        extra = max(extra, 2 * per_decode + page_size - 1)
    return extra


def pool_bytes(tensors: list[TensorSpec]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for t in tensors:  # t.nbytes, inlined (the plan's hot loop)
        totals[t.pool] = totals.get(t.pool, 0) + prod(t.shape) * _ITEMSIZE[t.dtype]
    return totals
