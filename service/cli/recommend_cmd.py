"""`mambasizer recommend`: the SGLang 0.5.23 launch settings that reach a target.

    mambasizer recommend REQUEST.json          # the ranked candidates, flags ready to paste
    mambasizer recommend --json REQUEST.json   # the body POST /v1/recommend answers, byte for byte
    mambasizer recommend - < REQUEST.json      # `-` reads stdin
    mambasizer recommend REQUEST.json --gpu h200 --gpu b200 --gpu-price h200=3.5 --gpu-price b200=5.9
                                               # compare GPU kinds (replaces the file's "gpu"; prices add to its "gpu_prices")
    mambasizer recommend --disaggregated REQUEST.json
                                               # prefill and decode settings and replicas (POST /v1/recommend/disaggregated)

Exit codes: 0 the best candidate meets every target (--disaggregated: both sides reach theirs
and the pair starts); 1 no searched setting meets them (or none starts); 2 the request cannot be searched (one line: `mambasizer: error: <field>: <message>`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from mambasizer.service.cli import EXIT_OK, EXIT_WOULD_NOT_START
from mambasizer.service.cli.common import UnreadableInput, add_command, error, read_json_request


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        "recommend",
        help="search the launch settings that reach a target (exit 0 met, 1 not met, 2 invalid)",
        doc=__doc__,
        epilog="exit codes: 0 the best candidate meets every target, 1 none does (or none starts), 2 invalid input",
    )
    p.add_argument("request", metavar="REQUEST.json", help="a RecommendRequest JSON file, or `-` for stdin")
    p.add_argument("--json", action="store_true", help="print the answer exactly as POST /v1/recommend returns it")
    p.add_argument("--gpu", action="append", metavar="NAME",
                   help='a catalog GPU to plan on (GET /v1/gpus); repeat to compare kinds. Replaces the file\'s "gpu"')
    p.add_argument("--gpu-price", action="append", metavar="NAME=PRICE",
                   help="price per GPU-hour of a requested GPU (repeat per GPU); `cheapest` needs one for every GPU")
    p.add_argument("--disaggregated", action="store_true",
                   help="the file is a RecommendDisaggregatedRequest: prefill and decode settings and replicas for a 1P1D deployment")
    p.set_defaults(run=run)
    return p


def _cost(c: Any) -> str:
    return "-" if c.cost_per_hour is None else f"{c.cost_per_hour:,.2f}"


def render(result: Any, kinds: bool = False) -> str:
    """The text answer; `kinds`: name each candidate's GPU and cost (several GPU kinds, or priced)."""
    out = [result.why, ""]
    if result.candidates:
        header = ("#", *(("GPU",) if kinds else ()), "GPUs", *(("cost/hour",) if kinds else ()),
                  "tp", "pp", "dp", "requests", "KV tokens", "mamba slots", "binding", "meets")
        rows = [header]
        for i, c in enumerate(result.candidates, 1):
            rows.append((str(i), *((c.gpu or "-",) if kinds else ()), str(c.gpus), *((_cost(c),) if kinds else ()),
                         str(c.tp_size), str(c.pp_size), str(c.attn_dp_size), f"{c.max_running_requests:,}",
                         f"{c.max_total_num_tokens:,}", f"{c.max_mamba_cache_size:,}", c.binding_limit or "-", "yes" if c.meets_target else "no"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        out += ["  " + "  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
        best = result.candidates[0]
        out.append("")
        out.append("best:")
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in best.env.items())
        out.append(f"  {env + ' ' if env else ''}python -m sglang.launch_server --model-path MODEL {shlex.join(best.sglang_args)}")
        out += [_target_line(name, t) for name, t in best.targets.items()]
    out.append("")
    out.append(f"searched {result.searched:,} plans; refused: " + (", ".join(f"{k} {v:,}" for k, v in result.refused.items()) or "none"))
    if kinds:
        out.append("pareto front (GPU, GPUs, cost/hour, requests, KV tokens): " + ", ".join(
            f"({c.gpu or '-'}, {c.gpus}, {_cost(c)}, {c.max_running_requests:,}, {c.max_total_num_tokens:,})" for c in result.pareto))
    else:
        out.append("pareto front (GPUs, requests, KV tokens): " + ", ".join(f"({c.gpus}, {c.max_running_requests:,}, {c.max_total_num_tokens:,})" for c in result.pareto))
    if result.warnings:
        out.append("warnings:")
        out += [f"  - {w}" for w in result.warnings]
    return "\n".join(out)


# What `required` / `achieved` count for each target (the JSON keys name the target given,
# not the quantity): a tokens_per_request target is checked as a pool total.
TARGET_QUANTITIES = {
    "running_requests": "running requests over all workers",
    "concurrent_requests": "running requests over all decode replicas",
    "in_flight_requests": "running requests over all prefill replicas",
    "tokens_per_request": "KV tokens over all workers (requests x tokens_per_request)",
    "in_flight_tokens": "KV tokens over all prefill replicas",
    "context_length": "KV tokens in one worker's pool (the served context when shorter)",
}


def _target_line(name: str, t: Any) -> str:
    what = TARGET_QUANTITIES.get(name, name)
    return f"  {name} target, {what}: {t.achieved:,} for {t.required:,} required ({'+' if t.margin >= 0 else ''}{t.margin:,})"


class BadFlag(Exception):
    """A --gpu-price that is not NAME=PRICE; str() is the line to print."""


def _prices(given: list[str]) -> dict[str, float]:
    """--gpu-price NAME=PRICE ... as a gpu_prices mapping."""
    out: dict[str, float] = {}
    for item in given:
        name, sep, price = item.partition("=")
        try:
            value = float(price)
        except ValueError:
            value = None
        if not sep or not name.strip() or value is None:
            raise BadFlag(f"--gpu-price: expected NAME=PRICE (a catalog GPU and its price per GPU-hour, e.g. h200=3.5), got {item!r}")
        out[name.strip()] = value
    return out


def with_gpu_flags(body: dict, gpu: list[str] | None, prices: list[str] | None) -> dict:
    """The request file's body with --gpu (replacing "gpu": one name, or the list) and
    --gpu-price (added to "gpu_prices")."""
    body = dict(body)
    if gpu:
        body["gpu"] = gpu[0] if len(gpu) == 1 else list(gpu)
    if prices:
        old = body.get("gpu_prices")
        body["gpu_prices"] = {**(old if isinstance(old, dict) else {}), **_prices(prices)}
    return body


def _side_line(c: Any) -> str:
    layout = f"tp {c.tp_size}, pp {c.pp_size}, dp {c.attn_dp_size}, dcp {c.dcp_size}, ep {c.ep_size}"
    return (f"{c.role}: {c.replicas} x {c.gpus_per_replica} GPUs ({layout}) = {c.gpus} GPUs; per replica "
            f"{c.requests_per_replica:,} requests, {c.kv_tokens_per_replica:,} KV tokens (binding: {c.binding_limit or '-'})")


def render_disaggregated(result: Any) -> str:
    """The text answer of a disaggregated recommend: each side's choice, its launch line, the pair."""
    out = [result.why, ""]
    for role in ("prefill", "decode"):
        c = getattr(result, role)
        if c is None:
            out.append(f"{role}: no searched setting reaches its targets")
            continue
        out.append(_side_line(c))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in c.env.items())
        out.append(f"  {env + ' ' if env else ''}python -m sglang.launch_server --model-path MODEL {shlex.join(c.sglang_args)}")
        out += [_target_line(name, t) for name, t in c.targets.items()]
    if result.gpus is not None:
        out.append(f"GPUs in all: {result.gpus:,}")
    if result.pair is not None:
        p = result.pair
        out.append(f"pair: decode_concurrency {p.decode_concurrency}, prefill_in_flight_requests {p.prefill_in_flight_requests}, "
                   f"binding side {p.binding_side or '-'}")
    out.append("searched: " + "; ".join(f"{role} {s.searched:,} plans over {s.settings:,} settings" for role, s in result.searched.items()))
    if result.warnings:
        out.append("warnings:")
        out += [f"  - {w}" for w in result.warnings]
    return "\n".join(out)


def _run_disaggregated(args: argparse.Namespace) -> int:
    from mambasizer.service import requests as front_door
    from mambasizer.service.recommend.disaggregated import recommend_disaggregated
    from mambasizer.service.solver import PlanInputError

    if args.gpu or args.gpu_price:
        return error("--gpu/--gpu-price: a disaggregated recommend plans one GPU kind; give \"gpu\" in the request file")
    try:
        result = recommend_disaggregated(read_json_request(args.request))
    except UnreadableInput as exc:
        return error(str(exc))
    except PlanInputError as exc:
        return error(front_door.input_error_line(exc))
    if args.json:
        sys.stdout.write(result.model_dump_json() + "\n")
    else:
        print(render_disaggregated(result))
    met = result.prefill is not None and result.decode is not None and result.pair is not None and result.pair.feasible
    return EXIT_OK if met else EXIT_WOULD_NOT_START


def run(args: argparse.Namespace) -> int:
    if args.disaggregated:
        return _run_disaggregated(args)
    from mambasizer.service import requests as front_door
    from mambasizer.service.recommend import recommend, response_json
    from mambasizer.service.recommend.kinds import compares_kinds, kinds_of
    from mambasizer.service.recommend.search import parse
    from mambasizer.service.solver import PlanInputError

    try:
        req = parse(with_gpu_flags(read_json_request(args.request), args.gpu, args.gpu_price))
        result = recommend(req)
    except UnreadableInput as exc:
        return error(str(exc))
    except BadFlag as exc:
        return error(str(exc))
    except PlanInputError as exc:
        return error(front_door.input_error_line(exc))
    if args.json:
        sys.stdout.write(response_json(result).decode() + "\n")
    else:
        print(render(result, compares_kinds(kinds_of(req))))
    met = bool(result.candidates) and result.candidates[0].meets_target
    return EXIT_OK if met else EXIT_WOULD_NOT_START
