"""Wide expert parallelism (`--moe-a2a-backend deepep`), two-batch overlap and the memory
that SGLang 0.5.23 allocates after sizing, out of the slack (symmetric memory, DeepEP's own
buffers, HiCache host pools).

* `overrides._a2a_ep_size`: DeepEP spans the TP group, ep_size := tp_size;
* `memory_hook.reserve_for_deepep_a2a_mb`: +2048 MiB on top of the 10 GiB floor when the
  decode graph is on (not on a prefill node); `reserve_for_graph_mb`: +1024 MiB when the
  breakable prefill graph runs with DeepEP;
* `cuda_graph_hook.apply_deepep_adjustments` (before the memory settings): the breakable
  prefill graph's buckets become multiples of 8 over max_bs (the given one, else 2048), so
  the 8 MiB-per-bucket term counts the aligned list;
* `disable_breakable_cudagraph_if_incompatible`: two-batch overlap turns the prefill graph
  off; `validation_hook.check_two_batch_overlap`: TBO without an a2a backend needs attention DP;
* DeepEP's NVL/RDMA buffers are created on first dispatch (`token_dispatcher/deepep.py:
  _get_buffer`), the symmetric-memory pool (`SGLANG_SYMM_MEM_PREALLOC_GB_SIZE`, 4 GiB by
  default) after the KV pools: neither is in the budget, both come out of the slack.
"""

from __future__ import annotations

DEEPEP = "deepep"
DEEPEP_A2A_RESERVE_MB = 2048
BCG_DEEPEP_RESERVE_MB = 1024
DEEPEP_DEFAULT_PREFILL_MAX_BS = 2048
SYMM_MEM_DEFAULT_GIB = 4

TBO_WITHOUT_A2A = (
    "When enabling two batch overlap without an EP a2a backend (moe_a2a_backend='none'), attention DP "
    "(--attn-dp-size) is required (DeepSeek-V4 non-EP DP TBO path)."
)


def ep_size(moe_a2a_backend: str, tp_size: int, given: int) -> int:
    return tp_size if moe_a2a_backend == DEEPEP else given


def deepep_a2a_reserve_mb(moe_a2a_backend: str, decode_graph_on: bool) -> float:
    return float(DEEPEP_A2A_RESERVE_MB) if moe_a2a_backend == DEEPEP and decode_graph_on else 0.0


def bcg_deepep_reserve_mb(moe_a2a_backend: str, breakable_prefill_on: bool) -> float:
    return float(BCG_DEEPEP_RESERVE_MB) if moe_a2a_backend == DEEPEP and breakable_prefill_on else 0.0


def aligned_prefill_graph_count(limit: int, count: int) -> int:
    """The number of prefill buckets once aligned to multiples of 8, from `count` (the
    unaligned list's length up to `limit`): only the first segment (4, 8, ..., 32) holds
    sizes that are not multiples of 8, and aligning them lands on 8, 16, 24, 32."""
    top = min(limit, 32) // 4 * 4  # the first segment's largest size
    if top < 4:
        return count
    return count - top // 4 + -(-top // 8)


def tbo_rejection(enable_two_batch_overlap: bool, moe_a2a_backend: str, attn_dp_size: int) -> tuple[str, str] | None:
    if enable_two_batch_overlap and moe_a2a_backend == "none" and attn_dp_size <= 1:
        return "ValueError", TBO_WITHOUT_A2A
    return None


def slack_consumers(moe_a2a_backend: str, enable_symm_mem: bool, enable_hierarchical_cache: bool, symm_mem_gib: float | None) -> list[dict]:
    """What SGLang allocates after sizing, out of the slack (name, bytes when known, why)."""
    out: list[dict] = []
    if moe_a2a_backend == DEEPEP:
        out.append({
            "name": "deepep_buffers",
            "bytes": None,
            "note": "DeepEP's NVL/RDMA buffers are created on the first dispatch (token_dispatcher/deepep.py:_get_buffer), "
                    "after sizing: their size follows --deepep-config and the hidden size, not the budget; "
                    f"mem_fraction_static reserved {DEEPEP_A2A_RESERVE_MB} MiB for the decode graph's a2a buffers",
        })
    if enable_symm_mem:
        gib = symm_mem_gib if symm_mem_gib is not None else SYMM_MEM_DEFAULT_GIB
        out.append({
            "name": "symm_mem_pool",
            "bytes": int(gib * (1 << 30)),
            "note": f"--enable-symm-mem preallocates a {gib:g} GiB symmetric-memory pool (SGLANG_SYMM_MEM_PREALLOC_GB_SIZE) "
                    "at CUDA-graph setup, after the KV pools: it comes out of the slack",
        })
    if enable_hierarchical_cache:
        out.append({
            "name": "hicache_host_pools",
            "bytes": 0,
            "note": "HiCache host pools live in host memory and are sized after the device pools; no GPU bytes",
        })
    return out


def hicache_rejections(enable_hierarchical_cache: bool, disable_radix_cache: bool) -> tuple[str, str] | None:
    """`kv_cache_hook.handle_cache_compatibility`: HiCache needs the radix cache (a decode
    node turns it off unless --disaggregation-decode-enable-radix-cache)."""
    if enable_hierarchical_cache and disable_radix_cache:
        return "ValueError", (
            "The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive "
            "and cannot be used at the same time. Please use only one of them."
        )
    return None


def hicache_dcp_rejection(enable_hierarchical_cache: bool, dcp_size: int, speculative_algorithm: str | None, is_mla: bool) -> tuple[str, str] | None:
    """`hicache_hook.resolve_hicache_dcp_compatibility` (no L3 storage, LMCache or HiSparse here)."""
    if dcp_size <= 1 or not enable_hierarchical_cache:
        return None
    if speculative_algorithm is not None:
        return "NotImplementedError", (
            "HiCache with --dcp-size > 1 only supports DSPARK speculative decoding; other draft-model host pools "
            "have no DCP index translation."
        )
    if not is_mla:
        return "NotImplementedError", (
            "HiCache with --dcp-size > 1 is only supported for MLA models: the index translation lives in "
            "MLATokenToKVPoolHost, and the MHA host pool has none."
        )
    return None
