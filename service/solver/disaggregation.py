"""Prefill/decode disaggregation (`--disaggregation-mode prefill|decode`) as SGLang 0.5.23
resolves, sizes and allocates each role, for the pipeline (launch.py, plan.py) to call.

Resolution (`arg_groups/pd_disaggregation_hook.py:handle_pd_disaggregation`, run before the
memory and speculative hooks):

* decode: the radix cache is off unless `--disaggregation-decode-enable-radix-cache` (which
  turns it back on even over `--disable-radix-cache`); `disaggregation_decode_extra_slots`
  defaults to 2 x (max_running_requests // DP ranks) when that per-worker count is <= 32,
  else 0, read from the flag as given (the speculative default of 48 comes later);
* `cuda_graph_hook.apply_cuda_graph_disaggregation_roles`: decode turns the prefill graph
  off, prefill turns the decode graph off;
* `memory_hook.handle_gpu_memory_settings`: a decode node's activation tokens are
  max((max_running_requests or decode max_bs or 1) x (num_draft_tokens or 1), 2048), with
  the flags as given at that point, and no VLM adjustment; `reserve_for_graph_mb` drops the
  decode and DP-attention terms on a prefill node;
* `check_server_args`: PP with (EAGLE) speculative decoding only on a prefill node.

Sizing (`mem_cache/kv_cache_configurator.py`): a prefill node neither reserves nor allocates
the speculative intermediate state (`_pd_prefill_skips_mamba_spec_state`), so K is solved as
without speculation. A decode node builds `HybridMambaDecodeReqToTokenPool`
(`disaggregation/decode.py`): N + pre_alloc + 1 request rows, max(K, (N + pre_alloc) x
(1 + tracking slots)) mamba slots, N + pre_alloc speculative rows, none of which
`_handle_max_mamba_cache` charged beyond K: `decode_pool` says what it allocates and
`over_allocation_warning` how much slack that eats.
"""

from __future__ import annotations

from typing import NamedTuple

AGGREGATED, PREFILL, DECODE = "null", "prefill", "decode"
# Per-worker batch at or under which a decode node reserves 2x as in-transfer rows.
EXTRA_SLOTS_MAX_PER_WORKER = 32
DECODE_MIN_ACTIVATION_TOKENS = 2048


def radix_disabled(mode: str, disable_radix_cache: bool, decode_enable_radix: bool) -> bool:
    """disable_radix_cache after handle_pd_disaggregation."""
    if mode == DECODE:
        return not decode_enable_radix
    return disable_radix_cache


def decode_extra_slots(mode: str, given: int | None, max_running_requests: int | None, dp_ranks: int) -> int:
    """disaggregation_decode_extra_slots as SGLang resolves it (0 off a decode node: the
    pool that reads it is only built there)."""
    if mode != DECODE:
        return 0
    if given is not None:
        return given
    if max_running_requests is None:
        return 0
    per_worker = max(1, max_running_requests // dp_ranks)
    return per_worker * 2 if per_worker <= EXTRA_SLOTS_MAX_PER_WORKER else 0


def graph_roles(mode: str, decode_on: bool, prefill_on: bool) -> tuple[bool, bool]:
    """(decode graph, prefill graph) after apply_cuda_graph_disaggregation_roles."""
    if mode == PREFILL:
        return False, prefill_on
    if mode == DECODE:
        return decode_on, False
    return decode_on, prefill_on


def decode_activation_tokens(max_running_requests: int | None, decode_max_bs: int, num_draft_tokens: int | None) -> int:
    """A decode node's activation tokens (the flags as given: no speculative defaults yet)."""
    running = max_running_requests or decode_max_bs or 1
    return max(running * (num_draft_tokens or 1), DECODE_MIN_ACTIVATION_TOKENS)


def skips_spec_state(mode: str) -> bool:
    """`_pd_prefill_skips_mamba_spec_state` (no role switch, no unified memory, not NPU)."""
    return mode == PREFILL


def allows_pp_with_spec(mode: str) -> bool:
    return mode == PREFILL


class DecodePool(NamedTuple):
    """What HybridMambaDecodeReqToTokenPool allocates on one rank."""

    pre_alloc: int
    request_rows: int  # req_to_token rows, the padding row included
    mamba_slots: int  # the MambaPool's size (its padding slot not included)
    spec_state_rows: int  # speculative intermediate rows (padding row not included)
    tracking_slots: int


def tracking_slots(extra_buffer: bool, overlap: bool) -> int:
    """get_mamba_tracking_slots(extra_buffer, overlap, lazy=False)."""
    if not extra_buffer:
        return 0
    return 2 if overlap else 1


def decode_pool(max_running_requests: int, max_mamba_cache_size: int, pre_alloc: int, extra_buffer: bool, overlap: bool) -> DecodePool:
    track = tracking_slots(extra_buffer, overlap)
    reqs = max_running_requests + pre_alloc
    return DecodePool(
        pre_alloc=pre_alloc,
        request_rows=reqs + 1,
        mamba_slots=max(max_mamba_cache_size, reqs * (1 + track)),
        spec_state_rows=reqs,
        tracking_slots=track,
    )


def avoid_flag(user_set_extra: bool) -> str:
    if user_set_extra:
        return "--disaggregation-decode-extra-slots 0 (or lower it)"
    return "--disaggregation-decode-extra-slots 0 (or a --max-running-requests above 32 per DP rank)"


def over_allocation_warning(pool: DecodePool, charged_rows: int, extra_mamba_bytes: int, extra_rows_bytes: int, user_set_extra: bool) -> str | None:
    """The slack a decode pool eats beyond the budget, and the flag that avoids it."""
    if extra_mamba_bytes <= 0 and extra_rows_bytes <= 0:
        return None
    gib = 1 << 30
    avoid = "pass " + avoid_flag(user_set_extra)
    return (
        f"mambasizer: this decode node's HybridMambaDecodeReqToTokenPool allocates {pool.mamba_slots + 1} mamba rows where "
        f"_handle_max_mamba_cache charged {charged_rows} ({pool.pre_alloc} extra in-transfer rows, "
        f"{1 + pool.tracking_slots} slot(s) per request): {extra_mamba_bytes / gib:.2f} GiB of mamba state and "
        f"{extra_rows_bytes / gib:.3f} GiB of req_to_token rows that no budget line holds, taken from the slack SGLang "
        f"leaves for activations and CUDA graphs; to avoid it, {avoid}"
    )


def decode_radix_spec_rejection(mode: str, decode_enable_radix: bool, speculative_algorithm: str | None) -> tuple[str, str] | None:
    """`speculative_hook`: a decode node keeping its radix cache takes EAGLE-family drafts only."""
    if mode == DECODE and decode_enable_radix and speculative_algorithm not in (None, "EAGLE", "EAGLE3", "NEXTN"):
        return "ValueError", (
            "--disaggregation-decode-enable-radix-cache is incompatible with speculative decoding "
            f"(--speculative-algorithm {speculative_algorithm})"
        )
    return None
