"""`mambasizer check-log`: an SGLang start-up log checked against mambasizer's plan.

    mambasizer check-log server.log                     # table: rank, figure, logged, predicted, diff, cause
    mambasizer check-log - --config config.json --json  # stdin; the model from its config.json; JSON out
    mambasizer check-log server.log --gpu h200           # the GPU, for a log that does not print it
    mambasizer check-log --json server.log -- --model-path Qwen/Qwen3.5-35B-A3B --tp-size 2 --mem-fraction-static 0.85
                                                        # the launch command, for a log cut without its server_args record
                                                        # (options go before FILE when `--` follows it)
    mambasizer check-log server.log --sglang-version 0.5.19   # the release that wrote it, when the log does not tell
    mambasizer check-log --prefill prefill.log --decode decode.log   # a disaggregated pair: each with its role's plan

The release compared with is the one the log prints, else the one its text tells (the
server_args record's fields, the start-up wordings that changed between releases), else
0.5.23: the first line says which and how, with the range when it is guessed.

The plan request is rebuilt from the log (the model from the preset matching `model_path`
or --config, the flags from the `server_args` record, the free memory SGLang measured),
then every figure the log prints is compared per rank. A second table compares the memory
figures estimated before a boot (weights from exact parameter bytes; free memory from the
GPU, --gpu or the log's GPU line, minus calibrated residents), each within a stated error.
Exit 0 when every predicted figure equals the logged one and every estimate is within its
error, 1 when some differ (or none could be predicted), 2 when the log (or the config, or
the GPU name) cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mambasizer.service.cli import EXIT_OK, EXIT_WOULD_NOT_START
from mambasizer.service.cli.common import add_command, error, source_label

EXIT_DIFFERS = EXIT_WOULD_NOT_START  # 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        "check-log",
        help="compare an SGLang start-up log with the plan (exit 0 all match, 1 some differ, 2 unreadable)",
        doc=__doc__,
        epilog="exit codes: 0 every predicted figure matches and every estimate is within its stated error, 1 some differ, 2 the log cannot be read",
    )
    p.add_argument(
        "inputs", nargs="*", metavar="FILE [-- SGLANG_ARGS]",
        help="the SGLang log, of any size (read as a stream, keeping only the start-up lines; `-` or nothing reads stdin), then, after `--`, the SGLang launch "
        "arguments for a log cut without its server_args record (they win over the record)",
    )
    p.add_argument("--config", metavar="CONFIG_JSON", help="the model's config.json (when model_path matches no preset)")
    from mambasizer.service.solver.gpus import CATALOG

    p.add_argument(
        "--gpu", metavar="NAME",
        help=f"the GPU the log was written on: a catalog name ({', '.join(CATALOG)}; GET /v1/gpus), resolved exactly as the plan's "
        "budget.gpu (backend, page size, the HIP mem_fraction_static factor), or its total memory in MiB (nvidia-smi's memory.total) "
        "for the memory estimates; wins over the log's GPU line",
    )
    p.add_argument("--sglang-version", metavar="RELEASE", help="the SGLang release that wrote the log (0.5.8 ... 0.5.23): its plan is compared with, whatever the log tells")
    p.add_argument("--prefill", metavar="FILE", help="a disaggregated pair's prefill log (with --decode): each log is compared with its role's plan")
    p.add_argument("--decode", metavar="FILE", help="a disaggregated pair's decode log (with --prefill)")
    p.add_argument("--json", action="store_true", help='print {"sglang_version", "release", "role", "gpu", "estimate_gpu", "ranks": [...]} as POST /v1/check-log returns it ({"prefill", "decode", "pair", "notes"} for a pair)')
    p.set_defaults(run=run)
    return p


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def render_table(data: dict) -> str:
    from mambasizer.service.startlog.compare import difference

    rows = [("rank", "figure", "logged", "predicted", "diff", "cause")]
    for rank in data["ranks"]:
        for name, fig in rank["figures"].items():
            diff = difference(name, fig["logged"], fig["predicted"])
            diff_text = "0" if diff == 0 else ("-" if diff is None else (f"{diff:+.2f}" if isinstance(diff, float) else f"{diff:+d}"))
            rows.append((rank["rank"], name, _cell(fig["logged"]), _cell(fig["predicted"]), diff_text, fig["cause"] or ""))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5] for r in rows]
    release = data["release"]
    told = release["how"]
    if release["candidates"] is not None and release["source"] != "assumed default" and release["candidates"]["first"] != release["candidates"]["last"]:
        told += f"; the log allows {release['candidates']['first']}-{release['candidates']['last']}"
    role = data["role"]
    role_text = "aggregated" if role["disaggregation_mode"] == "null" else f"{role['disaggregation_mode']} node"
    extras = [f"dcp {role['dcp_size']}" if role["dcp_size"] != 1 else "", "deepep" if role["moe_a2a_backend"] == "deepep" else "", "tbo" if role["enable_two_batch_overlap"] else ""]
    role_text += "".join(", " + e for e in extras if e)
    head = (
        f"compared with SGLang {release['sglang_version']} ({told}), {role_text}; "
        f"GPU {data['gpu'] or '(not printed)'}"
    )
    out = head + "\n" + "\n".join(line.rstrip() for line in lines) + "\n"
    est_rows = [("rank", "figure", "logged", "estimated", "diff", "error", "verdict", "cause")]
    for rank in data["ranks"]:
        for name, fig in rank.get("estimated", {}).items():
            diff = difference(name, fig["logged"], fig["predicted"])
            verdict = "-" if fig["match"] is None else ("match" if fig["match"] else "differs")
            error_text = "-" if fig["error_gb"] is None else f"±{fig['error_gb']:.2f}"
            diff_text = "-" if diff is None else ("0" if diff == 0 else f"{diff:+.2f}")
            est_rows.append((rank["rank"], name, _cell(fig["logged"]), _cell(fig["predicted"]), diff_text, error_text, verdict, fig["cause"]))
    if len(est_rows) > 1:
        gpu = data.get("estimate_gpu")
        out += f"\nestimated before a boot (weights from parameter bytes{'; GPU ' + gpu if gpu else ''}; a match is within the stated error):\n"
        widths = [max(len(r[i]) for r in est_rows) for i in range(7)]
        out += "\n".join(("  ".join(c.ljust(w) for c, w in zip(r[:7], widths, strict=True)) + "  " + r[7]).rstrip() for r in est_rows) + "\n"
    return out


MAX_CONFIG_BYTES = 1 << 20  # a config.json, as the API's body limit
READ_CHUNK = 1 << 20


def read_log(source: str) -> Any:
    """The log of file `source` (stdin for `-`) read as a stream: only the records the parser
    needs are kept, so a log of any size costs the memory of its longest record. A BootLog;
    OSError when it cannot be read, BootLogError when it is not a start-up log."""
    from mambasizer.service.startlog.prefilter import StartupLines

    lines = StartupLines()  # the lines the reader can use, found at C speed (as the API does)
    fh = sys.stdin.buffer if source == "-" else open(source, "rb")
    try:
        while chunk := fh.read(READ_CHUNK):
            lines.feed(chunk)
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    return lines.finish().read()


def render_pair(data: dict) -> str:
    out = ""
    for role in ("prefill", "decode"):
        out += f"== {role} ==\n" + render_table(data[role]) + "\n"
    pair = data["pair"]
    if pair is not None:
        out += (
            f"pair (planned, one replica each): decode runs {pair['decode_concurrency']} requests, prefill holds "
            f"{pair['prefill_in_flight_requests']}; KV tokens decode {pair['decode_kv_tokens']}, prefill {pair['prefill_kv_tokens']}; "
            f"binding side: {pair['binding_side'] or '-'}\n"
        )
        out += "".join(f"note: {n}\n" for n in pair["notes"])
    out += "".join(f"note: {n}\n" for n in data["notes"])
    return out


def _run_pair(args: argparse.Namespace, hf_config: dict | None) -> int:
    from mambasizer.service.startlog.pair import PairRefused, SideError, check_pair
    from mambasizer.service.startlog.parse import BootLogError

    if args.prefill is None or args.decode is None:
        return error("--prefill and --decode go together: a disaggregated pair's two logs")
    if args.inputs:
        return error(f"unexpected argument {args.inputs[0]!r}: with --prefill/--decode, give no other log file")
    sides = {}
    for role in ("prefill", "decode"):
        source = getattr(args, role)
        try:
            sides[role] = {"text": read_log(source), "hf_config": hf_config, "gpu": args.gpu, "sglang_version": args.sglang_version}
        except OSError as exc:
            return error(f"--{role}: cannot read {source}: {exc.strerror or exc}")
        except BootLogError as exc:
            return error(f"--{role}: {source_label(source)}: {exc}")
    try:
        result = check_pair(sides)
    except PairRefused as exc:  # two models: as `mambasizer plan` refuses that pair
        return error(f"{exc.field}: {exc.message}")
    except SideError as exc:
        role, _, rest = exc.field.partition(".")
        if rest == "sglang_version":
            return error(f"--sglang-version: {exc.message}")
        if rest == "gpu":
            return error(f"--gpu: {exc.message}")
        label = f"--{role}" if rest == "log" else f"--{role} {rest}"
        return error(f"{label}: {exc.message}")
    if args.json:
        sys.stdout.write(json.dumps(result.data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_pair(result.data))
        for note in result.notes:
            print(f"note: {note}")
        print("all predicted figures match on both sides" if result.all_match else "some figures differ or could not be predicted")
    return EXIT_OK if result.all_match else EXIT_DIFFERS


def _read_config(path: str) -> dict | int:
    """The config.json at `path`, or the exit status of the error printed."""
    try:
        with open(path, "rb") as fh:
            cfg_raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        return error(f"--config: cannot read {path}: {exc.strerror or exc}")
    if len(cfg_raw) > MAX_CONFIG_BYTES:
        return error(f"--config: {path} is larger than 1 MiB")
    try:
        hf_config = json.loads(cfg_raw)
    except (ValueError, RecursionError) as exc:
        return error(f"--config: {path} is not valid JSON ({str(exc).splitlines()[0]})")
    if not isinstance(hf_config, dict):
        return error(f"--config: {path} must hold a JSON object (a config.json)")
    return hf_config


def run(args: argparse.Namespace) -> int:
    from mambasizer.service.solver import PlanInputError
    from mambasizer.service.startlog.compare import check_log
    from mambasizer.service.startlog.parse import BootLogError

    if args.prefill is not None or args.decode is not None:
        config = _read_config(args.config) if args.config is not None else None
        if isinstance(config, int):
            return config
        return _run_pair(args, config)
    inputs = list(args.inputs)
    args.log = inputs.pop(0) if inputs else "-"
    try:
        log = read_log(args.log)
    except OSError as exc:
        return error(f"cannot read {args.log}: {exc.strerror or exc}")
    except BootLogError as exc:
        return error(f"{source_label(args.log)}: {exc}")
    hf_config: dict | None = None
    if args.config is not None:
        config = _read_config(args.config)
        if isinstance(config, int):
            return config
        hf_config = config
    argv = [w for w in inputs if w != "--"] if inputs[:1] == ["--"] else inputs
    if argv and not argv[0].startswith("-"):
        return error(f"unexpected argument {argv[0]!r}: one log file at most; SGLang launch arguments go after `--`")
    try:
        result = check_log(log, hf_config=hf_config, sglang_args=argv or None, gpu=args.gpu, sglang_version=args.sglang_version)
    except BootLogError as exc:
        return error(f"{source_label(args.log)}: {exc}")
    except PlanInputError as exc:
        if exc.field == "gpu":
            return error(f"--gpu: {exc.message}")
        if exc.field == "sglang_version":
            return error(f"--sglang-version: {exc.message}")
        return error(f"--config: {exc.message}" if exc.field == "hf_config" else f"{exc.field}: {exc.message}")
    if args.json:
        sys.stdout.write(json.dumps(result.data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_table(result.data))
        for note in result.notes:
            print(f"note: {note}")
        print("all predicted figures match (estimates within their stated error)" if result.all_match else "some figures differ or could not be predicted")
    return EXIT_OK if result.all_match else EXIT_DIFFERS
