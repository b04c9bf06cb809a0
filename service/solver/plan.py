"""The planning pipeline: SGLang 0.5.23's start-up sizing of one request on one model
layout, stage by stage. `solve.py` adds the remedies; `service/planner.py` resolves presets
(this package never imports mambasizer.service.presets).

    resolve launch flags  (launch.py)
 A  R0 = rest memory      (budget.py)
 B  mamba split -> K, R1  (mamba.py, PP share from stages.py)
 C  R1 <= 0 -> error; budget = int(R1 * 2**30)
 D  tokens per stage      (kv.py)
 E  user cap, MIN across stages, second page floor (kv.py)
 F  max_running_requests  (requests.py)
 H  pp_max_micro_batch_size
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from pydantic import ValidationError

from mambasizer.schemas.plan import (
    DecodePool,
    Plan,
    PlanDevice,
    PlanError,
    ResolvedArgs,
    SlackConsumer,
    Stage,
)
from mambasizer.schemas.releases import DEFAULT_RELEASE
from mambasizer.schemas.request import HFConfigModel, LayoutModel, PlanRequest, ServerArgs
from mambasizer.service.solver import (
    allocation,
    budget,
    dcp,
    dflash,
    disaggregation,
    gpu_budget,
    int8_checkpoint,
    kv,
    mamba,
    requests,
    stages,
    wide_ep,
)
from mambasizer.service.solver.checkpoint_quant import resolve_kv_auto
from mambasizer.service.solver.errors import PlanInputError, SGLangStartupError
from mambasizer.service.solver.families import layout_from_explicit, layout_from_hf_config
from mambasizer.service.solver.launch import Launch, resolve
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.releases.registry import base_release
from mambasizer.service.solver.releases.sizing import (
    SizingProfile,
    architecture_first_release,
    reference_of,
    sizing_profile,
)
from mambasizer.service.solver.specs import StateSpec

GIB = 1 << 30


@dataclass
class _Partial:
    """What the pipeline knew when SGLang would have raised."""

    rest_gib: float | None = None
    ratio: int | None = None
    per_req_full: int = 0
    stage_per_req: int = 0
    split: mamba.MambaSplit | None = None
    budget_bytes: int | None = None
    cells: list[int] | None = None
    stage_tokens: list[int | None] | None = None
    tokens: int | None = None
    limit: requests.RequestLimit | None = None
    micro: int | None = None
    estimate: gpu_budget.EstimatedBudget | None = None
    # The int8 mamba checkpoint pool: the largest stage's, and the least slack it leaves (None: unknown).
    checkpoint: int8_checkpoint.CheckpointPool | None = None
    checkpoint_slack_left: int | None = None
    checkpoint_checked: bool = False  # some rank's free memory was known


# Preset layouts are built once: the request path re-validates nothing it has seen.
_PRESET_LAYOUTS: dict[str, ModelLayout] = {}


def preset_layout(name: str, hf_config: Mapping[str, Any]) -> ModelLayout:
    """The layout of the preset `name` (its `hf_config`), built on first use and kept for the
    process. The caller (service/planner.py) looks the preset up: the solver knows no names."""
    layout = _PRESET_LAYOUTS.get(name)
    if layout is None:
        try:
            layout = layout_from_hf_config(dict(hf_config), name=name, path="config")
        except PlanInputError as exc:
            # Only unverified presets can get here (allow_unverified): their file is incomplete.
            raise PlanInputError("model.preset", f"preset {name!r} cannot be sized: its {exc.field}: {exc.message}") from None
        # A preset's layout lives for the process: its state shapes, a pure function of
        # (tp, dtypes), are computed once per combination (StateSpec is immutable).
        # `kv_cache_dtype=auto` reads only the preset's (immutable) config: resolved once too.
        layout = layout._replace(
            state_at=lru_cache(maxsize=32)(layout.state_at),
            kv_auto=resolve_kv_auto(layout.hf_config, layout.hf_text_config, layout.model_dtype),
        )
        _PRESET_LAYOUTS[name] = layout
    return layout


def inline_layout(model: HFConfigModel | LayoutModel) -> ModelLayout:
    """The layout of a model the request carries (a pasted config or an explicit layout)."""
    if isinstance(model, HFConfigModel):
        return layout_from_hf_config(model.hf_config)
    assert isinstance(model, LayoutModel)
    return layout_from_explicit(model.layout)


def parse_request(request: PlanRequest | dict | Any) -> PlanRequest:
    if isinstance(request, PlanRequest):
        return request
    try:
        return PlanRequest.model_validate(request)
    except ValidationError as exc:
        raise input_error_from_validation(exc) from None


# Tagged unions put their tag into pydantic's error location ("model.layout.layout.kv.mha.
# head_dim"); the field path a user must fix is the one in their JSON ("model.layout.kv.head_dim").
_UNION_TAGS = {"model": {"hf_config", "preset", "layout"}, "kv": {"mha", "mla"}}


def _without_union_tags(loc: tuple) -> list:
    out: list = []
    for i, part in enumerate(loc):
        if i > 0 and part in _UNION_TAGS.get(loc[i - 1], ()) and (loc[i - 1] != "model" or i == 1):
            continue
        out.append(part)
    return out


def input_error_from_validation(exc: ValidationError) -> PlanInputError:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in _without_union_tags(err["loc"])) or "request"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown field (not part of the PlanRequest contract)"
    allowed = None
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        allowed = [a.strip(" '\"") for a in str(ctx["expected"]).replace(" or ", ",").split(",") if a.strip(" '\"")]
    return PlanInputError(loc, msg, allowed)


def _refuse_vllm_fields(req: PlanRequest) -> None:
    """Engine "vllm"'s fields on an SGLang request: refused by field on every path (plan, and
    the sweeps and searches that re-plan)."""
    if req.vllm_args is not None:
        raise PlanInputError("vllm_args", "applies to engine \"vllm\"; set engine to \"vllm\" or pass SGLang flags in server_args / sglang_args")
    if req.budget.kv_cache_memory_gib is not None:
        raise PlanInputError(
            "budget.kv_cache_memory_gib",
            "is vLLM's measured figure; set engine to \"vllm\", or give SGLang's rest_gib / free_gib_before_load + free_gib_after_load",
        )


def _resolve(req: PlanRequest, layout: ModelLayout) -> Launch:
    _refuse_vllm_fields(req)
    b = req.budget
    check_release(req, layout)
    return resolve(
        layout,
        req.server_args,
        req.env,
        gpu_memory_mib=gpu_budget.capacity_mib(req),
        draft_layers=req.draft_model.num_layers if req.draft_model else None,
        needs_mfs=b.rest_gib is None,
        release=req.sglang_version,
        plat=gpu_budget.platform_of(req),
        draft=dflash.DraftGeometry(**req.draft_model.model_dump(exclude={"hf_config"})) if req.draft_model else None,
    )


def check_release(req: PlanRequest, layout: ModelLayout) -> SizingProfile:
    """The request's release profile; refuses a model class the release cannot load and a
    path its sizing rules are not modelled for, naming the release."""
    profile = sizing_profile(req.sglang_version)
    if layout.architecture not in profile.architectures:
        first = architecture_first_release(layout.architecture)
        since = f"it is loadable from SGLang {first} on" if first else "no release from 0.5.8 on sizes it"
        raise PlanInputError(
            "sglang_version",
            f"SGLang {req.sglang_version} cannot load {layout.architecture} ({layout.family}): {since}; "
            "choose a later sglang_version",
        )
    if req.server_args.enable_linear_replayssm_spec and not profile.replayssm_sized:
        raise PlanInputError(
            "server_args.enable_linear_replayssm_spec",
            f"the ReplaySSM spec-verify ring is sized here from SGLang 0.5.20 on, not for {req.sglang_version} "
            "(0.5.17-0.5.19 charge a per-slot ring of another formula); choose sglang_version 0.5.20 or later",
        )
    if base_release(req.sglang_version) != DEFAULT_RELEASE:
        if req.server_args.kv_cache_dtype in ("mxfp8", "nvfp4", "fp4_mx_block16"):
            raise PlanInputError(
                "server_args.kv_cache_dtype",
                f"{req.server_args.kv_cache_dtype} is modelled for SGLang {DEFAULT_RELEASE} only; drop it or choose "
                f"sglang_version {DEFAULT_RELEASE}",
            )
        for name in RELEASE_0_5_23_ONLY:
            value = getattr(req.server_args, name)
            if value != ServerArgs.model_fields[name].default:
                raise PlanInputError(
                    f"server_args.{name}",
                    f"is modelled for SGLang {DEFAULT_RELEASE} only (its resolution in {req.sglang_version} is not "
                    f"conformance-tested here); drop it or choose sglang_version {DEFAULT_RELEASE}",
                )
    return profile


# Launch features whose resolution and sizing are conformance-tested on 0.5.23's code only.
RELEASE_0_5_23_ONLY = (
    "enable_int8_mamba_checkpoint", "int8_mamba_ckpt_size", "mamba_max_states_per_path", "linear_attn_backend",
    "linear_attn_decode_backend", "linear_attn_prefill_backend", "linear_attn_verify_backend",
    "enable_deterministic_inference",
)


def replan(req: PlanRequest, layout: ModelLayout) -> Plan:
    """Resolve and run the pipeline alone (no remedies): what the remedy search repeats.
    Raises PlanInputError like solve()."""
    return _run(req, layout, _resolve(req, layout), sensitivity=False)


def run(req: PlanRequest, layout: ModelLayout) -> tuple[Plan, Launch]:
    """The pipeline's plan (no remedies yet) and the launch it resolved (solve.py's input)."""
    launch = _resolve(req, layout)
    return _run(req, layout, launch), launch


def stage_split(req: PlanRequest, layout: ModelLayout, pp_size: int) -> tuple[stages.StageRange, ...]:
    """The request's PP stages (raises PlanInputError for a bad partition)."""
    partition = stages.parse_partition(req.env.SGLANG_PP_LAYER_PARTITION, pp_size, layout.num_hidden_layers)
    return stages.pp_stages(layout.num_hidden_layers, pp_size, partition, layout.mamba_layer_ids, layout.full_attention_layer_ids)


def _state(layout: ModelLayout, launch: Launch) -> StateSpec:
    state_tp = launch.tp_size if layout.state_tp == "tp" else launch.attn_tp_size
    return layout.state_at(state_tp, launch.conv_dtype, launch.ssm_dtype)


class Sized(NamedTuple):
    """The figures of a plan SGLang would start, without the Plan around them."""

    max_running_requests: int
    max_total_num_tokens: int
    binding_limit: str


def sized(req: PlanRequest, layout: ModelLayout, stage_ranges: tuple[stages.StageRange, ...] | None = None) -> Sized | None:
    """`replan(req, layout)`'s headline figures when it is feasible, else None, without
    assembling the Plan: what the remedy and advice searches ask up to ~40 times per plan,
    so a candidate costs one pass over the stages even at 1,024 stages. `stage_ranges`:
    the request's split, when the caller holds it (the searches never change pp_size or
    the partition). tests/solver/test_errors_and_remedies.py checks it against replan()."""
    try:
        launch = _resolve(req, layout)
        if launch.rejections:
            return None
        ranges = stage_ranges if stage_ranges is not None else stage_split(req, layout, launch.pp_size)
        p = _Partial()
        _estimate(req, layout, launch, ranges, p)
        _pipeline(req, layout, launch, ranges, _state(layout, launch), req.accounting == "whole-model", p, [])
    except (PlanInputError, SGLangStartupError):
        return None
    assert p.limit is not None and p.tokens is not None  # _pipeline sets both or raises
    return Sized(p.limit.max_running_requests, p.tokens, p.limit.binding_limit)


def _estimate(req: PlanRequest, layout: ModelLayout, launch: Launch, stage_ranges, p: _Partial) -> tuple[int, ...] | None:
    """The GPU-only budget's weights per stage, with `p.estimate` set from them; None (and
    nothing set) for a measured budget. Weights are cached per layout and parallelism."""
    if not req.budget.estimated:
        return None
    weights = gpu_budget.request_weights(req, layout, launch, stage_ranges)
    p.estimate = gpu_budget.for_request(req, launch, weights)
    return weights


def starts(req: PlanRequest, layout: ModelLayout, stage_ranges: tuple[stages.StageRange, ...] | None = None) -> bool:
    """Whether SGLang would start `req` (see `sized`)."""
    return sized(req, layout, stage_ranges) is not None


def _run(req: PlanRequest, layout: ModelLayout, launch: Launch, sensitivity: bool = True) -> Plan:
    """The pipeline and the Plan. `sensitivity`: also re-plan the estimated budget with 2%
    more (or fewer) weights to warn when the estimate decides feasibility (off for the
    remedy search's re-plans, whose answers only say whether a change starts)."""
    whole_model = req.accounting == "whole-model"
    stage_ranges = stage_split(req, layout, launch.pp_size)
    state = _state(layout, launch)
    warnings = list(launch.warnings)
    p = _Partial()
    error: SGLangStartupError | None = None
    if launch.rejections:
        first = launch.rejections[0]
        error = SGLangStartupError("launch_rejected", first.exception, first.message)
    weights = _estimate(req, layout, launch, stage_ranges, p)
    if weights is not None:
        warnings.extend(gpu_budget.request_warnings(req))
    try:
        _pipeline(req, layout, launch, stage_ranges, state, whole_model, p, warnings)
    except SGLangStartupError as exc:
        error = error or exc
    if sensitivity and weights is not None and not launch.rejections:
        note = _sensitivity(req, layout, launch, stage_ranges, state, whole_model, weights, started=error is None)
        if note:
            warnings.append(note)
    return _assemble(req, layout, launch, stage_ranges, state, p, warnings, error)


# ------------------------------------------------------------------ the estimated budget


def _sensitivity(req, layout, launch, stage_ranges, state, whole_model, weights, started: bool) -> str | None:
    """Does the estimate decide feasibility? Re-run the pipeline with 2% more weights (when
    the plan starts) or 2% fewer (when it does not)."""
    scale = 1 + gpu_budget.WEIGHTS_SENSITIVITY if started else 1 - gpu_budget.WEIGHTS_SENSITIVITY
    q = _Partial(estimate=gpu_budget.for_request(req, launch, weights, scale))
    try:
        _pipeline(req, layout, launch, stage_ranges, state, whole_model, q, [])
        other = True
    except SGLangStartupError:
        other = False
    if other == started:
        return None
    pct = round(gpu_budget.WEIGHTS_SENSITIVITY * 100)
    if started:
        return (
            f"mambasizer: the estimate decides feasibility: this plan starts with the estimated weights and "
            f"residents but would not with {pct}% more weights. Measure free_gib_before_load / free_gib_after_load "
            "on one boot (or set budget.reserved_gib) and re-plan before relying on it."
        )
    return (
        f"mambasizer: the estimate decides feasibility: this plan does not start with the estimated weights but "
        f"would with {pct}% fewer. Measure free_gib_before_load / free_gib_after_load on one boot and re-plan."
    )


def _pipeline(req, layout, launch: Launch, stage_ranges, state: StateSpec, whole_model: bool, p: _Partial, warnings: list[str]) -> None:
    b = req.budget
    prof = sizing_profile(req.sglang_version)
    free_before, free_after = b.free_gib_before_load, b.free_gib_after_load
    if p.estimate is not None:
        est = p.estimate
        if min(est.stage_free_after_bytes) < 0:
            s = est.min_stage
            raise SGLangStartupError(
                "weights_do_not_fit", "torch.OutOfMemoryError",
                f"CUDA out of memory while loading the weights: PP stage {s}'s largest rank needs "
                f"{est.stage_weights_bytes[s] / GIB:.2f} GiB of parameters but has {est.free_before_bytes / GIB:.2f} GiB free "
                f"before the load (estimated on a {est.capacity_mib} MiB GPU). Use more GPUs (tp_size / pp_size) or a larger GPU.",
            )
        free_before, free_after = est.free_before_gib, est.free_after_gib
    # A: the rest handed to the mamba split.
    if b.rest_gib is not None:
        p.rest_gib = b.rest_gib
    else:
        assert launch.mem_fraction_static is not None  # resolved with needs_mfs (no rest_gib)
        p.rest_gib = budget.rest_gib(free_before, free_after, launch.mem_fraction_static,
                                      layout.is_multimodal and prof.multimodal_reservation,
                                      cuda_ipc=bool(req.env.SGLANG_USE_CUDA_IPC_TRANSPORT))

    # B: the mamba split, charged at the largest stage's share.
    has_spec = launch.speculative_algorithm is not None

    def ratio() -> int:
        p.ratio = mamba.mamba_ratio(
            disable_radix_cache=launch.disable_radix_cache, extra_buffer=launch.extra_buffer,
            lazy=launch.extra_buffer_lazy, overlap=not launch.disable_overlap_schedule,
            skip_decode_lock=launch.skip_decode_lock and prof.skip_decode_lock_env,
            rule=prof.ratio_rule, has_spec=has_spec,
        )
        return p.ratio

    n_mamba = len(layout.mamba_layer_ids)
    p.per_req_full = state.bytes_per_layer * n_mamba
    # Before 0.5.17 every stage charged the whole model's state (`whole-model` keeps that on any release).
    scale = stages.largest_stage_scale(n_mamba, stage_ranges, whole_model or not prof.pp_scale)
    p.stage_per_req = int(p.per_req_full * scale)
    replay = launch.replayssm_spec and layout.linear_kind in ("gdn", "kda")
    ring = state.replayssm_ring_bytes_per_layer(launch.replayssm_cache_len) * n_mamba if replay else 0
    ring = int(ring * scale)
    if replay and layout.linear_kind != "kda":
        if launch.max_running_requests is None:
            raise SGLangStartupError("launch_rejected", "TypeError", "ReplaySSM spec sizing needs max_running_requests")
        fixed, per_slot = ring * (max(1, launch.max_running_requests // launch.attn_dp_size) + 1), 0
    else:
        fixed, per_slot = 0, ring
    p.split = mamba.split(
        p.rest_gib,
        mamba.MambaSplitInputs(
            stage_per_req=p.stage_per_req, ratio=ratio, mamba_full_memory_ratio=launch.mamba_full_memory_ratio,
            attn_dp=launch.attn_dp_size, max_mamba_cache_size=launch.max_mamba_cache_size,
            max_running_requests=launch.max_running_requests, disable_radix_cache=launch.disable_radix_cache,
            has_spec=has_spec, num_draft_tokens=launch.num_draft_tokens,
            reserves_spec_state=has_spec and not replay and launch.reserves_spec_state, ring_per_slot=per_slot, replay_fixed_bytes=fixed,
            branches=prof.mamba_branches, spec_intermediate=prof.spec_intermediate, padding_slot=prof.padding_slot,
            guards_min_one=prof.guards_min_one, checks_empty=prof.checks_empty_state_cache,
        ),
    )
    # C: the non-positive rest check, then the single float -> bytes conversion.
    rest = p.split.rest_after_gib
    if rest <= 0 and prof.checks_rest_after_split:
        raise budget.no_memory_for_kv(free_before, free_after, launch.mem_fraction_static, rest)
    # Before 0.5.14 a non-positive rest goes on to the token count, which floors to <= 0.
    p.budget_bytes = int(rest * GIB)

    # D: tokens per stage.
    has_full = bool(layout.full_attention_layer_ids)
    p.cells, p.stage_tokens = [], []
    raw_tokens = []
    by_full: dict[int, tuple[int, int]] = {}  # stages with as many full layers get the same cell and tokens
    # The draft's KV: none before 0.5.14, and 0.5.14-0.5.19 only with a separate draft model.
    prices_draft = launch.prices_draft_kv and prof.eagle_cell != "none" and (
        req.draft_model is not None or not prof.eagle_cell_needs_draft_path)
    if not prof.zero_cell_stage:
        # <= 0.5.16: a rank without a full-attention layer divides by its zero cell while it
        # profiles, before any rank's token count is checked.
        for s in stage_ranges:
            if not s.full_attention_layer_ids:
                kv.stage_tokens(0, 0, page_size=1, kv_on_another_stage=True, max_total_tokens=None,
                                context_len=launch.context_len, zero_cell_stage=False, pp_rank=s.pp_rank)
    for s in stage_ranges:
        n_full = len(s.full_attention_layer_ids)
        if n_full not in by_full:
            cell = kv.stage_cell_bytes(
                layout.kv, local_full_layers=n_full, itemsize=launch.kv_itemsize, attn_tp=launch.attn_tp_size,
                draft_layers=launch.draft_kv_layers, prices_draft_kv=prices_draft, eagle_cell=prof.eagle_cell,
                attn_dcp=launch.dcp_size, mxfp8=launch.kv_cache_dtype == "mxfp8",
            )
            if launch.dflash_draft_cell and cell > 0:
                # scale_kv_cell_size_per_token_for_dflash: target + the draft's own cell.
                cell += launch.dflash_draft_cell
            on_other = cell == 0 and has_full and launch.pp_size > 1
            by_full[n_full] = cell, kv.stage_tokens(
                p.budget_bytes, cell, page_size=launch.page_size, kv_on_another_stage=on_other,
                max_total_tokens=launch.max_total_tokens, context_len=launch.context_len,
                zero_cell_stage=prof.zero_cell_stage, pp_rank=s.pp_rank,
            )
        cell, t = by_full[n_full]
        p.cells.append(cell)
        raw_tokens.append(t)
        p.stage_tokens.append(None if t >= kv.INT64_MAX - launch.page_size else t)

    # E: user cap, MIN across stages, re-floor.
    p.tokens, cap_warnings = kv.synced_tokens(raw_tokens, max_total_tokens=launch.max_total_tokens, page_size=launch.page_size)
    warnings.extend(cap_warnings)

    # F: max_running_requests (per attention-DP worker).
    # <= 0.5.9 estimate from the profiled (stage 0's, before cap / floor / MIN) token count.
    profiled = (p.budget_bytes // p.cells[0]) if p.cells and p.cells[0] else p.tokens
    p.limit = requests.resolve_max_running_requests(
        p.tokens, context_len=launch.context_len, max_running_requests=launch.max_running_requests,
        user_set_mrr=launch.user_set_max_running_requests, attn_dp=launch.attn_dp_size,
        max_mamba_cache_size=p.split.max_mamba_cache_size, ratio=ratio(),
        rule=prof.max_num_reqs_rule, profiled_tokens=profiled,
        spec_with_dp_attention=has_spec and launch.attn_dp_size > 1,
        checks_empty=prof.checks_empty_state_cache, warns_mamba_cap=prof.warns_mamba_cap,
    )
    warnings.extend(p.limit.warnings)
    # TpModelWorker's start-up validation after the pools are allocated.
    if min(launch.context_len - 1, p.tokens - 1) <= 0:
        raise SGLangStartupError("not_enough_memory", "AssertionError", "Memory pool size is too small")
    if p.tokens < launch.context_len:
        warnings.append(
            f"mambasizer: max_total_num_tokens={p.tokens} is below the context length {launch.context_len}: "
            "a single request at full context cannot fit in the KV cache."
        )
    # H: the scheduler's micro-batch size.
    p.micro = requests.pp_max_micro_batch_size(p.limit.max_running_requests, launch.pp_size, launch.pp_max_micro_batch_size)
    # I: the int8 mamba checkpoint pool, built after the split and before the KV pool.
    if launch.int8_checkpoint:
        free_after_bytes = None if p.estimate is not None or free_after is None else int(free_after * GIB)
        _checkpoint_pool(req, layout, launch, stage_ranges, state, p, free_after_bytes)


def _checkpoint_pool(req, layout: ModelLayout, launch: Launch, stage_ranges, state: StateSpec, p: _Partial, free_after_bytes: int | None) -> None:
    """Each rank's int8 checkpoint pool against the free memory it is allocated from (the
    probe's free memory after load, less the request table and mamba pools built before it),
    then the KV pool against what it leaves (int8_checkpoint.py)."""
    assert p.split is not None and p.limit is not None and p.tokens is not None
    K = p.split.max_mamba_cache_size
    slots = int8_checkpoint.slots(K, launch.int8_checkpoint_size)
    inputs = _stage_inputs(req, layout, launch, stage_ranges, state, K, p.limit.max_running_requests, p.tokens)
    for i, (s, x) in enumerate(zip(stage_ranges, inputs, strict=True)):
        pool = int8_checkpoint.pool_bytes(state, x.local_mamba_layers, slots)
        if p.checkpoint is None or pool.total > p.checkpoint.total:
            p.checkpoint = pool
        stage_free = p.estimate.stage_free_after_bytes[i] if p.estimate is not None else free_after_bytes
        if stage_free is None:
            continue
        p.checkpoint_checked = True
        built = allocation.stage_pool_bytes(x)
        kv_bytes = built.get("kv_pool", 0)
        free = stage_free - sum(v for k, v in built.items() if k != "kv_pool")
        if int8_checkpoint.refuses(pool, free):
            raise SGLangStartupError("checkpoint_pool_does_not_fit", "RuntimeError", int8_checkpoint.too_large_message(pool, free))
        if kv_bytes > free - pool.total:
            raise SGLangStartupError("checkpoint_pool_does_not_fit", "torch.OutOfMemoryError",
                                     int8_checkpoint.kv_oom_message(pool, kv_bytes, free, s.pp_rank))
        left = free - pool.total - kv_bytes
        if p.checkpoint_slack_left is None or left < p.checkpoint_slack_left:
            p.checkpoint_slack_left = left


def _stage_inputs(req, layout: ModelLayout, launch: Launch, stage_ranges, state: StateSpec, K: int, N: int, T: int, device_kind: Literal["cuda", "cpu"] = "cuda") -> list[allocation.StageAllocationInputs]:
    """What each stage's pools are built from (SIZING_SPEC §2.8, §4.1)."""
    has_spec = launch.speculative_algorithm is not None
    Dm = launch.num_draft_tokens or 0
    r2t_extra = allocation.req_to_token_extra(
        Dm, has_spec, launch.page_size,
        launch.speculative_num_steps or 3, launch.speculative_eagle_topk or 1,
        has_draft_kv=launch.speculative_algorithm != "NGRAM",
    )
    # The pool gets the ReplaySSM flag only for GDN / KDA models (kv_cache_configurator).
    replay = launch.replayssm_spec and layout.linear_kind in ("gdn", "kda")
    # Only the layer counts differ between stages: stages with equal counts share one input.
    built: dict[tuple[int, int], allocation.StageAllocationInputs] = {}
    out = []
    for s in stage_ranges:
        counts = (len(s.mamba_layer_ids), len(s.full_attention_layer_ids))
        if counts not in built:
            built[counts] = allocation.StageAllocationInputs(
                state=state, local_mamba_layers=counts[0],
                local_full_layers=counts[1], kv=layout.kv,
                kv_dtype=launch.kv_cache_dtype, attn_tp=launch.attn_tp_size, max_mamba_cache_size=K,
                max_running_requests=N, max_total_num_tokens=T, page_size=launch.page_size,
                context_len=launch.context_len, num_draft_tokens=Dm,
                # A prefill node allocates no speculative intermediate state (disaggregation.py).
                speculative=has_spec and launch.reserves_spec_state,
                eagle_topk=launch.speculative_eagle_topk, replayssm_spec=replay,
                replayssm_cache_len=launch.replayssm_cache_len, req_to_token_extra=r2t_extra,
                device_kind=device_kind, extra_buffer=launch.extra_buffer,
                overlap_schedule=not launch.disable_overlap_schedule, attn_dcp=launch.dcp_size,
                decode_pre_alloc=launch.decode_extra_slots if launch.disaggregation_mode == "decode" else None,
                int8_checkpoint_slots=int8_checkpoint.slots(K, launch.int8_checkpoint_size) if launch.int8_checkpoint else None,
            )
        out.append(built[counts])
    return out


def stage_allocation_inputs(req: PlanRequest, layout: ModelLayout, result: Plan, device_kind: Literal["cuda", "cpu"] = "cuda") -> list[allocation.StageAllocationInputs]:
    """The per-stage allocation inputs of a plan computed for `req` on `layout` (the worker's entry)."""
    K, N, T = result.max_mamba_cache_size, result.max_running_requests, result.max_total_num_tokens
    if K is None or N is None or T is None:
        raise ValueError("the plan's sizing did not finish (max_mamba_cache_size, max_running_requests or max_total_num_tokens is unknown)")
    launch = _resolve(req, layout)
    stage_ranges = stage_split(req, layout, launch.pp_size)
    state = _state(layout, launch)
    return _stage_inputs(req, layout, launch, stage_ranges, state, K, N, T, device_kind)


def _assemble(req, layout: ModelLayout, launch: Launch, stage_ranges, state: StateSpec, p: _Partial, warnings: list[str], error: SGLangStartupError | None) -> Plan:
    # Built with Out.trusted (no validation): every value below has its field's exact type
    # (floats stay floats), and the solver tests re-validate every plan they build.
    K = p.split.max_mamba_cache_size if p.split else None
    N = p.limit.max_running_requests if p.limit else None
    T = p.tokens
    inputs = _stage_inputs(req, layout, launch, stage_ranges, state, K, N, T) if K is not None and N is not None and T is not None else None
    out_stages = []
    charged = (p.split.charged_state_bytes + p.split.charged_intermediate_bytes) if p.split else 0
    budget_bytes = p.budget_bytes
    # Every byte figure of a stage follows from its layer counts (its pools, cell, tokens):
    # stages with equal counts share one computation.
    figures_of: dict[tuple[int, int], dict] = {}
    for i, s in enumerate(stage_ranges):
        counts = (len(s.mamba_layer_ids), len(s.full_attention_layer_ids))
        figures = figures_of.get(counts)
        if figures is None:
            pools = allocation.stage_pool_bytes(inputs[i]) if inputs is not None else {}
            cell = p.cells[i] if p.cells and i < len(p.cells) else 0
            conv, ssm = pools.get("conv_state", 0), pools.get("ssm_state", 0)
            inter, ring = pools.get("intermediate_state", 0), pools.get("replayssm_ring", 0)
            idle = 0
            if budget_bytes is not None and T is not None and p.split is not None:
                # KV capacity above the MIN, plus the mamba charge above what this stage's
                # own layers allocate (negative where SGLang allocates more than it charged).
                idle = (budget_bytes - T * cell) + (charged - (conv + ssm + inter + ring))
            figures = figures_of[counts] = {
                "stage_per_req_bytes": p.stage_per_req,
                "conv_state_bytes": conv, "ssm_state_bytes": ssm,
                "intermediate_state_bytes": inter, "replayssm_ring_bytes": ring,
                "charged_mamba_bytes": charged,
                "kv_budget_bytes": budget_bytes or 0,
                "kv_cell_bytes": cell,
                "kv_tokens": p.stage_tokens[i] if p.stage_tokens and i < len(p.stage_tokens) else None,
                "kv_pool_bytes": pools.get("kv_pool", 0),
                "req_to_token_bytes": pools.get("req_to_token", 0),
                "idle_bytes": idle,
            }
        est = p.estimate
        out_stages.append(Stage.trusted({
            "pp_rank": s.pp_rank, "start_layer": s.start, "end_layer": s.end,
            "mamba_layers": counts[0], "full_attention_layers": counts[1],
            "mamba_layer_ids": list(s.mamba_layer_ids), "full_attention_layer_ids": list(s.full_attention_layer_ids),
            **figures,
            "weights_bytes": None if est is None else est.stage_weights_bytes[i],
            "free_gib_before_load": None if est is None else est.free_before_bytes / GIB,
            "free_gib_after_load": None if est is None else est.stage_free_after_bytes[i] / GIB,
        }))
    est = p.estimate
    mfs = launch.mem_fraction_static
    resolved = ResolvedArgs.trusted({
        "tp_size": launch.tp_size, "pp_size": launch.pp_size, "attn_dp_size": launch.attn_dp_size,
        "attn_tp_size": launch.attn_tp_size, "page_size": launch.page_size, "kv_cache_dtype": launch.kv_cache_dtype,
        "kv_cache_dtype_reason": launch.kv_cache_dtype_reason,
        "mem_fraction_static": None if mfs is None else float(mfs),
        "mamba_full_memory_ratio": float(launch.mamba_full_memory_ratio),
        "mamba_radix_cache_strategy": launch.strategy, "enable_mamba_extra_buffer": launch.extra_buffer,
        "enable_mamba_extra_buffer_lazy": launch.extra_buffer_lazy, "disable_radix_cache": launch.disable_radix_cache,
        "disable_overlap_schedule": launch.disable_overlap_schedule, "max_running_requests": launch.max_running_requests,
        "max_mamba_cache_size": launch.max_mamba_cache_size, "max_total_tokens": launch.max_total_tokens,
        "speculative_algorithm": launch.speculative_algorithm, "speculative_num_draft_tokens": launch.num_draft_tokens,
        "enable_linear_replayssm_spec": launch.replayssm_spec, "context_length": launch.context_len,
        "conv_dtype": launch.conv_dtype, "ssm_dtype": launch.ssm_dtype, "draft_kv_layers": launch.draft_kv_layers,
        "draft_kv_layers_reason": launch.draft_kv_layers_reason,
        "speculative_num_steps": launch.speculative_num_steps, "speculative_eagle_topk": launch.speculative_eagle_topk,
        "attention_backend": launch.attention_backend, "gpu": launch.platform,
        "disaggregation_mode": launch.disaggregation_mode, "disaggregation_decode_extra_slots": launch.decode_extra_slots,
        "dcp_size": launch.dcp_size, "moe_a2a_backend": launch.moe_a2a_backend, "ep_size": launch.ep_size,
        "enable_two_batch_overlap": launch.enable_two_batch_overlap,
    })
    decode_report = _decode_pool_report(launch, inputs, K, warnings)
    feasible = error is None
    return Plan.trusted({
        "reference": reference_of(req.sglang_version),
        "accounting": req.accounting,
        "feasible": feasible,
        "error": None if error is None else PlanError.trusted({"kind": error.kind, "exception": error.exception, "message": error.message, "remedies": []}),
        "warnings": warnings,
        "advice": [],
        "model_name": layout.name,
        "family": layout.family,
        "resolved": resolved,
        "rest_gib": None if p.rest_gib is None else float(p.rest_gib),
        "mamba_ratio": p.ratio,
        "max_mamba_cache_size": K,
        "mamba_cache_per_req_bytes": p.per_req_full,
        "kv_budget_bytes": budget_bytes,
        "max_total_num_tokens": T,
        "max_running_requests": N,
        "pp_max_micro_batch_size": p.micro,
        "binding_limit": p.limit.binding_limit if p.limit else None,
        "budget_source": "measured" if est is None else "estimated",
        "gpu_memory_mib": gpu_budget.capacity_mib(req),
        "device": PlanDevice.trusted(gpu_budget.device_report(req)),
        "free_gib_before_load": est.free_before_gib if est is not None else req.budget.free_gib_before_load,
        "free_gib_after_load": est.free_after_gib if est is not None else req.budget.free_gib_after_load,
        "min_free_stage": None if est is None else est.min_stage,
        "logical_max_total_num_tokens": None if T is None else dcp.logical_tokens(T, launch.dcp_size),
        "decode_pool": decode_report,
        "slack_consumers": [SlackConsumer.trusted(c) for c in wide_ep.slack_consumers(
            launch.moe_a2a_backend, launch.enable_symm_mem, launch.enable_hierarchical_cache, None)]
        + ([SlackConsumer.trusted({"name": "int8_mamba_checkpoint_pool", "bytes": p.checkpoint.total,
                                   "note": int8_checkpoint.slack_note(p.checkpoint, p.checkpoint_slack_left, p.checkpoint_checked)})]
           if p.checkpoint is not None else []),
        "stages": out_stages,
    })


def _decode_pool_report(launch: Launch, inputs: list[allocation.StageAllocationInputs] | None, K: int | None, warnings: list[str]) -> DecodePool | None:
    """A decode node's request pool against the aggregated one SGLang's budget prices
    (disaggregation.py), with a warning when it allocates more than was charged."""
    if launch.disaggregation_mode != disaggregation.DECODE or not inputs or K is None:
        return None
    worst = None
    for x in inputs:
        own = allocation.stage_pool_bytes(x)
        priced = allocation.stage_pool_bytes(x._replace(decode_pre_alloc=None))
        mamba = sum(own.get(k, 0) - priced.get(k, 0) for k in ("conv_state", "ssm_state", "intermediate_state", "replayssm_ring"))
        rows = own["req_to_token"] - priced["req_to_token"]
        if worst is None or (mamba, rows) > worst[1:]:
            worst = (x, mamba, rows)
    assert worst is not None
    x, mamba, rows = worst
    pool = disaggregation.decode_pool(x.max_running_requests, K, launch.decode_extra_slots, launch.extra_buffer, not launch.disable_overlap_schedule)
    user_set = launch.decode_extra_slots_given
    note = disaggregation.over_allocation_warning(pool, K + 1, mamba, rows, user_set)
    if note:
        warnings.append(note)
    return DecodePool.trusted({
        "extra_slots": pool.pre_alloc, "request_rows": pool.request_rows,
        "mamba_rows_allocated": pool.mamba_slots + 1, "mamba_rows_charged": K + 1,
        "uncharged_mamba_bytes": mamba, "uncharged_req_to_token_bytes": rows,
        "avoid": disaggregation.avoid_flag(user_set) if (mamba > 0 or rows > 0) else "",
    })
