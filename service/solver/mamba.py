"""The mamba split (`KVCacheConfigurator._handle_max_mamba_cache`, `_calculate_mamba_ratio`;
`ModelRunnerKVCacheMixin.handle_max_mamba_cache` up to 0.5.15), for every release: the
release's switches come in `MambaSplitInputs` from its SizingProfile (releases/sizing.py).

All memory is a float in GiB until the KV budget's single `int(R * 2**30)`, and every
expression below keeps SGLang's operand order: the answer must match to the byte.
The pool allocates `size + 1` rows in every release: slot 0 is the padding slot CUDA-graph
padded rows write to. From 0.5.17 every charge counts K + 1 slots (the "+1" below); before,
the budget charged K (`padding_slot` False).
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


def mamba_ratio(
    *, disable_radix_cache: bool, extra_buffer: bool, lazy: bool, overlap: bool, skip_decode_lock: bool,
    rule: str = "overlap", has_spec: bool = False,
) -> int:
    """Mamba slots per running request. `rule` "spec" (0.5.8-0.5.9): the extra buffer adds 1
    with speculative decoding, else 2; "overlap" (0.5.10+): 2 with the overlap schedule, else 1."""
    if disable_radix_cache:
        return 1
    base = BASE_RATIO - (SKIP_DECODE_LOCK_DROP if skip_decode_lock else 0)
    if extra_buffer and rule == "spec":
        return base + (1 if has_spec else 2)
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
    branch: str  # "explicit" | "max_running_requests" | "default_512" (0.5.8) | "ratio"


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
    # The release's switches (SizingProfile); the defaults are 0.5.23's.
    branches: str = "three_way"  # "two_way_512" (0.5.8)
    spec_intermediate: str = "per_branch_padded"  # "upfront" (<= 0.5.12) | "per_branch" (0.5.13-0.5.16)
    padding_slot: bool = True  # 0.5.17+
    guards_min_one: bool = True  # 0.5.23: max(1, mrr // dp)
    checks_empty: bool = True  # 0.5.13+: RuntimeError when K <= 0


def split(rest_gib: float, x: MambaSplitInputs) -> MambaSplit:
    R = rest_gib
    P = x.stage_per_req
    extra = x.ring_per_slot
    D = x.num_draft_tokens
    pad = 1 if x.padding_slot else 0
    charged_intermediate = 0
    if x.has_spec and (D is None or x.max_running_requests is None):
        raise SGLangStartupError("launch_rejected", "AssertionError", "speculative decoding needs speculative_num_draft_tokens and max_running_requests")

    def per_dp(n: int) -> int:
        return max(1, n // x.attn_dp) if x.guards_min_one else n // x.attn_dp

    spec = x.reserves_spec_state
    if spec and x.spec_intermediate == "upfront":
        # <= 0.5.12: the whole --max-running-requests' intermediates, before any branch.
        assert D is not None and x.max_running_requests is not None  # spec on: checked above
        charged_intermediate = P * (x.max_running_requests // x.attn_dp) * D
        R = R - (charged_intermediate / GIB)
        spec = False  # nothing more per branch
    two_way = x.branches == "two_way_512"

    if two_way and (x.disable_radix_cache or x.max_mamba_cache_size is not None):
        # 0.5.8: explicit K, else --max-running-requests, else a fixed 512, then // dp.
        if x.max_mamba_cache_size is not None:
            branch, K0 = "explicit", x.max_mamba_cache_size
        elif x.max_running_requests is not None:
            branch, K0 = "max_running_requests", x.max_running_requests
        else:
            branch, K0 = "default_512", 512
        K = K0 // x.attn_dp
    elif x.max_mamba_cache_size is not None:
        branch = "explicit"
        K = x.max_mamba_cache_size // x.attn_dp
        if spec:
            assert D is not None and x.max_running_requests is not None  # spec on: checked above
            capped = min(per_dp(x.max_running_requests), K // x.ratio())
            charged_intermediate = P * (capped + pad) * D
            R = R - (charged_intermediate / GIB)
    elif x.disable_radix_cache and x.max_running_requests is not None:
        branch = "max_running_requests"
        K = per_dp(x.max_running_requests)
        if spec:
            assert D is not None  # spec on: checked above
            charged_intermediate = P * (K + pad) * D
            R = R - (charged_intermediate / GIB)
    else:
        branch = "ratio"
        if P <= 0:
            raise SGLangStartupError("launch_rejected", "AssertionError", "mamba state per request is 0 bytes: the automatic split cannot size it")
        r = x.mamba_full_memory_ratio
        budget_bytes = R * r / (1 + r) * GIB
        if spec:
            # Joint solve of K (+ 1) state rows and (K / ratio + 1) intermediate rows.
            assert D is not None and x.max_running_requests is not None  # spec on: checked above
            ratio = x.ratio()
            if x.padding_slot:
                K = int((budget_bytes - P * (1 + D) - extra) // (P * (1 + D / ratio) + extra))
            else:
                K = int(budget_bytes // (P * (1 + D / ratio)))
            capped = min(per_dp(x.max_running_requests), K // ratio)
            charged_intermediate = P * (capped + pad) * D
            R = R - (charged_intermediate / GIB)
        elif x.padding_slot:
            per_slot = P + extra
            K = int((budget_bytes - x.replay_fixed_bytes - per_slot) // per_slot)
        else:
            K = int(budget_bytes // P)

    # Before 0.5.13 nothing checks K here: a K <= 0 flows on (its negative charge included)
    # and the token count or max_num_reqs then tells (requests.py, kv.py).
    if K <= 0 and x.checks_empty:
        detail = (
            f"Computed max_mamba_cache_size={K} "
            f"(total_rest_memory={R:.2f} GB, "
            f"mamba_cache_per_req={P / MIB:.2f} MB). "
        )
        raise SGLangStartupError(
            "mamba_cache_too_small",
            "RuntimeError",
            "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
            + detail +
            "Try: (1) reduce --max-running-requests, "
            "(2) increase --mem-fraction-static, "
            "(3) reduce --speculative-num-draft-tokens, or "
            "(4) use GPUs with more memory.",
        )
    charged_state = (K + pad) * (P + extra) + x.replay_fixed_bytes
    return MambaSplit(
        max_mamba_cache_size=K,
        rest_after_gib=R - charged_state / GIB,
        rest_before_state_gib=R,
        charged_state_bytes=charged_state,
        charged_intermediate_bytes=charged_intermediate,
        branch=branch,
    )
