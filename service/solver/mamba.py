"""The mamba split (`KVCacheConfigurator._handle_max_mamba_cache`, `_calculate_mamba_ratio`).

All memory is a float in GiB until the KV budget's single `int(R * 2**30)`, and every
expression below keeps SGLang's operand order: the answer must match to the byte.
The pool allocates `size + 1` rows: slot 0 is the padding slot CUDA-graph padded rows
write to, so every charge counts K + 1 slots (the "+1" below).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from mambasizer.service.solver.errors import SGLangStartupError

GIB = 1 << 30
MIB = 1 << 20
BASE_RATIO = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
SKIP_DECODE_LOCK_DROP = 1  # MAMBA_CACHE_BASE_RATIO_DROP_ON_SKIP
NO_BUFFER_SKIP_ADDEND = 1  # MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_BUFFER


def tracking_slots(*, extra_buffer: bool, overlap: bool, lazy: bool) -> int:
    """`get_mamba_tracking_slots`: ping-pong slots an extra-buffer request holds."""
    if not extra_buffer:
        return 0
    if lazy:
        return 1
    return 2 if overlap else 1


def mamba_ratio(*, disable_radix_cache: bool, extra_buffer: bool, lazy: bool, overlap: bool, skip_decode_lock: bool) -> int:
    """Mamba slots per running request."""
    if disable_radix_cache:
        return 1
    base = BASE_RATIO - (SKIP_DECODE_LOCK_DROP if skip_decode_lock else 0)
    if extra_buffer:
        if not overlap and lazy:
            raise SGLangStartupError(
                "launch_rejected",
                "AssertionError",
                "Lazy extra buffer requires overlap schedule (--disable-overlap-schedule is incompatible)",
            )
        return base + tracking_slots(extra_buffer=True, overlap=overlap, lazy=lazy)
    if skip_decode_lock:
        return base + NO_BUFFER_SKIP_ADDEND  # no_buffer stays at an effective 3
    return base


class MambaSplit(NamedTuple):
    max_mamba_cache_size: int  # K, usable slots per attention-DP worker
    rest_after_gib: float  # R1: what the KV pool gets, before int(R1 * 2**30)
    rest_before_state_gib: float  # R after the spec intermediate, before the state charge
    charged_state_bytes: int  # (K + 1) * (P + E) + FIXED
    charged_intermediate_bytes: int  # speculative intermediate rows charged
    branch: str  # "explicit" | "max_running_requests" | "ratio"


class MambaSplitInputs(NamedTuple):
    stage_per_req: int  # P: the largest stage's share of per-request bytes
    # The slots-per-request ratio, computed only where SGLang computes it (the spec
    # reservation): its lazy-buffer assertion must fire at the same point, or not at all.
    ratio: Callable[[], int]
    mamba_full_memory_ratio: float
    attn_dp: int
    max_mamba_cache_size: int | None  # --max-mamba-cache-size (global)
    max_running_requests: int | None  # resolved (user value or the spec default)
    disable_radix_cache: bool
    has_spec: bool
    num_draft_tokens: int | None
    reserves_spec_state: bool  # spec on, not ReplaySSM, not PD prefill
    ring_per_slot: int = 0  # KDA ReplaySSM ring, rides on every slot
    replay_fixed_bytes: int = 0  # GDN ReplaySSM ring, request-lifetime scratch


def split(rest_gib: float, x: MambaSplitInputs) -> MambaSplit:
    R = rest_gib
    P = x.stage_per_req
    extra = x.ring_per_slot
    D = x.num_draft_tokens
    charged_intermediate = 0
    if x.has_spec and (D is None or x.max_running_requests is None):
        raise SGLangStartupError("launch_rejected", "AssertionError", "speculative decoding needs speculative_num_draft_tokens and max_running_requests")

    if x.max_mamba_cache_size is not None:
        branch = "explicit"
        K = x.max_mamba_cache_size // x.attn_dp
        if x.reserves_spec_state:
            assert D is not None and x.max_running_requests is not None  # spec on: checked above
            capped = min(max(1, x.max_running_requests // x.attn_dp), K // x.ratio())
            charged_intermediate = P * (capped + 1) * D
            R = R - (charged_intermediate / GIB)
    elif x.disable_radix_cache and x.max_running_requests is not None:
        branch = "max_running_requests"
        K = max(1, x.max_running_requests // x.attn_dp)
        if x.reserves_spec_state:
            assert D is not None  # spec on: checked above
            charged_intermediate = P * (K + 1) * D
            R = R - (charged_intermediate / GIB)
    else:
        branch = "ratio"
        if P <= 0:
            raise SGLangStartupError("launch_rejected", "AssertionError", "mamba state per request is 0 bytes: the automatic split cannot size it")
        r = x.mamba_full_memory_ratio
        budget_bytes = R * r / (1 + r) * GIB
        if x.reserves_spec_state:
            # Joint solve of (K + 1) state rows and (K / ratio + 1) intermediate rows.
            assert D is not None and x.max_running_requests is not None  # spec on: checked above
            ratio = x.ratio()
            K = int((budget_bytes - P * (1 + D) - extra) // (P * (1 + D / ratio) + extra))
            capped = min(max(1, x.max_running_requests // x.attn_dp), K // ratio)
            charged_intermediate = P * (capped + 1) * D
            R = R - (charged_intermediate / GIB)
        else:
            per_slot = P + extra
            K = int((budget_bytes - x.replay_fixed_bytes - per_slot) // per_slot)

    if K <= 0:
        raise SGLangStartupError(
            "mamba_cache_too_small",
            "RuntimeError",
            "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
            f"Computed max_mamba_cache_size={K} "
            f"(total_rest_memory={R:.2f} GB, "
            f"mamba_cache_per_req={P / MIB:.2f} MB). "
            "Try: (1) reduce --max-running-requests, "
            "(2) increase --mem-fraction-static, "
            "(3) reduce --speculative-num-draft-tokens, or "
            "(4) use GPUs with more memory.",
        )
    charged_state = (K + 1) * (P + extra) + x.replay_fixed_bytes
    return MambaSplit(
        max_mamba_cache_size=K,
        rest_after_gib=R - charged_state / GIB,
        rest_before_state_gib=R,
        charged_state_bytes=charged_state,
        charged_intermediate_bytes=charged_intermediate,
        branch=branch,
    )
