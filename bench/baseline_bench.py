#!/usr/bin/env python3
"""What a plan costs now against an older commit of this repository, side by side in ONE
process (issue 25 item 7: the 8-stage Kimi-K3 plan cost 192 us at 91d5566 and 403 us on main):

    python bench/baseline_bench.py                      # against 91d5566 (the default)
    python bench/baseline_bench.py --commit 91d5566 --rounds 40 --calls 200

The old tree is extracted with `git archive COMMIT | tar -x` into a temporary directory (or
`--base-tree DIR`, a checkout of it). At 91d5566 the code imports as the top-level `service`
and `schemas` packages, and today's as `mambasizer.service` / `mambasizer.schemas`, so both
load in this one process without clashing (a commit that already has `mambasizer/` is
refused: this harness times the two in one interpreter or not at all).

For each of the three bench requests (bench/requests/, the README's benchmark requests; the
Kimi-K3 one is the 8-stage preset request the issue names) it checks that both commits return
the same K, T, N, then times the public `plan()` of each on the same request dict: `--rounds`
rounds of `--calls` calls, the two alternating (which goes first swaps every round), each
round started from a collected heap. It prints, per request, the median and the minimum over
the rounds of the per-call time on both sides, and the ratio now / base (below 1: cheaper now).
CPU time of this thread (`time.thread_time`) is timed beside the wall clock: on a machine
shared with other work the wall clock also counts the time this process waited for a core.
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the project, and bench/harness.py (as bench.harness)
    sys.path.insert(0, str(REPO))

from bench.harness import REQUEST_FILES, load_requests  # noqa: E402

DEFAULT_COMMIT = "91d5566"


@contextlib.contextmanager
def base_tree(commit: str, given: str | None) -> Iterator[Path]:
    """A directory holding `commit`'s files (`given`, or a `git archive` extract removed after)."""
    if given:
        yield Path(given).resolve()
        return
    with tempfile.TemporaryDirectory(prefix=f"mambasizer-{commit}-") as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


def load_base_plan(tree: Path) -> Callable[[Any], Any]:
    """The old commit's `plan`, imported from `tree` as the top-level `service` package."""
    if (tree / "mambasizer").exists():
        raise SystemExit(f"{tree} has a mambasizer/ package: its code would shadow today's in this process")
    for name in [m for m in sys.modules if m in ("service", "schemas") or m.startswith(("service.", "schemas."))]:
        del sys.modules[name]  # nothing of today's imports these names; be sure the old tree answers
    sys.path.insert(0, str(tree))
    try:
        return importlib.import_module("service.solver").plan
    finally:
        sys.path.remove(str(tree))


def figures(result: Any) -> tuple[Any, Any, Any]:
    return result.max_mamba_cache_size, result.max_total_num_tokens, result.max_running_requests


def time_side_by_side(fns: dict[str, Callable[[Any], Any]], request: dict, rounds: int, calls: int) -> dict[str, dict[str, list[float]]]:
    """Per-call seconds (wall and thread CPU) of each function, `rounds` alternating rounds."""
    out: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in fns}
    order = list(fns)
    for _ in range(max(20, calls // 4)):  # warm: caches of model structure, imports on first use
        for fn in fns.values():
            fn(request)
    for r in range(rounds):
        for name in order if r % 2 == 0 else reversed(order):
            fn = fns[name]
            gc.collect()
            w0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(calls):
                fn(request)
            c1, w1 = time.thread_time(), time.perf_counter()
            out[name]["wall"].append((w1 - w0) / calls)
            out[name]["cpu"].append((c1 - c0) / calls)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commit", default=DEFAULT_COMMIT, help=f"the commit to compare with (default {DEFAULT_COMMIT})")
    ap.add_argument("--base-tree", help="a directory already holding that commit's files (skips git archive)")
    ap.add_argument("--request", action="append", help="only this request (file name in bench/requests/; repeatable)")
    ap.add_argument("--rounds", type=int, default=40, help="alternating rounds per request (default 40)")
    ap.add_argument("--calls", type=int, default=200, help="plan() calls per round (default 200)")
    args = ap.parse_args(argv)

    from mambasizer.service.planner import plan as plan_now

    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "service", "schemas"],
                                capture_output=True, text=True).stdout.strip())
    now_label = f"{head}{'+changes' if dirty else ''}"
    result: dict[str, Any] = {"base": args.commit, "now": now_label, "rounds": args.rounds, "calls": args.calls, "requests": {}}
    with base_tree(args.commit, args.base_tree) as tree:
        plan_base = load_base_plan(tree)
        fns = {"base": plan_base, "now": plan_now}
        print(f"plan() per call, {args.commit} against {now_label}, one process, {args.rounds} alternating rounds x {args.calls} calls")
        print(f"{'request':28s} {'side':5s} {'wall median us':>15s} {'wall min us':>12s} {'cpu median us':>14s} {'cpu min us':>11s}")
        for name, req in load_requests(args.request).items():
            a, b = figures(plan_base(req)), figures(plan_now(req))
            if a != b:
                raise SystemExit(f"{name}: the two commits disagree on (K, T, N): {a} against {b}")
            t = time_side_by_side(fns, req, args.rounds, args.calls)
            row: dict[str, Any] = {"file": REQUEST_FILES[name], "K_T_N": list(b)}
            for side in fns:
                s = {f"{k}_{stat}_us": round(f(v) * 1e6, 1) for k, v in t[side].items()
                     for stat, f in (("median", statistics.median), ("min", min))}
                row[side] = s
                print(f"{name:28s} {side:5s} {s['wall_median_us']:15.1f} {s['wall_min_us']:12.1f} "
                      f"{s['cpu_median_us']:14.1f} {s['cpu_min_us']:11.1f}")
            ratio = {k: round(row["now"][k] / row["base"][k], 3) for k in ("wall_median_us", "wall_min_us", "cpu_median_us", "cpu_min_us")}
            row["ratio_now_over_base"] = ratio
            print(f"{'':28s} ratio now/base: wall median {ratio['wall_median_us']:.2f}, wall min {ratio['wall_min_us']:.2f}, "
                  f"cpu median {ratio['cpu_median_us']:.2f}, cpu min {ratio['cpu_min_us']:.2f}")
            result["requests"][name] = row
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
