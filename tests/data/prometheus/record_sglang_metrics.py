"""Record what an SGLang 0.5.23 server's /metrics shows after start-up, for the Prometheus test.

    PYTHONPATH=. .venv/bin/python tests/data/prometheus/record_sglang_metrics.py

It runs SGLang's own `SchedulerMetricsCollector` (sglang/srt/observability/metrics_collector.py)
on the CPU, under the conformance oracle's import fakes (tests/conformance/sglang_ref.py), so
every `sglang:` family has SGLang's real name, type, help text and labels (`model_name`,
`engine_type`, `tp_rank`, `pp_rank`, `moe_ep_rank`). Two stalls of the runtime context the
constructor reads are filled with SGLang's own defaults (`Schedule()`; expert balancedness
export off). Then, as a scheduler does at start-up, `emit_constants` and one `log_stats`,
for each of the two PP stages of DEPLOYMENT (TP rank 0 logs for each stage).

The live `max_total_num_tokens` is the plan's for DEPLOYMENT minus LIVE_SHORTFALL: a server
that started with a little less memory than planned, so the dashboard's "live differs from
planned" panels and the live-capacity alert have something to show.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "sglang-0.5.23-metrics.prom"

MODEL_NAME = "kimi-linear"
# The deployments-file entry tests/deploy/test_deploy_prometheus.py plans.
DEPLOYMENT = {
    "model": {"preset": "kimi-linear-48b-a3b-instruct"},
    "sglang_args": ["--tp-size", "2", "--pp-size", "2", "--served-model-name", MODEL_NAME],
    "budget": {"rest_gib": 40},
}
LIVE_SHORTFALL = 0.02


def planned() -> tuple[int, int, int]:
    from service.api import wire
    from service.planner import plan

    p = plan(wire.prepare(dict(DEPLOYMENT), allow_trial=False).request)
    assert p.feasible, "the recorded deployment must be feasible"
    assert p.max_total_num_tokens is not None and p.max_running_requests is not None
    return p.max_total_num_tokens, p.resolved.context_length, p.max_running_requests


def record() -> str:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "conformance")]
    tokens, context_len, _ = planned()
    live = int(tokens * (1 - LIVE_SHORTFALL))

    import sglang_ref

    sglang_ref._prime_library_caches()
    with sglang_ref._fakes_active():
        import sglang.srt.observability.metrics_collector as mc
        from sglang.srt.arg_groups.fields.schedule import Schedule
    schedule = Schedule()
    mc.get_schedule = lambda: schedule
    mc.exports_expert_balancedness_to_prometheus = lambda: False

    from prometheus_client import REGISTRY, generate_latest

    labels = {"model_name": MODEL_NAME, "engine_type": "unified", "tp_rank": 0, "pp_rank": 0, "moe_ep_rank": 0}
    collector = mc.SchedulerMetricsCollector(labels=labels, server_args=None)
    for pp_rank in (0, 1):
        collector.labels = {**labels, "pp_rank": pp_rank}
        collector.emit_constants(
            max_total_num_tokens=live, max_total_num_tokens_swa=None, weight_memory_usage_gb=20.1,
            kv_cache_memory_usage_gb=38.2, graph_memory_usage_gb={"decode": 1.1}, max_running_requests_under_SLO=None,
            page_size=1, num_pages=live, context_len=context_len, startup_available_gpu_memory_gb=41.3,
        )
        collector.log_stats(mc.SchedulerStats())
    text = generate_latest(REGISTRY).decode()
    # Only SGLang's families: the registry also holds prometheus_client's process/GC collectors.
    keep, families = [], 0
    for line in text.splitlines():
        name = line.split()[2] if line.startswith("# ") else line.split("{")[0].split()[0]
        if name.startswith("sglang:"):
            keep.append(line)
            families += line.startswith("# TYPE ")
    head = [
        "# Recorded by tests/data/prometheus/record_sglang_metrics.py from SGLang 0.5.23's own",
        "# SchedulerMetricsCollector (two PP stages, TP rank 0 each); do not edit by hand.",
        f"# Deployment planned: {DEPLOYMENT}; live max_total_num_tokens = planned {tokens} * {1 - LIVE_SHORTFALL:g}.",
    ]
    print(f"{families} families, {len(keep)} lines; planned {tokens}, live {live}", file=sys.stderr)
    return "\n".join(head + keep) + "\n"


if __name__ == "__main__":
    OUT.write_text(record())
    print(f"wrote {OUT}", file=sys.stderr)
