"""max_running_requests (`KVCacheConfigurator.resolve_max_num_reqs`; the mixin's
`_resolve_max_num_reqs` 0.5.10-0.5.15, `init_memory_pool` plus the model runner's clamp up to
0.5.9), which limit set it, and pp_max_micro_batch_size (the scheduler's default). `rule` is
the release's SizingProfile.max_num_reqs_rule."""

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
    rule: str = "tokens_half_guarded",
    profiled_tokens: int | None = None,
    spec_with_dp_attention: bool = False,
    checks_empty: bool = True,
    warns_mamba_cap: bool = True,
) -> RequestLimit:
    if rule == "pool_then_runner":
        assert profiled_tokens is not None  # the pipeline passes stage 0's profiled count
        return _pool_then_runner(
            tokens, profiled_tokens, context_len=context_len, max_running_requests=max_running_requests,
            user_set_mrr=user_set_mrr, attn_dp=attn_dp, max_mamba_cache_size=max_mamba_cache_size, ratio=ratio,
            spec_with_dp_attention=spec_with_dp_attention,
        )
    warnings: list[str] = []
    estimated = _estimate(tokens, context_len)
    if max_running_requests is not None and rule == "clamp_estimated":
        # 0.5.10-0.5.13: the user's value is clamped to the estimate, silently.
        requested = max_running_requests // attn_dp
        n = min(requested, estimated)
        binding = ("user_max_running_requests" if user_set_mrr else "speculative_default") if requested <= estimated else "estimate"
        if n < requested:
            warnings.append(
                f"mambasizer: this release clamps --max-running-requests to its estimate: {requested} per dp worker "
                f"became {n} (int(max_total_num_tokens / context_len * 512) clamped to [{ESTIMATE_MIN}, {ESTIMATE_MAX}]); "
                "0.5.14 replaced the clamp by max_total_num_tokens // 2."
            )
    elif max_running_requests is not None:
        requested = max(1, max_running_requests // attn_dp) if rule == "tokens_half_guarded" else max_running_requests // attn_dp
        n = min(requested, tokens // 2)
        binding = ("user_max_running_requests" if user_set_mrr else "speculative_default") if requested <= tokens // 2 else "kv_tokens"
    else:
        requested = None
        n = min(estimated, tokens // 2)
        binding = "estimate" if estimated <= tokens // 2 else "kv_tokens"

    cap = max_mamba_cache_size // ratio
    capped_by_mamba = cap < n
    if capped_by_mamba and not warns_mamba_cap:
        binding = "mamba_slots"  # no warning before 0.5.17
    elif capped_by_mamba:
        warnings.append(
            f"max_running_requests is capped to {cap} by the mamba state "
            f"cache (max_mamba_cache_size={max_mamba_cache_size}, {ratio} state slots per "
            "request). To raise it: increase --mamba-full-memory-ratio "
            "or --max-mamba-cache-size, or halve the state size with "
            "--mamba-ssm-dtype bfloat16."
        )
        binding = "mamba_slots"
    n = min(n, cap)
    if n <= 0 and not checks_empty:
        raise _serves_nothing(max_mamba_cache_size, ratio, n)
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
    if requested is not None and n < requested and not capped_by_mamba and rule != "clamp_estimated":
        warnings.append(
            f"max_running_requests was reduced from the requested {requested} to {n} "
            "(per dp worker) due to the available KV cache capacity."
        )
    return RequestLimit(n, binding, warnings)


def _estimate(tokens: int, context_len: int) -> int:
    estimated = int(tokens / context_len * 512)
    return max(min(estimated, ESTIMATE_MAX), ESTIMATE_MIN)


def _serves_nothing(max_mamba_cache_size: int, ratio: int, n: int) -> SGLangStartupError:
    return SGLangStartupError(
        "state_cache_serves_no_request", "none (this release does not check)",
        f"mambasizer: max_running_requests resolves to {n} (max_mamba_cache_size={max_mamba_cache_size}, "
        f"mamba_ratio={ratio}); this release raises nothing here and starts a server that can run no request. "
        "Reduce --max-running-requests or raise --mem-fraction-static.",
    )


def _pool_then_runner(
    tokens: int, profiled_tokens: int, *, context_len: int, max_running_requests: int | None, user_set_mrr: bool,
    attn_dp: int, max_mamba_cache_size: int, ratio: int, spec_with_dp_attention: bool,
) -> RequestLimit:
    """0.5.8-0.5.9: `init_memory_pool` sizes the request pool from the raw
    --max-running-requests (or the estimate from the *profiled* token count), caps it by the
    mamba slots, then the model runner takes min(tokens // 2 or mrr // dp, pool)."""
    mrr = max_running_requests
    pool = mrr if mrr is not None else _estimate(profiled_tokens, context_len)
    pool_binding = ("user_max_running_requests" if user_set_mrr else "speculative_default") if mrr is not None else "estimate"
    cap = max_mamba_cache_size // ratio
    if cap < pool:
        pool, pool_binding = cap, "mamba_slots"
    if spec_with_dp_attention and mrr is not None and mrr // attn_dp < pool:
        pool = mrr // attn_dp
    wanted = tokens // 2 if mrr is None else mrr // attn_dp
    if wanted <= pool:
        n = wanted
        binding = "kv_tokens" if mrr is None else ("user_max_running_requests" if user_set_mrr else "speculative_default")
    else:
        n, binding = pool, pool_binding
    if n <= 0:
        raise _serves_nothing(max_mamba_cache_size, ratio, n)
    return RequestLimit(n, binding, [])


def pp_max_micro_batch_size(max_running_requests: int, pp_size: int, user_value: int | None) -> int:
    # Scheduler: an unset (or falsy) value becomes max(N // pp_size, 1).
    return user_value if user_value else max(max_running_requests // pp_size, 1)
