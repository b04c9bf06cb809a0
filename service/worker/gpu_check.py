"""The GPU check behind `scripts/gpu_check.sh`: trial-allocate, on one GPU, what SGLang
0.5.23 allocates for one pipeline stage of Kimi-K3 and of Qwen3-Next, with the budget taken
from the device, and print measured against predicted bytes per pool.

    python -m mambasizer.service.worker.gpu_check               # needs a CUDA build of torch
    python -m mambasizer.service.worker.gpu_check --plan-only   # anywhere: what would be allocated

Exit 0 when every case allocated, measured == predicted up to the caching allocator's
512-byte block rounding, and memory came back to the baseline; 1 otherwise; 2 without a
usable CUDA device. See scripts/gpu_check.sh for the environment knobs.
"""

import json
import os
import sys
import time

from mambasizer.schemas.request import PlanRequest
from mambasizer.schemas.trial import TrialOptions

GIB = 1 << 30
H200_MIB = 143771  # what --plan-only assumes for the device (an H200)


def held_weights_gib(body: dict, stage: int, env: str) -> float:
    """The weights a case holds on its rank: `$env` when set, else the parameter bytes
    SGLang 0.5.23 builds on that stage's largest rank (service/solver/weights/, exact
    against SGLang's model classes), read from the GPU-only plan of the same request."""
    if env in os.environ:
        return float(os.environ[env])
    from mambasizer.service.planner import plan

    stages = plan(PlanRequest.model_validate({**body, "budget": {"gpu": "h200"}})).stages
    weights = stages[stage].weights_bytes
    assert weights is not None  # a GPU-only plan carries every stage's weights
    return round(weights / GIB, 3)


_KIMI = {"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "pp_size": 8}}
_QWEN = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}}
_QWEN_MTP = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4, "speculative_algorithm": "NEXTN"}}
def default_cases() -> list[tuple[str, dict, list[int], float]]:
    """(label, request without budget, pp ranks, weights held per rank); the weights are
    planned when the check runs, not when this module is imported."""
    return [
        ("Kimi-K3 tp8 pp8 (MLA + KDA), stage 0", _KIMI, [0], held_weights_gib(_KIMI, 0, "KIMI_K3_WEIGHTS_GIB")),
        ("Qwen3-Next-80B tp4 (MHA + GDN)", _QWEN, [0], held_weights_gib(_QWEN, 0, "QWEN3_NEXT_WEIGHTS_GIB")),
        ("Qwen3-Next-80B tp4 + MTP (NEXTN): deduplicated conv windows on CUDA",
         _QWEN_MTP, [0], held_weights_gib(_QWEN_MTP, 0, "QWEN3_NEXT_WEIGHTS_GIB")),
    ]


def gib(n):
    return "-" if n is None else f"{n / GIB:10.3f}"


def plan_only(cases=None):
    from mambasizer.service.planner import plan, plan_stage_tensors
    from mambasizer.service.solver.allocation import pool_bytes

    for label, body, stages, weights in cases or default_cases():
        free_before = 139.5  # an H200 after CUDA / NCCL init
        req = PlanRequest.model_validate({**body, "budget": {
            "free_gib_before_load": free_before, "free_gib_after_load": free_before - weights, "gpu_memory_mib": H200_MIB}})
        p = plan(req)
        print(f"== {label}: weights {weights} GiB, feasible={p.feasible}, mfs={p.resolved.mem_fraction_static}, "
              f"K={p.max_mamba_cache_size} N={p.max_running_requests} T={p.max_total_num_tokens}")
        if p.error is not None:  # set exactly when the plan is infeasible
            print("   ", p.error.message)
            continue
        manifests = plan_stage_tensors(req, p, "cuda")
        for r in stages:
            for pool, n in pool_bytes(manifests[r]).items():
                print(f"   pp{r} {pool:20s} {gib(n)} GiB")
    return 0


def gpu(cases=None, backend=None):
    try:
        import torch
    except ImportError:
        print("gpu_check: torch is not installed (pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128)", file=sys.stderr)
        return 2
    if backend is None and not torch.cuda.is_available():
        print(f"gpu_check: torch {torch.__version__} sees no CUDA device", file=sys.stderr)
        return 2
    from mambasizer.service.worker.devices import CudaBackend
    from mambasizer.service.worker.trial import run_trial

    index = int(os.environ.get("CUDA_INDEX", "0"))
    if backend is None:
        torch.cuda.init()
        backend = CudaBackend(index)
    free, total = torch.cuda.mem_get_info(index)
    print(f"device: {backend.label}, total {total / GIB:.2f} GiB, free {free / GIB:.2f} GiB; "
          f"torch {torch.__version__}, CUDA {torch.version.cuda}")
    results, ok = [], True
    for label, body, stages, weights in cases or default_cases():
        t0 = time.monotonic()
        req = PlanRequest.model_validate({**body, "budget": {"rest_gib": 1.0}})  # replaced by the device's own
        res = run_trial(req, TrialOptions(budget="device", hold_weights_gib=weights, stages=stages, timeout_s=120), backend)
        results.append({"case": label, "result": res.model_dump(mode="json")})
        b = res.budget
        print(f"\n== {label}")
        print(f"   status={res.status} would_start={res.would_start} baseline_restored={res.baseline_restored} "
              f"({time.monotonic() - t0:.1f} s){'  ' + res.reason if res.reason else ''}")
        if b is not None and b.free_gib_before_load is not None:
            print(f"   budget from the device: free before {b.free_gib_before_load:.3f} GiB, after holding "
                  f"{weights} GiB of weights {b.free_gib_after_load:.3f} GiB, gpu_memory_mib {b.gpu_memory_mib}")
        if res.plan is not None:
            p = res.plan
            print(f"   plan: mem_fraction_static={p.resolved.mem_fraction_static} rest={p.rest_gib} GiB "
                  f"K={p.max_mamba_cache_size} N={p.max_running_requests} T={p.max_total_num_tokens} feasible={p.feasible}")
        if res.status != "ok" or not res.baseline_restored:
            ok = False
        for st in res.stages:
            print(f"   pp rank {st.pp_rank}: {st.status}, peak {st.peak_bytes / GIB:.3f} GiB, leaked {st.leaked_bytes} B, "
                  f"free with every pool held {gib(st.free_after_pools_bytes).strip()} GiB")
            print(f"   {'pool':20s} {'predicted':>14s} {'measured':>14s} {'diff B':>10s} {'reserved+':>12s} {'free-':>12s}  (GiB unless B)")
            for line in st.pools:
                print(f"   {line.pool:20s} {gib(line.predicted_bytes):>14s} {gib(line.measured_bytes):>14s} "
                      f"{'-' if line.difference_bytes is None else line.difference_bytes:>10} "
                      f"{gib(line.reserved_delta_bytes):>12s} {gib(line.device_free_drop_bytes):>12s}")
                if line.difference_bytes is None or not 0 <= line.difference_bytes < 512 * line.tensors:
                    ok = False
            for u in st.unbudgeted:
                print(f"   unbudgeted: {u.name:38s} {u.predicted_bytes:>14d} B predicted, "
                      f"{'-' if u.measured_bytes is None else u.measured_bytes:>14} B measured ({u.why})")
            if st.oom is not None:
                print(f"   OOM at {st.oom.pool}/{st.oom.tensor}: short by {gib(st.oom.shortfall_bytes).strip()} GiB: {st.oom.message}")
    path = os.environ.get("GPU_CHECK_JSON")
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
    print("\ngpu_check:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return plan_only() if "--plan-only" in argv else gpu()


if __name__ == "__main__":
    sys.exit(main())
