"""`POST /v1/sweep` over HTTP: how long a 1,000-point sweep takes to answer (target: under 1 s
on the 2-core development machine), for the three bench requests as bases plus the GPU-only
form, JSON and CSV, against a real `mambasizer serve`. Used by bench/run.py (`--skip-sweep`
leaves it out); runnable alone:

    python bench/sweep_bench.py [--runs 5] [--points 1000]
    python bench/sweep_bench.py --dedupe [--runs 5]     # in process: repeated points planned once

Every figure is the median of the runs, with min and max, timed from the first byte sent to
the last byte received (one keep-alive connection, after one warm-up call per case).
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the project, and bench/harness.py (as bench.harness)
    sys.path.insert(0, str(REPO))

TARGET_S = 1.0


def cases(requests: dict[str, dict], points: int) -> list[tuple[str, dict]]:
    """(label, sweep body) for each bench request, with an axis that suits it, and the GPU-only form."""
    out = []
    for name, req in requests.items():
        base = copy.deepcopy(req)
        axes: list[dict[str, Any]]
        if "kimi" in name:
            axes = [{"field": "server_args.max_mamba_cache_size", "values": list(range(64, 64 + points))}]
        elif "nemotron" in name:
            a = max(1, points // 25)
            axes = [
                {"field": "server_args.mem_fraction_static", "values": [round(0.70 + 0.19 * i / max(1, a - 1), 4) for i in range(a)]},
                {"field": "server_args.mamba_full_memory_ratio", "values": [round(0.2 + 0.2 * j, 2) for j in range(points // a)]},
            ]
        else:
            axes = [{"field": "server_args.context_length", "values": [4096 + 256 * i for i in range(points)]}]
        names = " x ".join(str(a["field"]).split(".")[-1] for a in axes)
        out.append((f"{name} ({names})", {"base": base, "axes": axes}))
        if "qwen3-next" in name:
            gpu = copy.deepcopy(base)
            gpu["budget"] = {"gpu": "h200"}
            gpu["server_args"].pop("mem_fraction_static", None)
            out.append((f"{name}, budget.gpu=h200 (context_length)", {"base": gpu, "axes": axes}))
    return out


def _post(conn: http.client.HTTPConnection, body: bytes, accept: str) -> tuple[int, bytes]:
    conn.request("POST", "/v1/sweep", body=body, headers={"Content-Type": "application/json", "Accept": accept})
    resp = conn.getresponse()
    return resp.status, resp.read()


def bench_sweep(requests: dict[str, dict], *, runs: int = 5, points: int = 1000, base_url: str | None = None, serve_args: tuple[str, ...] | list[str] = ()) -> dict:
    """Time each case over HTTP; starts its own server unless base_url is given."""
    from bench.harness import Server, free_port, serve_command

    def measure(host: str, port: int) -> dict:
        conn = http.client.HTTPConnection(host, port, timeout=120)
        res: dict[str, Any] = {"points": points, "runs": runs, "cases": {}}
        for label, sweep in cases(requests, points):
            body = json.dumps(sweep).encode()
            n = 1
            for a in sweep["axes"]:
                n *= len(a["values"])
            row: dict[str, Any] = {"points": n}
            for fmt, accept in (("json", "application/json"), ("csv", "text/csv")):
                status, data = _post(conn, body, accept)  # warm-up
                if status != 200:
                    raise RuntimeError(f"{label}: POST /v1/sweep answered {status}: {data[:300]!r}")
                if fmt == "json":
                    rows = json.loads(data)["rows"]
                    row["feasible"] = sum(r["feasible"] for r in rows)
                times = []
                for _ in range(runs):
                    t0 = time.perf_counter()
                    _post(conn, body, accept)
                    times.append(time.perf_counter() - t0)
                row[fmt] = {"median": statistics.median(times), "min": min(times), "max": max(times), "bytes": len(data)}
            res["cases"][label] = row
        conn.close()
        return res

    if base_url:
        host, _, port_text = base_url.split("//", 1)[-1].partition(":")
        return measure(host, int(port_text or 80))
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp, Server(serve_command("127.0.0.1", port, list(serve_args)), port, Path(tmp)):
        return measure("127.0.0.1", port)


def print_sweep(res: dict) -> None:
    print(f"POST /v1/sweep, {res['points']:,} points per call, seconds to the last byte (median [min-max] of {res['runs']} runs):")
    for label, row in res["cases"].items():
        js, cs = row["json"], row["csv"]
        print(
            f"  {label:<58} {row['points']:>6,} pts ({row['feasible']:>5,} start)  "
            f"JSON {js['median']:.3f} s [{js['min']:.3f}-{js['max']:.3f}] {js['bytes'] / 1024:,.0f} KiB   "
            f"CSV {cs['median']:.3f} s [{cs['min']:.3f}-{cs['max']:.3f}] {cs['bytes'] / 1024:,.0f} KiB"
        )
    worst = max(max(r["json"]["median"], r["csv"]["median"]) for r in res["cases"].values())
    verdict = "met" if worst < TARGET_S else "MISSED"
    print(f"  slowest median {worst:.3f} s: target 1,000 points < {TARGET_S:.0f} s {verdict}")
    res["slowest_median_s"] = worst


def bench_dedupe(requests: dict[str, dict], *, runs: int = 5, points: int = 9999) -> dict:
    """In process, side by side: `run_sweep` (each distinct point planned once) against the
    same sweep planned point by point (what run_sweep did before: one `replan` per point,
    the same validation and rows), for `points` identical points and for `points` distinct
    ones, on each bench request. Both give the same rows (checked before timing)."""
    from mambasizer.service.planner import model_layout
    from mambasizer.service.solver import PlanInputError
    from mambasizer.service.solver.plan import replan
    from mambasizer.service.sweep import _invalid_row, _row, expand, run_sweep

    def point_by_point(body: dict) -> dict:
        sweep = expand(body)
        layouts: dict[int, Any] = {}
        rows = []
        for point, req in zip(sweep.points, sweep.requests, strict=True):
            try:
                layout = layouts.get(id(req.model))
                if layout is None:
                    layout = layouts[id(req.model)] = model_layout(req)
                rows.append(_row(point, replan(req, layout)))
            except PlanInputError as exc:
                rows.append(_invalid_row(point, exc))
        return {"rows": rows}

    res: dict[str, Any] = {"points": points, "runs": runs, "cases": {}}
    for name, req in requests.items():
        mmc = req["server_args"].get("max_mamba_cache_size") or 256
        for kind, values in (("identical", [mmc] * points), ("distinct", list(range(mmc, mmc + points)))):
            body = {"base": copy.deepcopy(req), "axes": [{"field": "server_args.max_mamba_cache_size", "values": values}]}
            if run_sweep(body)["rows"] != point_by_point(body)["rows"]:
                raise RuntimeError(f"{name} {kind}: the deduplicated rows differ from the point-by-point ones")
            t: dict[str, list[float]] = {"once": [], "each": []}
            for r in range(runs):  # alternating, which goes first swaps every run
                for side in (("once", "each") if r % 2 == 0 else ("each", "once")):
                    fn = run_sweep if side == "once" else point_by_point
                    t0 = time.perf_counter()
                    fn(body)
                    t[side].append(time.perf_counter() - t0)
            res["cases"][f"{name}, {points:,} {kind} points"] = {
                side: {"median": statistics.median(v), "min": min(v), "max": max(v)} for side, v in t.items()}
    return res


def print_dedupe(res: dict) -> None:
    print(f"run_sweep in process, {res['points']:,} points on server_args.max_mamba_cache_size, seconds "
          f"(median [min-max] of {res['runs']} alternating runs): each distinct point once / every point planned")
    for label, row in res["cases"].items():
        once, each = row["once"], row["each"]
        print(f"  {label:<52} once {once['median']:7.3f} s [{once['min']:.3f}-{once['max']:.3f}]   "
              f"every point {each['median']:7.3f} s [{each['min']:.3f}-{each['max']:.3f}]   ratio {once['median'] / each['median']:.3f}")


def main(argv: list[str] | None = None) -> int:
    from bench.harness import load_requests

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--base-url", help="time a running server instead of starting one")
    ap.add_argument("--dedupe", action="store_true",
                    help="instead: in process, a sweep of --points (default here 9,999) identical / distinct points "
                         "planned once per distinct point against every point planned")
    args = ap.parse_args(argv)
    if args.dedupe:
        points = args.points if "--points" in (argv if argv is not None else sys.argv) else 9999
        dres = bench_dedupe(load_requests(), runs=args.runs, points=points)
        print_dedupe(dres)
        print(json.dumps({"sweep_dedupe": {k: {s: round(v[s]["median"], 4) for s in v} for k, v in dres["cases"].items()}}))
        return 0
    res = bench_sweep(load_requests(), runs=args.runs, points=args.points, base_url=args.base_url)
    print_sweep(res)
    print(json.dumps({"sweep_1000_points_s": round(res["slowest_median_s"], 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
