"""Computed fixes for a plan SGLang would refuse: the smallest budget or
mem_fraction_static that starts, the largest --max-mamba-cache-size or
--max-running-requests that fits, the flag that lifts a launch rejection.

Each remedy is verified by re-running the pipeline with the change applied, so a remedy
is never a guess: it is a setting this solver proves would start.
"""

from __future__ import annotations

from typing import Any

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import PlanRequest
from mambasizer.service.solver import gpu_budget, mamba
from mambasizer.service.solver.errors import PlanInputError, SGLangStartupError
from mambasizer.service.solver.launch import Launch, activation_reserve
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.monotone import largest_int, smallest_int
from mambasizer.service.solver.plan import replan, sized, stage_split, starts


def _replan(req: PlanRequest, layout: ModelLayout) -> Plan | None:
    try:
        return replan(req, layout)
    except PlanInputError:
        return None


def _starts_with(req: PlanRequest, layout: ModelLayout, split=None) -> bool:
    return starts(req, layout, split)


def _with(req: PlanRequest, *, budget: dict | None = None, server_args: dict | None = None) -> PlanRequest:
    update: dict[str, Any] = {}
    if budget:
        update["budget"] = req.budget.model_copy(update=budget)
    if server_args:
        update["server_args"] = req.server_args.model_copy(update=server_args)
    return req.model_copy(update=update)


def _ratio_or_1(launch: Launch) -> int:
    try:
        return mamba.mamba_ratio(
            disable_radix_cache=launch.disable_radix_cache, extra_buffer=launch.extra_buffer,
            lazy=launch.extra_buffer_lazy, overlap=not launch.disable_overlap_schedule,
            skip_decode_lock=launch.skip_decode_lock,
        )
    except SGLangStartupError:
        return 1


def _slot_cap(launch: Launch, plan: Plan, asked: int) -> int:
    """An upper end for a slot-count search that no longer grows with the value asked:
    (K + 1) state rows of P bytes must fit in the rest R0 on every attention-DP worker,
    so no global K above attn_dp * (R0 // P + 1) starts. Without a known P, the value."""
    per_req = plan.stages[0].stage_per_req_bytes if plan.stages else 0
    if plan.rest_gib is None or per_req <= 0:
        return asked
    return min(asked, launch.attn_dp_size * (int(max(plan.rest_gib, 0.0) * (1 << 30)) // per_req + 2))


def remedies_for(req: PlanRequest, layout: ModelLayout, launch: Launch, plan: Plan) -> list[str]:
    out: list[str] = []
    err = plan.error
    if err is None:
        return out
    if err.kind == "launch_rejected":
        msg = err.message
        if "no_buffer only supports page_size=1" in msg:
            out.append("use --page-size 1, or --mamba-radix-cache-strategy extra_buffer (not for LFM2), or --disable-radix-cache")
        elif "Lazy extra buffer" in msg:
            out.append("use --mamba-radix-cache-strategy extra_buffer: extra_buffer_lazy needs the overlap schedule, which pipeline parallelism turns off")
        elif "extra_buffer is not supported" in msg:
            out.append("use --mamba-radix-cache-strategy no_buffer (or leave it at auto)")
        elif "context_length" in msg:
            out.append(f"use --context-length {layout.derived_context_len} or less (the model's derived context length)")
        return out

    # The searches change budgets and sizes, never pp_size or the partition: one stage split
    # serves every candidate (at 1,024 stages, splitting is most of a candidate's cost).
    try:
        split = stage_split(req, layout, launch.pp_size)
    except PlanInputError:
        split = None

    def _starts(r: PlanRequest, lay: ModelLayout) -> bool:
        return _starts_with(r, lay, split)

    b = req.budget
    if err.kind == "checkpoint_pool_does_not_fit":
        return _checkpoint_pool_remedies(req, layout, plan, _starts)
    if err.kind == "weights_do_not_fit":
        return _parallel_that_fits(req, layout)
    if b.rest_gib is not None:
        # Smallest rest (1/100 GiB steps) that starts.
        best = smallest_int(max(int(b.rest_gib * 100), 0), 1 << 27, lambda v: _starts(_with(req, budget={"rest_gib": v / 100}), layout))
        if best is not None:
            out.append(f"a rest budget of at least {best / 100:.2f} GiB starts (rest_gib={best / 100:.2f})")
    elif launch.mem_fraction_static is not None:
        base = round(launch.mem_fraction_static * 1000)
        best = smallest_int(base, 999, lambda v: _starts(_with(req, server_args={"mem_fraction_static": v / 1000}), layout))
        if best is not None and best > base:
            out.append(f"--mem-fraction-static {best / 1000:.3f} starts (the smallest value that does, all else equal)"
                       + _activation_caveat(req, layout, best / 1000))
        elif best is None:
            out.append("no --mem-fraction-static below 1.0 starts with these weights: use more GPUs (TP/PP) or GPUs with more memory")

    args = req.server_args
    if args.max_mamba_cache_size is not None:
        # Fewer than `ratio` slots per DP worker can never serve a request.
        floor = _ratio_or_1(launch) * launch.attn_dp_size
        hi = max(_slot_cap(launch, plan, args.max_mamba_cache_size), floor)
        best = largest_int(floor, hi, lambda v: _starts(_with(req, server_args={"max_mamba_cache_size": v}), layout))
        if best is not None:
            out.append(f"--max-mamba-cache-size {best} starts (the largest value that does)")
    if args.max_running_requests is not None and (args.disable_radix_cache or args.speculative_algorithm):
        best = largest_int(1, max(1, _slot_cap(launch, plan, args.max_running_requests)), lambda v: _starts(_with(req, server_args={"max_running_requests": v}), layout))
        if best is not None:
            out.append(f"--max-running-requests {best} starts (the largest value that does)")
    draft_tokens = launch.num_draft_tokens or 0
    if args.speculative_algorithm and draft_tokens > 1:
        best = largest_int(1, draft_tokens, lambda v: _starts(_with(req, server_args={"speculative_num_draft_tokens": v}), layout))
        if best is not None and best < draft_tokens:
            out.append(f"--speculative-num-draft-tokens {best} starts")
    if launch.ssm_dtype == "float32" and not _starts(req, layout):
        if _starts(_with(req, server_args={"mamba_ssm_dtype": "bfloat16"}), layout):
            out.append("--mamba-ssm-dtype bfloat16 halves the SSM state and starts")
    return out


def _activation_caveat(req: PlanRequest, layout: ModelLayout, mfs: float) -> str:
    """Empty when `mfs` leaves the GPU at least what SGLang itself reserves outside the static
    pool for this launch (activations, CUDA graphs: launch.activation_reserve, without its
    10 GiB floor); else why the fraction that starts is not proven to serve. A budget that
    names no GPU capacity cannot be checked, and says so."""
    gpu = gpu_budget.capacity_mib(req)
    release = req.sglang_version
    if gpu is None:
        return ("; SGLang's own activation reserve is not checked against it (the budget gives no GPU capacity: "
                "give budget.gpu or budget.gpu_memory_mib)")
    reserve = activation_reserve(layout, req.server_args, gpu, release=release, plat=gpu_budget.platform_of(req))
    left = gpu * (1 - mfs)
    if left >= reserve.needed:
        return ""
    auto = round((gpu - reserve.total) / gpu, 3)
    return (
        f", but it is NOT proven to serve: it leaves {left / 1024:.2f} GiB of the {gpu / 1024:.1f} GiB GPU for activations and "
        f"CUDA graphs, less than the {reserve.needed / 1024:.2f} GiB SGLang {release} reserves for them on this launch "
        "(memory_hook.handle_gpu_memory_settings: 512 MiB, 1.5 MiB per chunked-prefill token, tp_size x pp_size / 8 GiB, the "
        f"CUDA-graph buffers; its automatic value here is {auto:.3f}); expect an out-of-memory error under load: use more "
        "GPUs (TP/PP), a GPU with more memory, or a smaller --chunked-prefill-size"
    )


def _parallel_that_fits(req: PlanRequest, layout: ModelLayout) -> list[str]:
    """Estimated budget whose weights exceed the GPU: the smallest TP (then PP) multiple of
    today's that starts, each verified by a re-plan (at most 8 of them)."""
    args = req.server_args
    out: list[str] = []
    for name, flag in (("tp_size", "--tp-size"), ("pp_size", "--pp-size")):
        size = getattr(args, name)
        for _ in range(4):
            size *= 2
            if _starts_with(_with(req, server_args={name: size}), layout):
                out.append(f"{flag} {size} starts (the weights then fit; the smallest doubling that does)")
                break
    return out or ["the weights do not fit at 16x today's TP or PP on this GPU: use a larger GPU or a quantized checkpoint"]


def advice_for_target_concurrency(req: PlanRequest, layout: ModelLayout, launch: Launch, plan: Plan) -> list[str]:
    """--max-running-requests R was asked for but the mamba slots cap it: the
    --max-mamba-cache-size that reaches R (ratio x R per DP worker) and what it costs the KV
    pool, or, when that does not start, the largest size that does and what it reaches."""
    def replan_with(size: int) -> Plan | None:
        return _replan(_with(req, server_args={"max_mamba_cache_size": size}), layout)

    if launch.max_running_requests is None:  # nothing was asked for
        return []
    split = stage_split(req, layout, launch.pp_size)  # the plan was sized: the split is valid

    wanted = max(1, launch.max_running_requests // launch.attn_dp_size)
    ratio = plan.mamba_ratio or _ratio_or_1(launch)
    target = wanted * ratio * launch.attn_dp_size
    if launch.max_mamba_cache_size is not None and target <= launch.max_mamba_cache_size:
        return []
    p = replan_with(target)
    if p is not None and p.feasible:
        return [(
            f"--max-mamba-cache-size {target} reaches the requested max_running_requests {wanted} "
            f"(got {p.max_running_requests}); max_total_num_tokens then {p.max_total_num_tokens:,} "
            f"instead of {plan.max_total_num_tokens:,}"
        )]
    # Past the point where U // ratio meets max_total_num_tokens // 2 the KV cache binds
    # instead; and a pool that cannot hold one request at full context is no answer. So:
    # the largest size still mamba-bound whose KV pool holds the context length.
    floor = ratio * launch.attn_dp_size

    def useful(v: int) -> bool:
        q = sized(_with(req, server_args={"max_mamba_cache_size": v}), layout, split)
        return bool(q and q.binding_limit == "mamba_slots" and q.max_total_num_tokens >= launch.context_len)

    # No size above what the memory holds starts: the search ends there, not at the target
    # (ratio x a requested max_running_requests of up to 2^40).
    best = largest_int(floor, max(floor, _slot_cap(launch, plan, target)), useful)
    if best is None or best <= (plan.max_mamba_cache_size or 0) * launch.attn_dp_size:
        return []
    p = replan_with(best)
    assert p is not None  # best passed useful(), which replanned it
    return [(
        f"--max-mamba-cache-size {best} gives the most running requests this budget allows while the KV cache "
        f"still holds one full {launch.context_len:,}-token context: max_running_requests {p.max_running_requests} "
        f"(of the {wanted} requested), max_total_num_tokens {p.max_total_num_tokens:,}"
    )]


def _checkpoint_pool_remedies(req: PlanRequest, layout: ModelLayout, plan: Plan, starts) -> list[str]:
    """The int8 checkpoint pool does not fit beside the KV pool: fewer checkpoint slots (the
    largest count that starts), or no checkpoint pool."""
    out: list[str] = []
    K = plan.max_mamba_cache_size or 0
    asked = req.server_args.int8_mamba_ckpt_size or 2 * K
    best = largest_int(1, max(asked - 1, 1), lambda v: starts(_with(req, server_args={"int8_mamba_ckpt_size": v}), layout))
    if best is not None:
        out.append(f"--int8-mamba-ckpt-size {best} starts (the largest value that does)")
    if starts(_with(req, server_args={"enable_int8_mamba_checkpoint": False}), layout):
        out.append("drop --enable-int8-mamba-checkpoint (the radix cache then keeps its states in the active pool)")
    return out
