"""`mambasizer plan`: what SGLang 0.5.23 would decide at start-up for one request.

    mambasizer plan REQUEST.json          # a readable per-stage table
    mambasizer plan --json REQUEST.json   # the Plan JSON, byte for byte what POST /v1/plan answers
    mambasizer plan - < REQUEST.json      # `-` reads stdin
    mambasizer plan PAIR.json             # {"prefill": REQUEST, "decode": REQUEST}: both sides and the pair

Exit codes: 0 SGLang would start (both sides of a pair); 1 it would not (its error and the remedies are
printed); 2 the request cannot be sized (one line: `mambasizer: error: <field>: <message>`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from mambasizer.service.cli import EXIT_OK, EXIT_WOULD_NOT_START
from mambasizer.service.cli.common import UnreadableInput, add_command, error, read_json_request
from mambasizer.service.solver.gpus import DEFAULT_GPU
from mambasizer.service.solver.releases.sizing import accounting_label, release_label

GIB = float(1 << 30)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        "plan",
        help="size one request: per-stage table, or --json for the Plan (exit 0 starts, 1 would not, 2 invalid)",
        doc=__doc__,
        epilog="exit codes: 0 SGLang would start, 1 it would not (error + remedies printed), 2 invalid input",
    )
    p.add_argument("request", metavar="REQUEST.json", help="a PlanRequest JSON file (or a prefill/decode pair of them), or `-` for stdin")
    p.add_argument("--json", action="store_true", help="print the Plan JSON exactly as POST /v1/plan returns it")
    p.set_defaults(run=run)
    return p


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / GIB:.2f} GiB"


def _num(n: Any) -> str:
    if n is None:
        return "-"
    return f"{n:,}" if isinstance(n, int) else str(n)


def render(plan: Any, ignored: list[str] | None = None, arg_warnings: Sequence[str] = ()) -> str:
    """The readable table for a Plan."""
    r = plan.resolved
    out = []
    release = release_label(plan.reference)
    verdict = f"{release} would start" if plan.feasible else f"{release} would NOT start"
    # One release label on the line: the accounting is the planned release's own.
    out.append(f"{plan.model_name} ({plan.family}), {accounting_label(plan.accounting, plan.reference)} accounting: {verdict}")
    mfs = "-" if r.mem_fraction_static is None else f"{r.mem_fraction_static:g}"
    out.append(
        f"  tp {r.tp_size}, pp {r.pp_size}, attention dp {r.attn_dp_size}, page {r.page_size}, "
        f"kv {r.kv_cache_dtype}, mem_fraction_static {mfs}, context {r.context_length:,}, "
        f"radix {('off' if r.disable_radix_cache else r.mamba_radix_cache_strategy)}, "
        f"conv/ssm {r.conv_dtype}/{r.ssm_dtype}"
        + (f", spec {r.speculative_algorithm}" if r.speculative_algorithm else "")
    )
    if r.gpu != DEFAULT_GPU:  # the default part's line stays as it always was
        out.append(f"  resolved as SGLang does on {r.gpu}: attention backend {r.attention_backend}")
    if plan.budget_source == "estimated":
        low = plan.free_gib_after_load
        out.append(
            f"  budget ESTIMATED from a {plan.gpu_memory_mib:,} MiB GPU: free before load {plan.free_gib_before_load:.2f} GiB, "
            f"after load {low:.2f} GiB (world MIN, set by pp stage {plan.min_free_stage})"
        )
    rest = "-" if plan.rest_gib is None else f"{plan.rest_gib:.4f} GiB"
    out.append(f"  rest for the mamba split {rest}, {_num(plan.mamba_ratio)} mamba slots per request, "
               f"{_num(plan.mamba_cache_per_req_bytes)} state bytes per request")
    out.append("")
    binding = f"   (binding: {plan.binding_limit})" if plan.binding_limit else ""
    rows = [
        ("max_running_requests", _num(plan.max_running_requests) + binding),
        ("max_total_num_tokens", _num(plan.max_total_num_tokens)),
        ("max_mamba_cache_size", _num(plan.max_mamba_cache_size)),
        ("pp_max_micro_batch_size", _num(plan.pp_max_micro_batch_size)),
        ("kv budget per stage", _gib(plan.kv_budget_bytes)),
    ]
    width = max(len(k) for k, _ in rows)
    out += [f"  {k:<{width}}  {v}" for k, v in rows]
    out.append("")
    header = ("pp_rank", "layers", "mamba", "attn", "weights", "mamba pool", "KV pool", "KV tokens", "req_to_token", "idle")
    table = [header]
    for s in plan.stages:
        mamba = s.conv_state_bytes + s.ssm_state_bytes + s.intermediate_state_bytes + s.replayssm_ring_bytes
        table.append((
            str(s.pp_rank), f"{s.start_layer}-{s.end_layer - 1}", str(s.mamba_layers), str(s.full_attention_layers),
            _gib(s.weights_bytes),
            _gib(mamba) if plan.feasible else "-", _gib(s.kv_pool_bytes) if plan.feasible else "-",
            _num(s.kv_tokens), _gib(s.req_to_token_bytes) if plan.feasible else "-",
            _gib(s.idle_bytes) if plan.feasible else "-",
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        out.append("  " + "  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip())
    if plan.error is not None:
        out.append("")
        out.append(f"error ({plan.error.kind}): {plan.error.exception}: {plan.error.message}")
        if plan.error.remedies:
            out.append("remedies:")
            out += [f"  - {rem}" for rem in plan.error.remedies]
    if plan.warnings:
        out.append("")
        out.append("warnings:")
        out += [f"  - {w}" for w in plan.warnings]
    if plan.advice:
        out.append("")
        out.append("advice:")
        out += [f"  - {a}" for a in plan.advice]
    if ignored:
        out.append("")
        out.append("ignored sglang_args (no effect on sizing): " + " ".join(ignored))
    if arg_warnings:
        out.append("sglang_args warnings:")
        out += [f"  - {w}" for w in arg_warnings]
    return "\n".join(out)


def render_pair(prepared: dict[str, Any], plans: dict[str, Any], summary: Any) -> str:
    """Each side's table under its role, then what the pair sustains."""
    out = []
    for role in ("prefill", "decode"):
        out.append(f"== {role} side ({summary.model_dump()[f'{role}_replicas']} replica(s))")
        out.append(render(plans[role], prepared[role].ignored_sglang_args, prepared[role].sglang_args_warnings))
        out.append("")
    fields = ("decode_concurrency", "prefill_in_flight_requests", "decode_kv_tokens", "prefill_kv_tokens",
              "decode_kv_tokens_per_request", "binding_side")
    data = summary.model_dump()
    out.append("== the pair: " + ("both sides would start" if summary.feasible else "would NOT start"))
    width = max(len(k) for k in fields)
    out += [f"  {k:<{width}}  {_num(data[k])}" for k in fields]
    out += [f"  - {n}" for n in summary.notes]
    return "\n".join(out)


def _run_pair(raw: dict, as_json: bool) -> int:
    import json

    from mambasizer.service import disaggregated
    from mambasizer.service import requests as front_door
    from mambasizer.service.solver import PlanInputError

    try:
        if as_json:
            answer = disaggregated.plan_pair(raw)
            sys.stdout.write(json.dumps(answer, separators=(",", ":"), ensure_ascii=False) + "\n")
            feasible = bool(answer["pair"]["feasible"])
        else:
            prepared, plans, replicas = disaggregated.plan_sides(raw)
            summary = disaggregated.summarize(plans, replicas)
            print(render_pair(prepared, plans, summary))
            feasible = summary.feasible
    except PlanInputError as exc:
        return error(front_door.input_error_line(exc))
    sys.stdout.flush()
    return EXIT_OK if feasible else EXIT_WOULD_NOT_START


def run(args: argparse.Namespace) -> int:
    # Imported here, not at module level: `mambasizer --help` stays fast.
    from mambasizer.schemas.vllm_plan import VllmPlan
    from mambasizer.service import disaggregated
    from mambasizer.service import requests as front_door
    from mambasizer.service.cli.vllm_render import render_vllm
    from mambasizer.service.planner import plan_engine
    from mambasizer.service.solver import PlanInputError

    try:
        raw = read_json_request(args.request)
        if disaggregated.is_pair(raw):
            return _run_pair(raw, args.json)
        prepared = front_door.prepare(raw, allow_trial=False)
        result = plan_engine(prepared.request)
    except UnreadableInput as exc:
        return error(str(exc))
    except PlanInputError as exc:
        if exc.field == "trial":
            return error("trial: is only run by the HTTP API (POST /v1/plan); remove it to plan from the command line")
        return error(front_door.input_error_line(exc))

    if isinstance(result, VllmPlan):  # engine "vllm": its own plan, the same exits
        if args.json:
            sys.stdout.write(front_door.plan_json(result).decode() + "\n")
        else:
            print(render_vllm(result))
        if not result.feasible and result.error is not None:
            print(f"mambasizer: vLLM {result.vllm_version} would not start {result.model_name}: {result.error.message}", file=sys.stderr)
        sys.stdout.flush()
        return EXIT_OK if result.feasible else EXIT_WOULD_NOT_START
    if args.json:
        body = front_door.plan_json(result)
        body = front_door.with_fields(body, prepared.extra_fields())
        sys.stdout.write(body.decode() + "\n")
        if not result.feasible and result.error is not None:
            print(f"mambasizer: SGLang {result.reference.removeprefix('sglang==')} would not start {result.model_name}: {result.error.message}", file=sys.stderr)
            for rem in result.error.remedies:
                print(f"  remedy: {rem}", file=sys.stderr)
    else:
        print(render(result, prepared.ignored_sglang_args, prepared.sglang_args_warnings))
    sys.stdout.flush()
    return EXIT_OK if result.feasible else EXIT_WOULD_NOT_START
