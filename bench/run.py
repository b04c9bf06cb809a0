#!/usr/bin/env python3
"""mambasizer benchmarks: plan cost against SGLang 0.5.23's own sizing code, the HTTP
service against its own stack's limit, and the server's resident memory.

    python bench/run.py            # full run (a few minutes on 2 cores)
    python bench/run.py --quick    # under 2 minutes; fewer RSS requests (it says so)

Run it with the project's virtual environment (`.venv/bin/python bench/run.py`); the SGLang
comparison needs the `sglang==0.5.23` wheel installed with --no-deps (scripts/test.sh does).

For the three requests in bench/requests/ it prints:

1. In-process plans/second: our `mambasizer.service.planner.plan` and SGLang 0.5.23's own sizing
   functions driven by the conformance oracle (`tests/conformance/sglang_ref.py`,
   `reference_plan`), same process, same explicit request (the preset expanded to its
   `hf_config`, launch values resolved: page_size, strategy, overlap, mem_fraction_static),
   and the ratio. Our plan with the `preset` form (what the service sees) is shown too,
   and the same request planned from the GPU alone (`budget: {"gpu": "h200"}`) against it.
2. HTTP: `POST /v1/plan` (the three bodies in rotation) against a trivial endpoint of the
   same app (same server process, same settings), requests/s and p50/p99 at concurrency
   1, 16 and 64, from `wrk` (Lua body) when it is installed, else an asyncio keep-alive
   client; the load generator shares the cores with the server.
3. The server's RSS (psutil on its pid, plus any worker children) after warm-up and after
   100,000 `/v1/plan` requests (--quick: fewer, and says so).
4. Recommend (bench/recommend_bench.py): a full `recommend` for Kimi-K3 on up to 64 (and 128)
   H200s with every dimension enabled: its latency (median, min, max), the plans it evaluates
   per second, and looping the public `plan()` over exactly the settings it searched.
5. `POST /v1/sweep` with 1,000 points per call (bench/sweep_bench.py): seconds to the last
   byte, JSON and CSV, each bench request as the base and the GPU-only form (target < 1 s).

Every rate/latency figure is the median of at least 5 runs, shown with min and max. The
last line printed is one JSON object with the headline figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import datetime
import gc
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# The request files and the server harness, shared with bench/sweep_bench.py.
from bench.harness import REQUEST_FILES, Server, free_port, load_requests, serve_command  # noqa: E402

CONCURRENCIES = (1, 16, 64)
P99_MIN_DURATION_S = 3.0  # per run at c64, also under --quick

TARGETS = {
    "plan_speedup_vs_sglang": ">= 100",
    "http_rps_ratio_vs_trivial": ">= 0.70 (c16 and c64)",
    "p99_ratio_vs_trivial_c64": "<= 1.2",
    "livez_p99_ms_8_heavy": "< 250 ms",
    "rss_growth_pct": "< 5",
    "recommend_p50_ms_kimi_k3_64": "< 2000 (the 2-core CI machine)",
}


# --------------------------------------------------------------------------- helpers


GPU_ONLY = "h200"  # the GPU the GPU-only plans are timed on (the requests' measured budgets are H200 figures)


def stat(values: list[float]) -> dict:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "runs": len(values),
    }


def fmt_stat(s: dict, scale: float = 1.0, digits: int = 0) -> str:
    f = f"{{:,.{digits}f}}"
    return f"{f.format(s['median'] * scale)} [{f.format(s['min'] * scale)}..{f.format(s['max'] * scale)}]"


def expand_preset(request: dict) -> dict:
    """The same request with `model.preset` replaced by the preset's `hf_config` (the
    oracle takes `hf_config` only): both sides then get byte-identical input."""
    from mambasizer.service.presets import get_preset

    req = copy.deepcopy(request)
    model = req["model"]
    if "preset" in model:
        preset = get_preset(model["preset"], bool(model.get("allow_unverified", False)))
        req["model"] = {"hf_config": json.loads(json.dumps(dict(preset.hf_config)))}
    return req


def machine_info() -> dict:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil

        mem_gib = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # pragma: no cover
        mem_gib = None
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": mem_gib,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


class CpuMeter:
    """How much of the machine's CPU other processes took during a phase (this benchmark,
    its server and its load generators excluded): the figures are only as good as that."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        self.t0 = time.time()
        self.busy0 = self._busy()
        self.own0 = self._own()
        self.load0 = os.getloadavg()[0]

    def _busy(self) -> float:
        c = self.psutil.cpu_times()
        return sum(c) - c.idle - getattr(c, "iowait", 0.0)

    def _own(self) -> float:
        import resource

        me = self.psutil.Process()
        total = sum(me.cpu_times()[:2])
        for ch in me.children(recursive=True):
            with contextlib.suppress(self.psutil.Error):
                total += sum(ch.cpu_times()[:2])
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # reaped children (wrk runs)
        return total + ru.ru_utime + ru.ru_stime

    def stop(self) -> dict:
        wall = time.time() - self.t0
        ncpu = os.cpu_count() or 1
        busy, own = self._busy() - self.busy0, self._own() - self.own0
        return {
            "wall_s": round(wall, 1),
            "own_cpu_pct": round(100 * own / (wall * ncpu), 1),
            "other_cpu_pct": round(max(0.0, 100 * (busy - own) / (wall * ncpu)), 1),
            "loadavg_start": round(self.load0, 2),
            "loadavg_end": round(os.getloadavg()[0], 2),
        }


def print_meter(label: str, m: dict) -> None:
    print(
        f"   machine during {label}: other processes used {m['other_cpu_pct']}% of the {os.cpu_count()} CPUs "
        f"(this benchmark {m['own_cpu_pct']}%), load average {m['loadavg_start']} -> {m['loadavg_end']}, {m['wall_s']} s"
    )


# --------------------------------------------------------------------------- 1. in process


def load_oracle() -> Callable[[dict], dict]:
    """`reference_plan` from tests/conformance/sglang_ref.py, imported as the conformance
    suite imports it (tests/conformance on sys.path, module `sglang_ref`), so a pytest run
    holding both shares one instance."""
    here = str(REPO / "tests" / "conformance")
    if here not in sys.path:
        sys.path.insert(0, here)
    import sglang_ref

    return sglang_ref.reference_plan


def rate(fn: Callable[[Any], Any], arg: Any, min_time: float, min_iters: int) -> float:
    """Calls per second of fn(arg), timed over at least min_time s and min_iters calls,
    from a collected heap (so neither side pays for the other's garbage)."""
    gc.collect()
    n = 0
    t0 = time.perf_counter()
    while True:
        fn(arg)
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_time and n >= min_iters:
            return n / dt


def _agreement(ours, ref: dict, keys=("max_mamba_cache_size", "max_total_num_tokens", "max_running_requests", "pp_max_micro_batch_size")) -> dict:
    """The headline outputs of both sides, side by side (the benchmark times equal work)."""
    diff = {k: (getattr(ours, k), ref.get(k)) for k in keys if getattr(ours, k) != ref.get(k)}
    if ours.feasible != (ref.get("error") is None):
        diff["feasible"] = (ours.feasible, ref.get("error"))
    return diff


class _SysWithoutProbe:
    """`sys` for the oracle module with `setprofile` a no-op: the oracle reads two of
    SGLang's locals through a profile hook, which slows every Python call SGLang makes
    while it is installed. With it off, the time is SGLang's functions alone."""

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)

    @staticmethod
    def setprofile(fn: Any) -> None:
        return None

    @staticmethod
    def getprofile() -> None:
        return None


@contextlib.contextmanager
def oracle_probe_off():
    mod = sys.modules["sglang_ref"]
    real = mod.sys
    mod.sys = _SysWithoutProbe()
    try:
        yield
    finally:
        mod.sys = real


class SGLangFunctionTimer:
    """Times only SGLang's own sizing functions inside `reference_plan`, and only the calls
    a launch makes on each rank: `KVCacheConfigurator.__post_init__`,
    `_profile_available_bytes` (profile + mamba split), `config_from_budget` (pool
    configurator + token constraints), `resolve_max_num_reqs`, and the layer / dtype /
    PP-range helpers. Left out: the oracle's harness (fake runtime context, import fakes,
    warning capture, its own reads of SGLang's config objects) and the oracle's extra calls
    (a second pool configurator per stage for the per-stage capacity, and under PP a first
    `config_from_budget` pass that records what the all-reduce takes the MIN of, which is
    why `config_from_budget` counts half when pp_size > 1). Nested calls count once."""

    NAMES = ("__post_init__", "_profile_available_bytes", "config_from_budget", "resolve_max_num_reqs")

    def __init__(self) -> None:
        self.per: dict[str, float] = {}
        self._depth = 0
        self._saved: list = []

    def _wrap(self, name: str, fn: Callable) -> Callable:
        timer = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if timer._depth:
                return fn(*args, **kwargs)
            timer._depth = 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timer.per[name] = timer.per.get(name, 0.0) + time.perf_counter() - t0
                timer._depth = 0

        return timed

    def __enter__(self) -> SGLangFunctionTimer:
        sg = sys.modules["sglang_ref"]._load()
        targets = [(sg.kvcm.KVCacheConfigurator, n) for n in self.NAMES]
        targets += [(sg.kvdt, "configure_kv_cache_dtype"), (sg.kvcm, "get_pp_indices"), (sg, "resolve_layer_indices")]
        for obj, name in targets:
            original = obj.__dict__[name] if isinstance(obj, type) else getattr(obj, name)
            self._saved.append((obj, name, original))
            setattr(obj, name, self._wrap(name, original))
        return self

    def __exit__(self, *exc: Any) -> None:
        for obj, name, original in reversed(self._saved):
            setattr(obj, name, original)
        self._saved.clear()

    def launch_seconds(self, pp_size: int) -> float:
        total = sum(self.per.values())
        if pp_size > 1:
            total -= self.per.get("config_from_budget", 0.0) / 2
        return total


def sglang_functions_ms(reference_plan: Callable[[dict], dict], request: dict, calls: int) -> float:
    """ms per plan spent in SGLang's launch-path sizing functions (probe off), over `calls` calls."""
    pp = int((request.get("server_args") or {}).get("pp_size", 1))
    with oracle_probe_off(), SGLangFunctionTimer() as timer:
        gc.collect()
        for _ in range(calls):
            reference_plan(request)
    return timer.launch_seconds(pp) / calls * 1e3


def ms_per_call(
    call: Callable[[Any], Any],
    calls: int,
    min_time: float,
    before: Callable[[int], Any] = lambda i: None,
    after: Callable[[Any], None] = lambda arg: None,
) -> list[float]:
    """ms of each `call(arg)`, at least `calls` calls and `min_time` s, from a collected heap;
    `arg = before(i)` and `after(arg)` run around each call, untimed (the harness)."""
    times: list[float] = []
    gc.collect()
    t_end = time.perf_counter() + min_time
    i = 0
    while i < calls or time.perf_counter() < t_end:
        arg = before(i)
        t0 = time.perf_counter()
        call(arg)
        times.append((time.perf_counter() - t0) * 1e3)
        after(arg)
        i += 1
    return times


def sglang_model_config_ms(request: dict, calls: int, min_time: float = 0.0) -> list[float]:
    """ms per call of SGLang's own `ModelConfig(model_path, context_length=...)` for the
    request's config.json: the config load every SGLang launch does before it sizes
    anything (transformers' config class, SGLang's layer / dtype / context derivations),
    and the counterpart of our `layout_from_hf_config`, which `plan()` runs on every call.

    Each call gets a fresh directory holding the same file, as each launch reads its own
    model path: SGLang memoises `get_config` by path, and a plan for a new config.json never
    hits that cache. Writing the file and the oracle's import fakes are left out of the
    timing (they are the harness); only the `ModelConfig(...)` call is timed."""
    sg_ref = sys.modules["sglang_ref"]
    sg = sg_ref._load()
    cleaned = {k: v for k, v in request["model"]["hf_config"].items() if not k.startswith("_")}
    text = json.dumps(cleaned, sort_keys=True)  # the file the oracle writes for its ModelConfig
    context_length = (request.get("server_args") or {}).get("context_length")
    import warnings

    with tempfile.TemporaryDirectory(prefix="mambasizer-bench-mc-") as root, warnings.catch_warnings(), sg_ref._fakes_active():
        warnings.simplefilter("ignore")

        def fresh_dir(i: int) -> str:
            d = os.path.join(root, str(i))
            os.mkdir(d)
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(text)
            return d

        return ms_per_call(
            lambda d: sg.ModelConfig(d, context_length=context_length, trust_remote_code=False), calls, min_time, before=fresh_dir, after=shutil.rmtree,
        )


H200_MIB = 143771  # the GPU SGLang's resolution is told it runs on when a request gives no gpu_memory_mib


def sglang_resolve_ms(request: dict, calls: int, min_time: float = 0.0) -> list[float]:
    """ms per call of SGLang's own launch-flag resolution for the request: `ServerArgs(...)`,
    `resolve_once()` (every hook of arg_groups/pipeline.py) and `check_server_args()`, as
    tests/conformance/launch_ref.py runs them (the counterpart of our `launch.resolve`).
    The harness (import fakes, the Hopper stand-ins, restoring os.environ) is entered once
    and left out of the timing. The config directory is reused, so the config load inside
    is SGLang's by-path cache hit: that load is timed on its own (sglang_model_config_ms)."""
    from tests.conformance import launch_ref as L

    sg = L._load()
    sa = dict(request.get("server_args") or {})
    env = {k: v for k, v in (request.get("env") or {}).items() if v is not None and v is not False}
    gpu_mib = (request.get("budget") or {}).get("gpu_memory_mib") or H200_MIB
    path = L._config_dir(request["model"]["hf_config"])
    import warnings

    with L._LOCK, L._import_fakes(), L._hopper(sg, gpu_mib), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in L._SCRUB:
            os.environ.pop(key, None)
        for key, value in env.items():
            os.environ[key] = "1" if value is True else str(value)
        saved = dict(os.environ)

        def resolve(_: Any) -> None:
            record = sg.ServerArgs(model_path=path, **sa)
            record.resolve_once()
            record.check_server_args()

        def restore_environ(_: Any) -> None:
            os.environ.clear()  # resolution exports SGLANG_MAMBA_SSM_DTYPE: each call starts clean
            os.environ.update(saved)

        return ms_per_call(resolve, calls, min_time, after=restore_environ)


def bench_inprocess(
    requests: dict[str, dict],
    *,
    runs: int = 5,
    min_time_ours: float = 0.5,
    min_time_ref: float = 0.5,
    min_iters_ref: int = 3,
    with_sglang: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Plans/second for our solver and SGLang's own sizing path on each request.

    SGLang's path is timed twice: through `reference_plan` exactly as the conformance suite
    calls it, and with the oracle's locals probe off (SGLang's functions alone, faster); the
    speedup is taken against the faster of the two. Returns {"requests": {name: {...}},
    "plan_speedup_vs_sglang": the smallest speedup over the requests, ...}."""
    from mambasizer.service.planner import plan

    reference_plan = load_oracle() if with_sglang else None
    results: dict[str, dict] = {}
    for name, req in requests.items():
        explicit = expand_preset(req)
        row: dict = {}
        ours = plan(explicit)  # warm
        plan(req)
        # The same request planned from the GPU alone (budget.gpu): weights per stage
        # (cached per preset and parallel layout), estimated residents, the same pipeline and
        # the 2% sensitivity re-run. Timed against the preset form with the measured budget.
        gpu_req = {**req, "budget": {"gpu": GPU_ONLY}}
        gpu_plan = plan(gpu_req)
        ours_r, preset_r, gpu_r, ref_r, bare_r, fn_ms, mc_ms, rs_ms = [], [], [], [], [], [], [], []
        if reference_plan is not None:
            t0 = time.perf_counter()
            ref = reference_plan(explicit)  # warm: imports the wheel once, caches ModelConfig
            row["sglang_first_call_s"] = time.perf_counter() - t0
            if ref.get("error") is not None and ours.feasible:
                raise RuntimeError(f"{name}: SGLang's path failed where ours did not: {ref['error']}")
            row["outputs_differ"] = _agreement(ours, ref)
            with oracle_probe_off():
                bare = reference_plan(explicit)
            # (K is read through the probe, so without it only T, N and the micro-batch show.)
            keys = ("max_total_num_tokens", "max_running_requests", "pp_max_micro_batch_size")
            if _agreement(ours, bare, keys) != _agreement(ours, ref, keys):
                raise RuntimeError(f"{name}: the oracle answers differently with its probe off")
        for _ in range(runs):  # interleaved, so drift hits every side alike
            ours_r.append(rate(plan, explicit, min_time_ours, 1))
            preset_r.append(rate(plan, req, min_time_ours, 1))
            gpu_r.append(rate(plan, gpu_req, min_time_ours, 1))
            if reference_plan is not None:
                ref_r.append(rate(reference_plan, explicit, min_time_ref, min_iters_ref))
                with oracle_probe_off():
                    bare_r.append(rate(reference_plan, explicit, min_time_ref, min_iters_ref))
                fn_ms.append(sglang_functions_ms(reference_plan, explicit, min_iters_ref))
                mc_ms.append(statistics.median(sglang_model_config_ms(explicit, min_iters_ref, min_time_ref / 2)))
                rs_ms.append(statistics.median(sglang_resolve_ms(explicit, min_iters_ref, min_time_ref / 2)))
        row["ours_plans_per_s"] = stat(ours_r)
        row["ours_preset_form_plans_per_s"] = stat(preset_r)
        row["ours_us_per_plan"] = 1e6 / row["ours_plans_per_s"]["median"]
        row["stages"] = len(ours.stages)
        row["gpu_only_plans_per_s"] = stat(gpu_r)
        row["gpu_only_feasible"] = gpu_plan.feasible
        row["gpu_only_error"] = gpu_plan.error.kind if gpu_plan.error else None
        # Cost of a GPU-only plan over a measured-budget plan of the same request (target <= 2).
        row["gpu_only_vs_measured"] = row["ours_preset_form_plans_per_s"]["median"] / row["gpu_only_plans_per_s"]["median"]
        if ref_r:
            row["sglang_oracle_plans_per_s"] = stat(ref_r)
            row["sglang_plans_per_s"] = stat(bare_r)
            fastest = max(row["sglang_plans_per_s"]["median"], row["sglang_oracle_plans_per_s"]["median"])
            row["sglang_ms_per_plan"] = 1e3 / fastest
            row["speedup"] = row["ours_plans_per_s"]["median"] / fastest
            row["speedup_vs_oracle_as_called"] = row["ours_plans_per_s"]["median"] / row["sglang_oracle_plans_per_s"]["median"]
            row["sglang_functions_ms"] = stat(fn_ms)
            row["speedup_vs_functions_only"] = row["sglang_functions_ms"]["median"] * 1e3 / row["ours_us_per_plan"]
            # SGLang's own code path for this request, its three stages each timed without
            # the oracle's harness: launch-flag resolution, the config load (ModelConfig from
            # the config.json), the sizing functions (fn-only). Ours does the same three
            # (launch.resolve, families, the pipeline) plus the tensor manifest and the output.
            row["sglang_resolve_ms"] = stat(rs_ms)
            row["sglang_model_config_ms"] = stat(mc_ms)
            row["sglang_path_ms"] = (
                row["sglang_resolve_ms"]["median"] + row["sglang_model_config_ms"]["median"] + row["sglang_functions_ms"]["median"]
            )
            row["speedup_path"] = row["sglang_path_ms"] * 1e3 / row["ours_us_per_plan"]
            # The config parsed once on both sides: SGLang's resolution + sizing functions,
            # ours in the preset form (the parsed layout is kept for the process).
            ours_preset_us = 1e6 / row["ours_preset_form_plans_per_s"]["median"]
            row["speedup_config_parsed"] = (row["sglang_resolve_ms"]["median"] + row["sglang_functions_ms"]["median"]) * 1e3 / ours_preset_us
        results[name] = row
    out: dict = {"requests": results}
    speedups = [r["speedup_path"] for r in results.values() if "speedup_path" in r]
    if speedups:
        # The headline: the smallest over the requests, both sides from the same request.
        out["plan_speedup_vs_sglang"] = min(speedups)
        out["plan_speedup_geomean"] = math.exp(sum(math.log(x) for x in speedups) / len(speedups))
        out["plan_speedup_total_time"] = sum(r["sglang_path_ms"] * 1e3 for r in results.values()) / sum(
            r["ours_us_per_plan"] for r in results.values()
        )
        # The other readings, smallest over the requests.
        out["plan_speedup_config_parsed"] = min(r["speedup_config_parsed"] for r in results.values())
        out["plan_speedup_vs_oracle"] = min(r["speedup"] for r in results.values())
        out["plan_speedup_vs_sglang_functions_only"] = min(r["speedup_vs_functions_only"] for r in results.values())
    return out


def print_gpu_only(res: dict) -> None:
    print(
        f"\n   GPU-only plans (budget.gpu={GPU_ONLY!r}: weights exact, residents estimated) against the same request"
        "\n   with its measured budget, both in the preset form; an infeasible GPU-only plan includes its remedy search."
        f"\n   {'request':26} {'measured plans/s':>22} {'GPU-only plans/s':>22} {'cost':>6}  GPU-only answer"
    )
    for name, r in res["requests"].items():
        verdict = "starts" if r["gpu_only_feasible"] else f"does not start ({r['gpu_only_error']})"
        print(
            f"   {name:26} {fmt_stat(r['ours_preset_form_plans_per_s']):>22} {fmt_stat(r['gpu_only_plans_per_s']):>22}"
            f" {r['gpu_only_vs_measured']:>5.2f}x  {verdict}"
        )


def print_inprocess(res: dict) -> None:
    print(
        "\n== 1. In-process, median [min..max] of runs. Both sides get the same request: the preset expanded to its"
        "\n   hf_config, launch values stated. Ours: mambasizer.service.planner.plan (flags resolved, config.json parsed, sized,"
        "\n   pools and output built: every call). SGLang 0.5.23's own code for the same three steps, each timed"
        "\n   alone with the conformance harness around it left out: launch-flag resolution (ServerArgs +"
        "\n   resolve_once + check_server_args), the config load (ModelConfig from a fresh config.json), the sizing"
        "\n   functions (fn-only: KVCacheConfigurator / pool configurator calls inside reference_plan)."
    )
    print(
        f"{'request':26} {'stg':>3} {'ours plans/s':>24} {'us':>5} {'SGLang resolve ms':>20} {'ModelConfig ms':>20} "
        f"{'sizing fn ms':>20} {'SGLang ms':>9} {'speedup':>8}"
    )
    for name, r in res["requests"].items():
        if "sglang_path_ms" not in r:
            print(f"{name:26} {r['stages']:>3} {fmt_stat(r['ours_plans_per_s']):>24} {r['ours_us_per_plan']:>5.0f}")
            continue
        print(
            f"{name:26} {r['stages']:>3} {fmt_stat(r['ours_plans_per_s']):>24} {r['ours_us_per_plan']:>5.0f} "
            f"{fmt_stat(r['sglang_resolve_ms'], digits=2):>20} {fmt_stat(r['sglang_model_config_ms'], digits=2):>20} "
            f"{fmt_stat(r['sglang_functions_ms'], digits=2):>20} {r['sglang_path_ms']:>9.2f} {r['speedup_path']:>7.0f}x"
        )
        if r.get("outputs_differ"):
            print(f"   ! outputs differ from SGLang's: {r['outputs_differ']}")
    print_gpu_only(res)
    if "plan_speedup_vs_sglang" not in res:
        return
    print(
        f"\n   other readings: {'ours, preset form plans/s':>26} {'us':>5} {'config parsed':>14}"
        f" {'oracle bare plans/s':>20} {'oracle as called':>20} {'speedup':>8} {'vs fn-only':>10}"
    )
    for name, r in res["requests"].items():
        us = 1e6 / r["ours_preset_form_plans_per_s"]["median"]
        print(
            f"   {name:26} {fmt_stat(r['ours_preset_form_plans_per_s']):>26} {us:>5.0f} {r['speedup_config_parsed']:>13.0f}x"
            f" {fmt_stat(r['sglang_plans_per_s'], digits=1):>20} {fmt_stat(r['sglang_oracle_plans_per_s'], digits=1):>20}"
            f" {r['speedup']:>7.0f}x {r['speedup_vs_functions_only']:>9.0f}x"
        )
    n_eq = sum(1 for r in res["requests"].values() if not r.get("outputs_differ"))
    print(
        f"speedup vs SGLang's own code path (resolution + config load + sizing functions): smallest"
        f" {res['plan_speedup_vs_sglang']:.0f}x (the headline), geomean {res['plan_speedup_geomean']:.0f}x, over the total"
        f" time {res['plan_speedup_total_time']:.0f}x; K, T, N and the micro-batch equal SGLang's on {n_eq}/{len(res['requests'])} requests"
        f"\n'config parsed': the config parsed once on both sides (ours: the preset form; SGLang: resolution + sizing"
        f" functions): smallest {res['plan_speedup_config_parsed']:.0f}x"
        f"\n'oracle': reference_plan whole (the faster of probe off / as called; its harness included, its ModelConfig"
        f" cached, no flag resolution) against ours on the hf_config request: smallest {res['plan_speedup_vs_oracle']:.0f}x"
        f"\n'vs fn-only': our whole plan against SGLang's sizing functions alone: smallest"
        f" {res['plan_speedup_vs_sglang_functions_only']:.0f}x"
    )


# --------------------------------------------------------------------------- 2. HTTP


class Endpoint:
    def __init__(self, label: str, method: str, path: str, bodies: list[bytes]):
        self.label, self.method, self.path, self.bodies = label, method, path, bodies


LUA = r"""
-- generated by bench/run.py: rotate pre-formatted requests, print one JSON line at the end
local files = {%(files)s}
local reqs = {}
local i = 0
function init(args)
  for k, fn in ipairs(files) do
    local f = assert(io.open(fn, "rb"))
    local body = f:read("*a")
    f:close()
    reqs[k] = wrk.format("%(method)s", "%(path)s", {["Content-Type"] = "application/json"}, body)
  end
  if #files == 0 then reqs[1] = wrk.format("%(method)s", "%(path)s") end
end
function request()
  i = i %% #reqs + 1
  return reqs[i]
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%%.0f,"duration_us":%%.0f,"connect":%%.0f,"read":%%.0f,' ..
    '"write":%%.0f,"status":%%.0f,"timeout":%%.0f,"p50_us":%%.0f,"p99_us":%%.0f,"max_us":%%.0f,"mean_us":%%.1f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
"""


class WrkLoad:
    name = "wrk"

    def __init__(self, base_url: str, workdir: Path):
        self.base_url, self.workdir = base_url, workdir
        self.version = (subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout or "wrk").split("\n")[0].strip()
        self._scripts: dict[str, str] = {}

    def _script(self, ep: Endpoint) -> str:
        if ep.label not in self._scripts:
            files = []
            for k, body in enumerate(ep.bodies):
                p = self.workdir / f"{ep.label}-{k}.json"
                p.write_bytes(body)
                files.append(json.dumps(str(p)))
            lua = self.workdir / f"{ep.label}.lua"
            lua.write_text(LUA % {"files": ", ".join(files), "method": ep.method, "path": ep.path})
            self._scripts[ep.label] = str(lua)
        return self._scripts[ep.label]

    def run(self, ep: Endpoint, conc: int, duration: float) -> dict:
        cmd = ["wrk", "-t1", f"-c{conc}", f"-d{max(1, round(duration))}s", "--timeout", "10s", "-s", self._script(ep), self.base_url]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
        m = re.search(r"^WRKJSON (.*)$", out.stdout, re.M)
        if out.returncode != 0 or not m:
            raise RuntimeError(f"wrk failed ({out.returncode}): {out.stdout}\n{out.stderr}")
        d = json.loads(m.group(1))
        errors = d["connect"] + d["read"] + d["write"] + d["status"] + d["timeout"]
        return {
            "requests": int(d["requests"]),
            "rps": d["requests"] / (d["duration_us"] / 1e6),
            "p50_ms": d["p50_us"] / 1e3,
            "p99_ms": d["p99_us"] / 1e3,
            "errors": int(errors),
        }


class AsyncLoad:
    """Fallback load generator: asyncio raw sockets, HTTP/1.1 keep-alive, one coroutine per
    connection, each waiting for its response before sending the next request."""

    name = "python-asyncio"
    version = f"asyncio raw sockets (Python {platform.python_version()})"

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    def _raw(self, ep: Endpoint) -> list[bytes]:
        out = []
        for body in ep.bodies or [b""]:
            head = f"{ep.method} {ep.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            if ep.method != "GET" or body:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            out.append(head.encode() + b"\r\n" + body)
        return out

    async def _conn(self, raws: list[bytes], offset: int, deadline: float, lat: list[float], errs: list[int]) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        i = offset
        try:
            while time.perf_counter() < deadline:
                raw = raws[i % len(raws)]
                i += 1
                t0 = time.perf_counter()
                writer.write(raw)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                if not m:
                    raise RuntimeError("response without Content-Length")
                await reader.readexactly(int(m.group(1)))
                lat.append(time.perf_counter() - t0)
                if status >= 400:
                    errs[0] += 1
        finally:
            writer.close()

    def run(self, ep: Endpoint, conc: int, duration: float) -> dict:
        raws = self._raw(ep)
        lat: list[float] = []
        errs = [0]

        async def main():
            deadline = time.perf_counter() + duration
            t0 = time.perf_counter()
            await asyncio.gather(*(self._conn(raws, k, deadline, lat, errs) for k in range(conc)))
            return time.perf_counter() - t0

        elapsed = asyncio.run(main())
        lat.sort()
        q = lambda p: lat[min(len(lat) - 1, math.ceil(p / 100 * len(lat)) - 1)]  # noqa: E731
        return {"requests": len(lat), "rps": len(lat) / elapsed, "p50_ms": q(50) * 1e3, "p99_ms": q(99) * 1e3, "errors": errs[0]}


def srv_proc_cpu(srv: Server) -> tuple:
    """User and system CPU seconds of the server process and its worker children."""
    import psutil

    assert srv.proc is not None, "the server is not started"
    p = psutil.Process(srv.proc.pid)
    t = p.cpu_times()
    user, system = t.user, t.system
    for c in p.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            ct = c.cpu_times()
            user, system = user + ct.user, system + ct.system
    return user, system


def http_get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def http_post_json(url: str, body: bytes) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:  # pragma: no cover - reported
        return e.code, e.read().decode(errors="replace")


def find_trivial(base: str, openapi: Any, bodies: list[bytes]) -> Endpoint:
    """The app's cheapest route: a POST echo when the API has one (same body as /v1/plan),
    else GET /livez (or /healthz)."""
    paths = openapi.get("paths", {}) if isinstance(openapi, dict) else {}
    for p in ("/v1/echo", "/echo", "/_echo", "/v1/_echo"):
        if "post" in paths.get(p, {}):
            return Endpoint("trivial-echo", "POST", p, bodies)
    for p in ("/livez", "/healthz", "/health", "/v1/livez"):
        if p in paths or _ok(base + p):
            return Endpoint("trivial-" + p.strip("/").replace("/", "-"), "GET", p, [])
    raise RuntimeError("the app has no trivial endpoint (/livez, /healthz or a POST echo)")


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def bench_http(
    requests: dict[str, dict],
    *,
    runs: int,
    duration: float,
    rss_requests: int,
    loadgen: str,
    serve_args: list[str],
    server_cmd: str | None,
    log: Callable[[str], None] = print,
) -> dict:
    from mambasizer.service.planner import plan

    workdir = Path(tempfile.mkdtemp(prefix="mambasizer-bench-"))
    host, port = "127.0.0.1", free_port()
    base = f"http://{host}:{port}"
    if server_cmd:
        cmd = server_cmd.format(host=host, port=port, python=sys.executable).split()
    else:
        cmd = serve_command(host, port, serve_args)
    bodies = [json.dumps(r, separators=(",", ":")).encode() for r in requests.values()]
    if loadgen == "wrk" or (loadgen == "auto" and shutil.which("wrk")):
        if not shutil.which("wrk"):
            raise RuntimeError("--loadgen wrk: wrk is not installed (apt-get install -y wrk)")
        load: WrkLoad | AsyncLoad = WrkLoad(base, workdir)
    else:
        load = AsyncLoad(host, port)
    log(f"  server: {' '.join(cmd)}")
    log(f"  load generator: {load.version}")
    result: dict = {"loadgen": load.name, "loadgen_version": load.version, "server_cmd": " ".join(cmd)}

    with Server(cmd, port, workdir) as srv:
        try:
            openapi = http_get_json(base + "/openapi.json")
        except Exception:
            openapi = {}
        plan_ep = Endpoint("plan", "POST", "/v1/plan", bodies)
        trivial = find_trivial(base, openapi, bodies)
        result["trivial_endpoint"] = f"{trivial.method} {trivial.path}"
        log(f"  trivial endpoint: {trivial.method} {trivial.path}")

        # The service answers what the solver answers (else the benchmark would time errors).
        equal = 0
        for (name, req), body in zip(requests.items(), bodies, strict=True):
            status, got = http_post_json(base + "/v1/plan", body)
            if status != 200:
                raise RuntimeError(f"POST /v1/plan {name}: HTTP {status}: {str(got)[:500]}")
            equal += got == plan(req).model_dump(mode="json")
        result["responses_equal_inprocess"] = f"{equal}/{len(bodies)}"

        # Warm-up: every route at the highest concurrency, then the resident-memory baseline.
        warm = 0
        for ep in (plan_ep, trivial):
            for conc in (CONCURRENCIES[-1], CONCURRENCIES[0]):
                r = load.run(ep, conc, 1.0)
                warm += r["requests"]
        result["warmup_requests"] = warm
        rss_warm = srv.rss_sampled()
        meter = CpuMeter()
        plan_served = 0
        samples = [(0, rss_warm)]

        levels: dict = {}
        errors = 0
        for conc in CONCURRENCIES:
            runs_plan: list[dict] = []
            runs_triv: list[dict] = []
            for k in range(runs):
                order = (plan_ep, trivial) if k % 2 == 0 else (trivial, plan_ep)
                for ep in order:
                    cpu0 = sum(srv_proc_cpu(srv))
                    # A p99 needs thousands of samples per run: at c64 one collector pause
                    # stalls 64 requests at once, so a 1 s run's p99 is a coin flip on
                    # whether a pause fell inside it (1.21-1.75x over five --quick runs).
                    r = load.run(ep, conc, max(duration, P99_MIN_DURATION_S) if conc >= 64 else duration)
                    r["server_cpu_us"] = (sum(srv_proc_cpu(srv)) - cpu0) / max(r["requests"], 1) * 1e6
                    errors += r["errors"]
                    (runs_plan if ep is plan_ep else runs_triv).append(r)
                    if ep is plan_ep:
                        plan_served += r["requests"]
            lv = {}
            for label, rs in (("plan", runs_plan), ("trivial", runs_triv)):
                lv[label] = {
                    "rps": stat([r["rps"] for r in rs]),
                    "p50_ms": stat([r["p50_ms"] for r in rs]),
                    "p99_ms": stat([r["p99_ms"] for r in rs]),
                    "server_cpu_us": stat([r["server_cpu_us"] for r in rs]),
                }
            lv["rps_ratio"] = lv["plan"]["rps"]["median"] / lv["trivial"]["rps"]["median"]
            lv["p99_ratio"] = lv["plan"]["p99_ms"]["median"] / lv["trivial"]["p99_ms"]["median"]
            levels[conc] = lv
            log(f"  c={conc}: /v1/plan {lv['plan']['rps']['median']:,.0f} req/s, trivial {lv['trivial']['rps']['median']:,.0f} req/s")
        samples.append((plan_served, srv.rss_sampled()))
        result["machine"] = meter.stop()

        # Resident memory: top /v1/plan up to rss_requests at c16, sampling as it goes.
        est = levels[16]["plan"]["rps"]["median"] if 16 in levels else 500.0
        while plan_served < rss_requests:
            left = rss_requests - plan_served
            dur = min(20.0, max(1.0, math.ceil(left / max(est, 1.0) * 1.02)))
            r = load.run(plan_ep, 16, dur)
            errors += r["errors"]
            plan_served += r["requests"]
            samples.append((plan_served, srv.rss_sampled()))
        rss_end = samples[-1][1]
        result["server_cpu_s"] = round(sum(srv_proc_cpu(srv)), 1)
        result["errors"] = errors
        result["levels"] = levels
        result["rss"] = {
            "warm_mib": rss_warm / 2**20,
            "end_mib": rss_end / 2**20,
            "plan_requests_after_warmup": plan_served,
            "samples_mib": [(n, round(b / 2**20, 1)) for n, b in samples],
            "growth_pct": (rss_end - rss_warm) / rss_warm * 100,
        }
        log(f"  server log: {srv.log_path}")
    return result


def print_http(res: dict, rss_target: int) -> None:
    print(
        f"\n== 2. HTTP on loopback, load generator {res['loadgen_version']} ({res['loadgen']}), sharing the cores"
        f"\n   server: {res['server_cmd']}"
        f"\n   /v1/plan bodies: the three requests in rotation; trivial: {res['trivial_endpoint']};"
        f" responses equal to in-process plan(): {res['responses_equal_inprocess']}; errors: {res['errors']}"
    )
    print(f"{'conc':>4} {'endpoint':9} {'req/s':>24} {'p50 ms':>22} {'p99 ms':>24} {'server CPU us/req':>20}   ratio plan/trivial")
    for conc, lv in res["levels"].items():
        for label in ("plan", "trivial"):
            e = lv[label]
            ratio = f"req/s {lv['rps_ratio']:.2f}, p99 {lv['p99_ratio']:.2f}" if label == "plan" else ""
            print(
                f"{conc:>4} {label:9} {fmt_stat(e['rps']):>24} {fmt_stat(e['p50_ms'], digits=2):>22} "
                f"{fmt_stat(e['p99_ms'], digits=2):>24} {fmt_stat(e['server_cpu_us']):>20}   {ratio}"
            )
    print_meter("the HTTP runs", res["machine"])
    r = res["rss"]
    print(
        f"\n== 3. Server RSS (psutil, median of 5 samples at each point): after warm-up {r['warm_mib']:.1f} MiB, "
        f"after {r['plan_requests_after_warmup']:,} more /v1/plan requests {r['end_mib']:.1f} MiB: "
        f"{r['growth_pct']:+.2f}%"
    )
    if r["plan_requests_after_warmup"] < 100_000 or rss_target < 100_000:
        print(f"   (reduced run: {rss_target:,} requests asked for, not 100,000)")
    print("   trajectory (requests, MiB): " + ", ".join(f"({n:,}, {m})" for n, m in r["samples_mib"]))


# --------------------------------------------------------------------------- main


def headline(out: dict) -> dict:
    """The final line: the headline figures (and how they were taken)."""
    head: dict = {}
    ip = out.get("inprocess", {})
    if "plan_speedup_vs_sglang" in ip:
        head["plan_speedup_vs_sglang"] = round(ip["plan_speedup_vs_sglang"], 1)
    h = out.get("http")
    if h:
        lv = h["levels"]
        head["http_rps_ratio_vs_trivial"] = round(min(lv[c]["rps_ratio"] for c in (16, 64) if c in lv), 3)
        head["p99_ms_c64"] = round(lv[64]["plan"]["p99_ms"]["median"], 2)
        head["p99_ratio_vs_trivial_c64"] = round(lv[64]["p99_ratio"], 3)
        head["rss_growth_pct"] = round(h["rss"]["growth_pct"], 2)
    if ip.get("requests"):
        head["ours_us_per_plan"] = {n: round(r["ours_us_per_plan"], 1) for n, r in ip["requests"].items()}
        head["gpu_only_vs_measured"] = {n: round(r["gpu_only_vs_measured"], 2) for n, r in ip["requests"].items()}
        if "plan_speedup_total_time" in ip:
            head["plan_speedup_total_time"] = round(ip["plan_speedup_total_time"], 1)
            head["plan_speedup_config_parsed"] = round(ip["plan_speedup_config_parsed"], 1)
            head["plan_speedup_vs_oracle"] = round(ip["plan_speedup_vs_oracle"], 1)
            head["plan_speedup_vs_sglang_functions_only"] = round(ip["plan_speedup_vs_sglang_functions_only"], 1)
    rec = out.get("recommend")
    if rec:
        head["recommend_p50_ms"] = {n: round(r["latency_s"]["median"] * 1000, 1) for n, r in rec.items()}
        head["recommend_plans_per_s"] = {n: round(r["plans_per_s_in_recommend"]) for n, r in rec.items()}
        head["loop_plan_per_s"] = {n: round(r["loop_plan_per_s"]) for n, r in rec.items()}
        head["recommend_first_ms"] = {n: round(r["cold_s"] * 1000, 1) for n, r in rec.items()}
        head["recommend_p50_ms_kimi_k3_64"] = head["recommend_p50_ms"]["kimi-k3 <=64 h200"]
    if h:
        head["rss_requests"] = h["rss"]["plan_requests_after_warmup"]
        head["loadgen"] = h["loadgen"]
    if "sweep" in out:
        head["sweep_1000_points_s"] = round(out["sweep"]["slowest_median_s"], 3)
    hv = out.get("heavy")
    if hv:
        head["livez_p99_ms_8_heavy"] = round(hv["eight_heavy"]["livez"]["p99_ms"], 2)
        head["plan_p99_ms_8_heavy"] = round(hv["eight_heavy"]["plan"]["p99_ms"], 2)
        head["pool_recommend_per_s"] = round(hv["recommend"]["per_s"], 2)
        head["pool_sweep_per_s"] = round(hv["sweep"]["per_s"], 2)
    head["runs"] = out.get("runs")
    head["quick"] = out.get("quick")
    return head


def verdicts(head: dict, out: dict) -> list[str]:
    checks = {
        "plan_speedup_vs_sglang": lambda v: v >= 100,
        "http_rps_ratio_vs_trivial": lambda v: v >= 0.70,
        "p99_ratio_vs_trivial_c64": lambda v: v <= 1.2,
        "rss_growth_pct": lambda v: v < 5,
        "recommend_p50_ms_kimi_k3_64": lambda v: v < 2000,
        "livez_p99_ms_8_heavy": lambda v: v < 250,
    }
    lines = []
    for key, ok in checks.items():
        if key not in head:
            continue
        word = "met" if ok(head[key]) else "MISSED"
        if key == "rss_growth_pct" and head.get("rss_requests", 0) < 100_000:
            word += f" over {head['rss_requests']:,} requests only (no 100k verdict)"
        lines.append(f"{key} {TARGETS[key]}: {head[key]} {word}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter runs and fewer RSS requests (under 2 minutes)")
    ap.add_argument("--runs", type=int, default=5, help="runs per figure (median, min, max); default 5")
    ap.add_argument("--request", action="append", help="only this request (file name in bench/requests/; repeatable)")
    ap.add_argument("--min-time", type=float, help="seconds per in-process run (default 0.5; --quick 0.1; SGLang's twice that)")
    ap.add_argument("--duration", type=float, help="seconds per HTTP run (default 3; --quick 1)")
    ap.add_argument("--rss-requests", type=int, help="/v1/plan requests between the RSS readings (default 100000; --quick 15000)")
    ap.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto", help="auto: wrk when installed, else asyncio")
    ap.add_argument("--serve-arg", action="append", default=[], help="extra argument for `mambasizer serve` (repeatable)")
    ap.add_argument("--server-cmd", help="run this server command instead ({host} {port} {python} are filled in)")
    ap.add_argument("--skip-http", action="store_true")
    ap.add_argument("--skip-inprocess", action="store_true")
    ap.add_argument("--skip-recommend", action="store_true")
    ap.add_argument("--skip-heavy", action="store_true", help="leave out the heavy-request probes and pool throughput (bench/heavy_bench.py; --skip-http does too)")
    ap.add_argument("--skip-sweep", action="store_true", help="leave out the 1,000-point POST /v1/sweep timings (bench/sweep_bench.py; --skip-http does too)")
    ap.add_argument("--no-sglang", action="store_true", help="time our solver only")
    ap.add_argument("--json-out", help="also write the whole result as JSON to this file")
    args = ap.parse_args(argv)
    if args.runs < 5:
        print(f"note: --runs {args.runs}: the figures are specified as medians of at least 5 runs", file=sys.stderr)
    duration = args.duration or (1.0 if args.quick else 3.0)
    rss_requests = args.rss_requests if args.rss_requests is not None else (15_000 if args.quick else 100_000)
    min_time = args.min_time if args.min_time is not None else (0.1 if args.quick else 0.5)

    info = machine_info()
    print(
        f"mambasizer bench{' --quick' if args.quick else ''}: {info['date']}; {info['nproc']} CPUs ({info['cpu']}), "
        f"{info['mem_gib']} GiB, Python {info['python']}",
        flush=True,
    )
    requests = load_requests(args.request)
    if not requests:
        ap.error(f"no request matches {args.request} (files: {', '.join(REQUEST_FILES.values())})")
    out: dict = {"machine": info, "quick": args.quick, "runs": args.runs}
    t_start = time.perf_counter()
    if not args.skip_inprocess:
        print("\n-- in-process ...", flush=True)
        meter = CpuMeter()
        out["inprocess"] = bench_inprocess(
            requests,
            runs=args.runs,
            min_time_ours=min_time,
            min_time_ref=2 * min_time,
            min_iters_ref=3,
            with_sglang=not args.no_sglang,
        )
        out["inprocess"]["machine"] = meter.stop()
        print_inprocess(out["inprocess"])
        print_meter("the in-process runs", out["inprocess"]["machine"])
    if not args.skip_recommend:
        from bench.recommend_bench import bench_recommend, print_recommend

        print("\n-- recommend ...", flush=True)
        out["recommend"] = bench_recommend(args.runs, quick=args.quick)
        print_recommend(out["recommend"])
    if not args.skip_http:
        print("\n-- HTTP ...", flush=True)
        out["http"] = bench_http(
            requests, runs=args.runs, duration=duration, rss_requests=rss_requests, loadgen=args.loadgen,
            serve_args=args.serve_arg, server_cmd=args.server_cmd,
        )
        print_http(out["http"], rss_requests)
    if not (args.skip_sweep or args.skip_http):
        print("\n-- sweep ...", flush=True)
        from bench import sweep_bench

        out["sweep"] = sweep_bench.bench_sweep(requests, runs=args.runs, serve_args=args.serve_arg)
        sweep_bench.print_sweep(out["sweep"])
    if not (args.skip_heavy or args.skip_http):
        print("\n-- heavy requests ...", flush=True)
        from bench import heavy_bench

        out["heavy"] = heavy_bench.bench_heavy(seconds=3.0 if args.quick else 6.0, requests=12 if args.quick else 24,
                                               serve_args=args.serve_arg)
        heavy_bench.print_heavy(out["heavy"])
    out["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    head = headline(out)
    print("\ntargets: " + "; ".join(verdicts(head, out)))
    print(f"elapsed {out['elapsed_s']} s")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=2, default=str))
    print(json.dumps(head))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
