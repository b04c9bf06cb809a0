"""`mambasizer recommend`: the SGLang 0.5.23 launch settings that reach a target.

    mambasizer recommend REQUEST.json          # the ranked candidates, flags ready to paste
    mambasizer recommend --json REQUEST.json   # the body POST /v1/recommend answers, byte for byte
    mambasizer recommend - < REQUEST.json      # `-` reads stdin

Exit codes: 0 the best candidate meets every target; 1 no searched setting meets them (or
none starts); 2 the request cannot be searched (one line: `mambasizer: error: <field>: <message>`).
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
    p.set_defaults(run=run)
    return p


def render(result: Any) -> str:
    out = [result.why, ""]
    if result.candidates:
        header = ("#", "GPUs", "tp", "pp", "dp", "requests", "KV tokens", "mamba slots", "binding", "meets")
        rows = [header]
        for i, c in enumerate(result.candidates, 1):
            rows.append((str(i), str(c.gpus), str(c.tp_size), str(c.pp_size), str(c.attn_dp_size), f"{c.max_running_requests:,}",
                         f"{c.max_total_num_tokens:,}", f"{c.max_mamba_cache_size:,}", c.binding_limit or "-", "yes" if c.meets_target else "no"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        out += ["  " + "  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
        best = result.candidates[0]
        out.append("")
        out.append("best:")
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in best.env.items())
        out.append(f"  {env + ' ' if env else ''}python -m sglang.launch_server --model-path MODEL {shlex.join(best.sglang_args)}")
        for name, t in best.targets.items():
            out.append(f"  {name}: {t.achieved:,} for {t.required:,} required ({'+' if t.margin >= 0 else ''}{t.margin:,})")
    out.append("")
    out.append(f"searched {result.searched:,} plans; refused: " + (", ".join(f"{k} {v:,}" for k, v in result.refused.items()) or "none"))
    out.append("pareto front (GPUs, requests, KV tokens): " + ", ".join(f"({c.gpus}, {c.max_running_requests:,}, {c.max_total_num_tokens:,})" for c in result.pareto))
    if result.warnings:
        out.append("warnings:")
        out += [f"  - {w}" for w in result.warnings]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from mambasizer.service.api import wire
    from mambasizer.service.recommend import recommend, response_json
    from mambasizer.service.solver import PlanInputError

    try:
        result = recommend(read_json_request(args.request))
    except UnreadableInput as exc:
        return error(str(exc))
    except PlanInputError as exc:
        return error(wire.input_error_line(exc))
    if args.json:
        sys.stdout.write(response_json(result).decode() + "\n")
    else:
        print(render(result))
    met = bool(result.candidates) and result.candidates[0].meets_target
    return EXIT_OK if met else EXIT_WOULD_NOT_START
