"""max_running_requests (`KVCacheConfigurator.resolve_max_num_reqs`), which limit set it,
and pp_max_micro_batch_size (the scheduler's default)."""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.service.solver.errors import SGLangStartupError

ESTIMATE_MIN, ESTIMATE_MAX = 2048, 4096


class RequestLimit(NamedTuple):
    max_running_requests: int
    binding_limit: str
    warnings: list[str]


def resolve_max_running_requests(
    tokens: int,
    *,
    context_len: int,
    max_running_requests: int | None,
    user_set_mrr: bool,
    attn_dp: int,
    max_mamba_cache_size: int,
    ratio: int,
) -> RequestLimit:
    warnings: list[str] = []
    estimated = int(tokens / context_len * 512)
    estimated = max(min(estimated, ESTIMATE_MAX), ESTIMATE_MIN)
    if max_running_requests is not None:
        requested = max(1, max_running_requests // attn_dp)
        n = min(requested, tokens // 2)
        binding = ("user_max_running_requests" if user_set_mrr else "speculative_default") if requested <= tokens // 2 else "kv_tokens"
    else:
        requested = None
        n = min(estimated, tokens // 2)
        binding = "estimate" if estimated <= tokens // 2 else "kv_tokens"

    cap = max_mamba_cache_size // ratio
    capped_by_mamba = cap < n
    if capped_by_mamba:
        warnings.append(
            f"max_running_requests is capped to {cap} by the mamba state "
            f"cache (max_mamba_cache_size={max_mamba_cache_size}, {ratio} state slots per "
            "request). To raise it: increase --mamba-full-memory-ratio "
            "or --max-mamba-cache-size, or halve the state size with "
            "--mamba-ssm-dtype bfloat16."
        )
        binding = "mamba_slots"
    n = min(n, cap)
    if n <= 0:
        raise SGLangStartupError(
            "state_cache_serves_no_request",
            "RuntimeError",
            "Hybrid (mamba/linear-attention) state cache is too small to serve "
            f"any requests. max_mamba_cache_size={max_mamba_cache_size}, "
            f"mamba_ratio={ratio}, resulting max_num_reqs={n}. "
            "Try: (1) reduce --max-running-requests, "
            "(2) increase --mem-fraction-static, or "
            "(3) use GPUs with more memory.",
        )
    if requested is not None and n < requested and not capped_by_mamba:
        warnings.append(
            f"max_running_requests was reduced from the requested {requested} to {n} "
            "(per dp worker) due to the available KV cache capacity."
        )
    return RequestLimit(n, binding, warnings)


def pp_max_micro_batch_size(max_running_requests: int, pp_size: int, user_value: int | None) -> int:
    # Scheduler: an unset (or falsy) value becomes max(N // pp_size, 1).
    return user_value if user_value else max(max_running_requests // pp_size, 1)
