"""Predicted against observed: an SGLang start-up log checked against mambasizer's plan.

    result = check_log(text, hf_config=None)
    result.data        # {"sglang_version", "gpu", "ranks": [{"rank", "figures": {NAME: {logged, predicted, cause}}}]}
    result.all_match   # every predicted figure equals the logged one, every estimate is
                       # within its stated error (exit 0)

The plan request is made from the log (mambasizer.service.startlog.parse) by the request front
door (service/requests), as `POST /v1/plan` makes it from the same launch: the `server_args`
record becomes its launch line (server_args_record.py: each field away from the logging
release's parser default), read by that release's own parser, `--model-path` resolved by
`resolve_logged_model_path` (or the config.json given), and the free memory SGLang measured
before and after the weights load as the measured budget. A flag the API refuses is refused
here by the same message. Nothing else: the comparison is plan vs observed.

Beside it, per rank, `estimated` holds the second comparison (mambasizer.service.startlog.estimate):
the free memory before and after the load and the weights' usage predicted before a boot,
from the model's weights and the GPU (the `gpu` argument or the log's GPU line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES
from mambasizer.service.requests import prepare
from mambasizer.service.requests.model_path import resolve_logged_model_path
from mambasizer.service.requests.server_args_record import record_launch_line
from mambasizer.service.sglang_args import MODELLED, _flags, parse_sglang_args
from mambasizer.service.solver import gpus
from mambasizer.service.solver.releases.registry import base_release
from mambasizer.service.startlog.parse import (
    FIGURES,
    BootLog,
    BootLogError,
    parse_boot_log,
    read_mamba_refusal,
)
from mambasizer.service.startlog.release import ReleaseFinding, detect_release
from mambasizer.service.startlog.rounding import RoundingBox, box, corner_requests

GB = 1 << 30  # SGLang prints GB as bytes / 2**30 with two decimals
REFERENCE_VERSION = DEFAULT_RELEASE
ROLES = ("prefill", "decode")
GB_FIGURES = frozenset(n for n in FIGURES if n.endswith("_gb"))
MB_FIGURES = frozenset(n for n in FIGURES if n.endswith("_mb"))  # SGLang prints MB as bytes / 2**20, 2 decimals

# Figures the plan takes as input or cannot know before a boot.
NOT_PREDICTED = {
    "avail_mem_before_load_gb": "measured at boot; the plan takes it as input (the measured budget); `estimated` predicts it",
    "avail_mem_after_load_gb": "measured at boot; the plan takes it as input (the measured budget); `estimated` predicts it",
    "weight_mem_usage_gb": "inside the measured budget the plan takes as input; `estimated` predicts it",
    "available_gpu_mem_gb": "free memory after the pools, CUDA graphs and activations: graph and activation memory are not modelled",
}
_HOPPER = ("H100", "H200", "H800", "H20", "GH200")


@dataclass
class CheckResult:
    data: dict
    all_match: bool
    notes: list[str] = field(default_factory=list)
    plan: Any = None  # the plan compared with (None when there is none)
    request: dict | None = None  # the plan request rebuilt from the log (None when there is none)


class RoleMismatch(ValueError):
    """A log given for one role of a disaggregated pair is another role's."""


@dataclass
class _Context:
    """What is known about the run, and why a figure may differ."""

    request: dict | None = None
    plan: Any = None
    no_plan: str | None = None  # why nothing is predicted
    unmodelled: list[str] = field(default_factory=list)  # server_args the plan could not take
    approximations: list[str] = field(default_factory=list)
    version_cause: str | None = None
    platform_cause: str | None = None
    stage_tensors: list | None = None
    weights_cause: str | None = None  # why the weights of the logged checkpoint cannot be estimated
    release: str = DEFAULT_RELEASE  # the release whose plan is compared with
    role_source: str = "default"  # where disaggregation_mode came from
    rounding: RoundingBox | None = None  # ± GB on the printed free memory the budget takes
    corner_plans: list | None = None  # the plans at the rounding box's corners (made on first need)
    launch_warnings: list[str] = field(default_factory=list)  # the front door's notes on the launch line
    model_note: str | None = None  # which preset a suffixed model_path was taken as (resolve_logged_model_path)
    rest_input: bool = False  # the budget is the refusal's printed total_rest_memory (not predicted then)


# --------------------------------------------------------------------------- request


# SGLang flags that change what the weights load puts on the GPU, which weights.py does not model.
_WEIGHT_FLAGS = {
    "quantization": "online / explicit quantization",
    "modelopt_quant": "ModelOpt online quantization",
    "cpu_offload_gb": "part of the weights live in host memory",
    "enable_fp32_lm_head": "an FP32 lm_head",
}


def _weight_flags_cause(server_args: dict, launch: Any, release: str) -> str | None:
    _, by_dest = _flags(base_release(release))
    found = []
    for key, why in _WEIGHT_FLAGS.items():
        value = server_args.get(key)
        flag = by_dest.get(key)
        if value is not None and (flag is None or value != flag.default):
            found.append(f"{key}={value!r} ({why})")
        elif launch is not None and "--" + key.replace("_", "-") in launch.ignored:
            found.append(f"--{key.replace('_', '-')} ({why})")
    return "weights not estimated: " + "; ".join(found) if found else None


def _budget(log: BootLog, ctx: _Context) -> dict | None:
    def low(name: str) -> float | None:
        values = [f[name] for f in log.ranks.values() if name in f]
        return min(values) if values else None

    before, after, usage = low("avail_mem_before_load_gb"), low("avail_mem_after_load_gb"), low("weight_mem_usage_gb")
    rebuilt = False
    after_all = low("avail_mem_after_last_load_gb")  # set only where a rank loaded twice
    if after is not None and after_all is not None and after_all < after:
        # A draft model loaded after the target: SGLang sizes the pools after both loads.
        ctx.approximations.append(
            f"free memory after the load is the last 'Load weight end' reading ({after_all} GB, after the draft "
            f"model), not the target's ({after} GB): SGLang sizes the pools after both loads"
        )
        after = after_all
    if after is None:
        rest = low("total_rest_memory_gb")
        if rest is not None:
            # A refusal of the mamba pool prints the memory it split (R0): the budget as SGLang had it.
            ctx.rest_input = True
            ctx.approximations.append(
                f"no free-memory line: the budget is the total_rest_memory SGLang printed in its refusal ({rest} GB, "
                "2 decimals: ±0.005 GB), the memory it handed to the mamba split; what left it there (the free "
                "memory, the weights, other processes on the GPU) is not in the log"
            )
            return {"rest_gib": rest}
        ctx.no_plan = "no 'Load weight end ... avail mem=' line: the free memory SGLang measured is not in the log"
        return None
    if before is None:
        if usage is None:
            ctx.no_plan = "no 'Load weight begin' nor 'mem usage=' figure: the free memory before the load is not in the log"
            return None
        before, rebuilt = round(after + usage, 2), True
        ctx.approximations.append("free memory before the load is taken as after-load + weight usage (each printed to 0.01 GB)")
    ctx.approximations.append("free memory is SGLang's printed GB (2 decimals), not the exact bytes its probe returned")
    ctx.rounding = box(rebuilt)
    return {"free_gib_before_load": before, "free_gib_after_load": after}


def _launch_words(log: BootLog, sglang_args: list[str] | None, role: str | None, release: str) -> list[str]:
    """The launch line the plan is made from: the record's flags (record_launch_line), then the
    caller's launch arguments (for a log whose record was cut away: theirs win, as the last
    occurrence of a flag wins in SGLang's parser), then the pair's side as the role."""
    words = record_launch_line(log.server_args, release)
    if sglang_args:
        words += [str(a) for a in sglang_args]
    if role is not None and "disaggregation_mode" not in log.server_args:
        # Parsed on its own first: the role is the pair's only when the line does not set it.
        if "disaggregation_mode" not in parse_sglang_args(list(words), base_release(release)).server_args:
            words += ["--disaggregation-mode", role]
    return words


def rebuild_request(
    log: BootLog, hf_config: dict | None, ctx: _Context, sglang_args: list[str] | None = None, role: str | None = None,
    gpu: str | None = None,
) -> dict | None:
    """The plan request for the log, made by the front door (service/requests: `prepare`, the
    logging release's own parser, `--model-path` resolution) from the record's flags, the
    caller's launch arguments, the measured free memory and the GPU: the verdicts
    `POST /v1/plan` gives the same launch. A flag the API refuses is a PlanInputError naming it."""
    record = log.server_args
    words = _launch_words(log, sglang_args, role, ctx.release)
    # Read once here for the model path and the role (raises as the API does on a bad flag).
    launch = parse_sglang_args(list(words), base_release(ctx.release))
    logged = launch.server_args.get("disaggregation_mode")
    if role is not None and logged is not None and logged != role:
        raise RoleMismatch(_mismatch(role, logged))
    body: dict[str, Any] = {"sglang_version": ctx.release}
    if hf_config is not None:
        body["model"] = {"hf_config": hf_config}
    else:
        model_path = launch.model_path
        if not isinstance(model_path, str):
            ctx.no_plan = "the log has no server_args record naming model_path; pass the model's config.json"
            return None
        found = resolve_logged_model_path(model_path, launch.revision)
        if found is None:
            ctx.no_plan = f"model_path {model_path!r} matches no shipped preset; pass the model's config.json"
            return None
        ctx.model_note = found.lenient_note  # said in the answer's notes
        body["model"] = found.resolved.model
        ctx.weights_cause = found.weights_cause
    if not record and not sglang_args:
        ctx.approximations.append("no server_args record in the log: SGLang's defaults are assumed for every flag")
    budget = _budget(log, ctx)
    if budget is None:
        return None
    part = resolution_gpu(gpu, log.gpu)
    if part is not None:
        budget["gpu"] = part
    body["budget"] = budget
    body["sglang_args"] = words
    prepared = prepare(body, allow_trial=False)
    ctx.launch_warnings = list(prepared.sglang_args_warnings)
    server_args = prepared.request.server_args.model_dump(exclude_unset=True)
    ctx.weights_cause = ctx.weights_cause or _weight_flags_cause({**record, **server_args}, launch, ctx.release)
    if "disaggregation_mode" in server_args:
        caller_sets = bool(sglang_args) and "disaggregation_mode" in parse_sglang_args(
            [str(a) for a in sglang_args or []], base_release(ctx.release)).server_args
        if caller_sets:
            ctx.role_source = "launch arguments"
        elif record.get("disaggregation_mode") is not None:
            ctx.role_source = "server_args"
        elif role is not None:
            ctx.role_source = "the pair's side"
    request: dict[str, Any] = {"model": body["model"], "server_args": server_args, "budget": budget, "sglang_version": ctx.release}
    if prepared.request.env is not None:
        env = prepared.request.env.model_dump(exclude_unset=True)
        if env:
            request["env"] = env
    return request


def _mismatch(role: str, logged: Any) -> str:
    if logged == "null":
        return f"the log given as the {role} side is an aggregated server's (its server_args say disaggregation_mode 'null'): give a {role} node's log"
    return f"the log given as the {role} side is a {logged} node's (its server_args say disaggregation_mode {logged!r}): give it as the {logged} side"


# --------------------------------------------------------------------------- causes


def _version_cause(found: ReleaseFinding) -> str | None:
    """Why the release compared with may not be the one that wrote the log; None when it is."""
    if found.source == "request":
        return f"compared with SGLang {found.release} as the request names it ({found.note})" if found.note else None
    if found.source == "printed":
        return f"compared with SGLang {found.release}: {found.note}" if found.note else None
    if found.same_accounting:
        return None  # every release the log allows sizes alike
    first, last = found.candidates or (found.release, found.release)
    how = "assumed" if found.source == "assumed default" else "guessed"
    return (
        f"the SGLang release is {how} ({found.release}; the log allows {first}-{last}, whose accounting differs "
        "between releases): name it with sglang_version"
    )


def resolution_gpu(gpu: str | None, log_gpu: str | None) -> str | None:
    """The catalog part the run resolved on (the caller's `gpu` first, else the log's device
    line), named in the rebuilt budget as `budget.gpu`, so the plan resolves exactly as a
    plan with that `budget.gpu` does (backend, page, the HIP mem_fraction_static factor,
    capacity defaults); None when neither names a catalog part. A part whose capacity no
    public source confirms (mi325x, mi355x) resolves too: the rebuilt budget is the free
    memory the log measured, which needs no capacity (the solver's capacity defaults apply
    as they do to `budget.gpu` alone)."""
    for name in (gpu, log_gpu):
        part = gpus.from_device_name(name) if name else None
        if part is not None:
            return part.name
    return None


def _platform_cause(gpu: str | None) -> str | None:
    if gpu is None:
        return None
    if gpus.from_device_name(gpu) is not None:
        return None  # a catalog part: its resolution is the solver's (service/solver/platform.py)
    if any(h in gpu.upper() for h in _HOPPER):
        return None
    return f"GPU {gpu}: a platform whose resolution is not modelled (not a GET /v1/gpus part with a confirmed capacity)"


def _rounding_span(name: str, stage_index: int, predicted: Any, ctx: _Context) -> tuple[Any, Any] | None:
    """(lowest, highest) value of the figure over the log's rounding box (rounding.py): the
    plan at each corner of the printed free memory's ±; None when it cannot be bounded (no
    measured budget, or a figure the corner plans do not give)."""
    if ctx.rounding is None or ctx.request is None:
        return None
    if ctx.corner_plans is None:
        from mambasizer.service.planner import plan
        from mambasizer.service.solver import PlanInputError

        try:
            ctx.corner_plans = [plan(r) for r in corner_requests(ctx.request, ctx.rounding)]
        except PlanInputError:
            ctx.corner_plans = []
    values = [predicted]
    for corner in ctx.corner_plans:
        value, _ = _predict(name, stage_index, replace(ctx, plan=corner, stage_tensors=None))
        if value is None:
            return None
        values.append(value)
    return (min(values), max(values)) if len(values) > 1 else None


def _difference_cause(ctx: _Context, name: str, stage_index: int, logged: Any, predicted: Any) -> str:
    """Why a predicted figure differs from the logged one. The log's rounding is the cause
    only when its bound (the plan over the rounding box) reaches the logged value; otherwise
    the bound is stated and the difference is the other known causes', or not explained."""
    causes = [c for c in (ctx.version_cause, ctx.platform_cause) if c]
    if ctx.unmodelled:
        more = f" (+{len(ctx.unmodelled) - 8} more)" if len(ctx.unmodelled) > 8 else ""
        causes.append("features not modelled: " + ", ".join(ctx.unmodelled[:8]) + more)
    span = _rounding_span(name, stage_index, predicted, ctx)
    if span is not None and ctx.rounding is not None:
        lo, hi = span
        reach = f"{ctx.rounding.describe()}, which puts {name} between {lo} and {hi}"
        if lo <= logged <= hi:
            return "; ".join([f"the log's rounding: {reach}", *causes])
        rounding_text = f"the log's rounding cannot explain it ({reach})"
    else:
        rounding_text = None
    if not causes:
        part = ((ctx.request or {}).get("budget") or {}).get("gpu")
        where = part or "Hopper (assumed: neither the log nor the request names the GPU; give it as --gpu / JSON gpu)"
        head = f"not explained: SGLang {ctx.release} on {where} with these inputs should print the predicted value"
        return head + (f"; {rounding_text}" if rounding_text else "")
    return "; ".join([*causes, *([rounding_text] if rounding_text else [])])


def _estimate_cause(ctx: _Context) -> str:
    """What may move an estimated figure: the run's version, platform and unmodelled flags
    (the measured-memory approximations do not enter an estimate)."""
    causes = [c for c in (ctx.version_cause, ctx.platform_cause) if c]
    if ctx.unmodelled:
        more = f" (+{len(ctx.unmodelled) - 8} more)" if len(ctx.unmodelled) > 8 else ""
        causes.append("features not modelled: " + ", ".join(ctx.unmodelled[:8]) + more)
    return "; ".join(causes) or f"not explained: a healthy SGLang {ctx.release} boot on this GPU lands within the stated error"


# --------------------------------------------------------------------------- prediction


def _stage_index(rank: str) -> int:
    for word in rank.split():
        if word.startswith("PP") and word[2:].isdigit():
            return int(word[2:])
    return 0


def _gb(nbytes: int | None) -> float | None:
    return None if nbytes is None else float(f"{nbytes / GB:.2f}")


REST_INPUT = "the plan takes it as input (the log prints no free memory: this is its budget, as rest_gib)"
MIB = 1 << 20
_REFUSAL_FIGURES = ("computed_max_mamba_cache_size", "total_rest_memory_gb", "mamba_cache_per_req_mb")


def _refusal_figure(name: str, ctx: _Context) -> tuple[Any, str | None]:
    """A figure of SGLang's empty-mamba-pool refusal, as the plan computes it: from the plan's own
    refusal (worded as SGLang words it, read by the log's reader), else (the plan starts) the
    split it makes, which SGLang would not refuse."""
    plan = ctx.plan
    if name == "total_rest_memory_gb" and ctx.rest_input:
        return None, REST_INPUT
    if name == "mamba_cache_per_req_mb":
        return float(f"{plan.mamba_cache_per_req_bytes / MIB:.2f}"), None
    if plan.error is not None and plan.error.kind == "mamba_cache_too_small":
        figures: dict = {}
        read_mamba_refusal(plan.error.message, figures)
        return figures.get(name), None
    if not plan.feasible:
        return None, f"mambasizer predicts SGLang {ctx.release} would refuse otherwise: {plan.error.message}" if plan.error else "infeasible"
    if name == "computed_max_mamba_cache_size":
        return plan.max_mamba_cache_size, None
    return (None if plan.rest_gib is None else float(f"{plan.rest_gib:.2f}")), None


def _predict(name: str, stage_index: int, ctx: _Context) -> tuple[Any, str | None]:
    """(predicted value, why there is none)."""
    if name in NOT_PREDICTED:
        return None, NOT_PREDICTED[name]
    if ctx.plan is None:
        return None, f"cannot plan: {ctx.no_plan}"
    plan = ctx.plan
    if name in _REFUSAL_FIGURES:
        return _refusal_figure(name, ctx)
    if not plan.feasible:
        return None, f"mambasizer predicts SGLang {ctx.release} would not start: {plan.error.message}" if plan.error else "infeasible"
    if stage_index >= len(plan.stages):
        return None, f"rank is on pipeline stage {stage_index}; the plan has {len(plan.stages)}"
    stage = plan.stages[stage_index]
    if name == "max_mamba_cache_size":
        pool = getattr(plan, "decode_pool", None)
        if pool is not None:
            # A decode node's HybridMambaDecodeReqToTokenPool builds its MambaPool with
            # max(K, (N + extra slots) x slots per request), and the pool prints that size.
            return pool.mamba_rows_allocated - 1, None
        return plan.max_mamba_cache_size, None
    if name == "conv_state_gb":
        return _gb(stage.conv_state_bytes), None
    if name == "ssm_state_gb":
        return _gb(stage.ssm_state_bytes), None
    if name == "intermediate_ssm_state_gb":
        if ctx.stage_tensors is None:
            return None, "the plan's tensors could not be listed"
        return _gb(sum(t.nbytes for t in ctx.stage_tensors[stage_index] if t.name == "intermediate_ssm")), None
    if name in ("kv_tokens", "max_total_num_tokens"):
        return plan.max_total_num_tokens, None
    if name == "max_running_requests":
        return plan.max_running_requests, None
    if name == "context_len":
        return plan.resolved.context_length, None
    return None, "not predicted"


def _same(name: str, logged: Any, predicted: Any) -> bool:
    if name in GB_FIGURES or name in MB_FIGURES:
        return f"{float(logged):.2f}" == f"{float(predicted):.2f}"
    return logged == predicted


def difference(name: str, logged: Any, predicted: Any) -> Any:
    if predicted is None or logged is None:
        return None
    if name in GB_FIGURES or name in MB_FIGURES:
        return float(f"{float(predicted) - float(logged):.2f}")
    return predicted - logged


# --------------------------------------------------------------------------- entry point


def check_log(
    text: str | bytes | BootLog,
    hf_config: dict | None = None,
    sglang_args: list[str] | None = None,
    gpu: str | None = None,
    sglang_version: str | None = None,
    role: str | None = None,
) -> CheckResult:
    """Compare the log with the plan of the release that wrote it (`sglang_version` wins over
    what the log tells) and of its role (`role`: the side of a disaggregated pair it was given
    as). BootLogError (a ValueError) when the log is unreadable; RoleMismatch when the log is
    another role's; PlanInputError when the given config.json, launch arguments, GPU name or
    release cannot be used."""
    from mambasizer.service.startlog import estimate as checklog_estimate

    if gpu is not None:
        checklog_estimate.gpu_named(gpu)  # an unknown name is the caller's error, before any work
    log = text if isinstance(text, BootLog) else parse_boot_log(text)
    if not log.ranks:
        # A server_args record alone (or with the launch command) leaves nothing to compare.
        raise BootLogError(
            "the log holds a server_args record but none of the start-up figure lines to compare "
            "('Load weight end', 'Mamba Cache is allocated', 'KV Cache is allocated', 'max_total_num_tokens=')"
        )
    if sglang_version is not None and sglang_version not in SUPPORTED_RELEASES:
        from mambasizer.service.solver import PlanInputError

        raise PlanInputError("sglang_version", f"{sglang_version!r} is not a supported SGLang release", list(SUPPORTED_RELEASES))
    if role is not None:
        logged_role = log.server_args.get("disaggregation_mode")
        if isinstance(logged_role, str) and logged_role != role:
            raise RoleMismatch(_mismatch(role, logged_role))
    found = detect_release(log, sglang_version)
    platform_cause = _platform_cause(log.gpu) if resolution_gpu(gpu, None) is None else None
    ctx = _Context(version_cause=_version_cause(found), platform_cause=platform_cause, release=found.release)
    ctx.request = rebuild_request(log, hf_config, ctx, sglang_args, role, gpu)
    if ctx.request is not None:
        from mambasizer.service.planner import plan, plan_stage_tensors
        from mambasizer.service.solver import PlanInputError

        narrowed = _narrow_by_figures(log, ctx, found)
        if narrowed is not None:
            found = narrowed
            ctx.release, ctx.version_cause = found.release, _version_cause(found)
            ctx.request = {**ctx.request, "sglang_version": found.release}
        try:
            ctx.plan = plan(ctx.request)
        except PlanInputError as exc:
            if hf_config is not None and exc.field.startswith("model"):
                # The caller's config.json cannot be sized: their input, named as such.
                raise PlanInputError("hf_config", f"the config.json cannot be sized: {exc.field}: {exc.message}") from None
            ctx.no_plan = f"{exc.field}: {exc.message}"
        if ctx.plan is not None and ctx.plan.feasible:
            try:
                ctx.stage_tensors = plan_stage_tensors(ctx.request, ctx.plan)
            except ValueError:
                ctx.stage_tensors = None
    est = checklog_estimate.prepare(ctx.request, ctx.no_plan, gpu, log.gpu, ctx.platform_cause, ctx.weights_cause)
    all_match = True
    predicted_any = False
    ranks = []
    for rank in sorted(log.ranks, key=_rank_order):
        logged_figures = log.ranks[rank]
        figures: dict[str, dict] = {}
        for name in FIGURES:
            if name not in logged_figures:
                continue
            logged = logged_figures[name]
            predicted, why = _predict(name, _stage_index(rank), ctx)
            if predicted is None:
                cause = why
                if ctx.plan is not None and not ctx.plan.feasible and name not in NOT_PREDICTED and why != REST_INPUT:
                    all_match = False
            elif _same(name, logged, predicted):
                predicted_any = True
                cause = None
            else:
                predicted_any = True
                all_match = False
                cause = _difference_cause(ctx, name, _stage_index(rank), logged, predicted)
            figures[name] = {"logged": logged, "predicted": predicted, "cause": cause}
        estimated: dict[str, dict] = {}
        for name in checklog_estimate.ESTIMATED:
            if name in logged_figures:
                checked = checklog_estimate.check(name, _stage_index(rank), logged_figures[name], est, _estimate_cause(ctx))
                if checked["match"] is not None:
                    predicted_any = True
                    all_match = all_match and checked["match"]
                estimated[name] = checked
        if figures:
            ranks.append({"rank": rank, "figures": figures, "estimated": estimated})
    reading = _reading_notes(log) + ([ctx.model_note] if ctx.model_note else [])
    data = {
        "sglang_version": log.sglang_version,
        "release": _release_data(found),
        "role": _role_data(ctx, log.server_args, role),
        "gpu": log.gpu,
        "estimate_gpu": est.gpu.name if est.gpu is not None else None,
        "ranks": ranks,
        "notes": reading,
    }
    notes = [*reading, *ctx.approximations]
    if ctx.request is not None:
        shown = dict(ctx.request)
        if "hf_config" in shown["model"]:
            shown["model"] = {"hf_config": "(the config.json given)"}
        notes.insert(0, "plan request: " + json.dumps(shown, sort_keys=True))
    if found.note:
        notes.insert(0, f"release: {found.note}")
    return CheckResult(data=data, all_match=all_match and predicted_any, notes=notes, plan=ctx.plan, request=ctx.request)


def _reading_notes(log: BootLog) -> list[str]:
    """What reading the log skipped (the answer's `notes`)."""
    if not log.undecodable_bytes:
        return []
    lines = "line" if log.undecodable_lines == 1 else "lines"
    note = (
        f"{log.undecodable_bytes} byte(s) that are not UTF-8 text, in {log.undecodable_lines} {lines} check-log does not "
        "read (none of the start-up lines), were skipped"
    )
    return [note]


def _narrow_by_figures(log: BootLog, ctx: _Context, found: ReleaseFinding) -> ReleaseFinding | None:
    """A guessed release narrowed by the numbers: each accounting epoch in the range the log's
    text allows is planned (its newest release there), and when only some epochs print every
    predicted figure the log shows, the range shrinks to them. None when it does not narrow."""
    import dataclasses

    from mambasizer.service.planner import plan
    from mambasizer.service.solver import PlanInputError
    from mambasizer.service.solver.releases.registry import epoch_of

    if found.source not in ("inferred", "assumed default") or found.same_accounting or found.candidates is None:
        return None
    first, last = found.candidates
    span = list(SUPPORTED_RELEASES[SUPPORTED_RELEASES.index(first) : SUPPORTED_RELEASES.index(last) + 1])
    newest: dict[str, str] = {}
    for release in span:
        newest[epoch_of(release)] = release  # in release order: the last one wins
    matching: list[str] = []
    for epoch, release in newest.items():
        try:
            planned = plan({**(ctx.request or {}), "sglang_version": release})
        except PlanInputError:
            continue  # this release cannot load the model
        trial = dataclasses.replace(ctx, plan=planned, stage_tensors=None, release=release)
        compared = 0
        agrees = True
        for rank, figures in log.ranks.items():
            for name in FIGURES:
                if name not in figures or name == "intermediate_ssm_state_gb":
                    continue
                predicted, _ = _predict(name, _stage_index(rank), trial)
                if predicted is None:
                    continue
                compared += 1
                agrees = agrees and _same(name, figures[name], predicted)
        if compared and agrees:
            matching.append(epoch)
    if not matching or len(matching) == len(newest):
        return None  # nothing tells the epochs apart (or none prints these figures)
    kept = [r for r in span if epoch_of(r) in matching]
    chosen = DEFAULT_RELEASE if DEFAULT_RELEASE in kept else kept[-1]
    alike = "every one of them sizes alike" if len(matching) == 1 else "they do not all size alike"
    which = kept[0] if base_release(kept[0]) == base_release(kept[-1]) else f"{kept[0]}-{kept[-1]}"
    note = (
        f"the release is guessed: the log's text allows {first}-{last}, and only {which} print every "
        f"figure it shows ({alike}); compared with {chosen}"
    )
    return dataclasses.replace(
        found, release=chosen, how=f"{found.how}; the figures only {which} print", candidates=(kept[0], kept[-1]),
        same_accounting=len(matching) == 1, note=note, source="inferred",
    )


def _release_data(found: ReleaseFinding) -> dict:
    first, last = found.candidates if found.candidates else (None, None)
    return {
        "sglang_version": found.release, "source": found.source, "how": found.how,
        "candidates": None if first is None else {"first": first, "last": last, "same_accounting": bool(found.same_accounting)},
        "note": found.note,
    }


def _role_data(ctx: _Context, record: dict, role: str | None) -> dict:
    """The role the plan was made for: the rebuilt request's, else (no plan) the record's."""
    args = (ctx.request or {}).get("server_args") or {k: v for k, v in record.items() if k in MODELLED and v is not None}
    if "disaggregation_mode" in args:
        mode = args["disaggregation_mode"]
        source = ctx.role_source if ctx.role_source != "default" else "server_args"
    else:
        mode, source = role or "null", "the pair's side" if role else "default"
    return {
        "disaggregation_mode": mode,
        "source": source,
        "dcp_size": args.get("dcp_size", 1),
        "moe_a2a_backend": args.get("moe_a2a_backend", "none"),
        "enable_two_batch_overlap": bool(args.get("enable_two_batch_overlap", False)),
    }


def _rank_order(rank: str) -> tuple:
    """Ranks in SGLang's order: DP, PP, TP, then by text."""
    def num(prefix: str) -> int:
        for word in rank.split():
            if word.startswith(prefix) and word[len(prefix):].split("..")[0].isdigit():
                return int(word[len(prefix):].split("..")[0])
        return -1

    return (num("DP"), num("PP"), num("TP"), rank)
