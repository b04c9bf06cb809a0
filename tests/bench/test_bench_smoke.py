"""bench/run.py's in-process part runs end to end on one request and prints its headline
JSON line. No timing is asserted: the figures only have to exist and be positive."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    return load_script(ROOT / "bench" / "run.py", "mambasizer_bench_run")


def _has_sglang() -> bool:
    return importlib.util.find_spec("sglang") is not None


def test_requests_are_the_three_of_the_issue(bench):
    reqs = bench.load_requests()
    assert len(reqs) == 3
    for req in reqs.values():
        # The oracle needs resolved launch values: every request states them.
        sa = req["server_args"]
        for key in ("page_size", "mamba_radix_cache_strategy", "disable_overlap_schedule", "mem_fraction_static"):
            assert key in sa
        assert "hf_config" in bench.expand_preset(req)["model"]


def test_inprocess_headline_line(bench, capsys):
    argv = ["--skip-http", "--runs", "2", "--min-time", "0.01", "--request", "qwen3-next-tp4-eagle.json"]
    if not _has_sglang():
        argv.append("--no-sglang")
    assert bench.main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    head = json.loads(last)
    assert head["ours_us_per_plan"]["qwen3-next tp4 eagle"] > 0
    assert head["gpu_only_vs_measured"]["qwen3-next tp4 eagle"] > 0  # the GPU-only plan timed beside it
    if _has_sglang():
        assert head["plan_speedup_vs_sglang"] > 0
        assert head["plan_speedup_total_time"] > 0
        assert head["plan_speedup_vs_sglang_functions_only"] > 0
        assert head["plan_speedup_config_parsed"] > 0 and head["plan_speedup_vs_oracle"] > 0


@pytest.mark.skipif(not _has_sglang(), reason="needs the sglang==0.5.23 wheel (scripts/test.sh installs it)")
def test_inprocess_figures_positive(bench):
    reqs = bench.load_requests(["kimi-k3-tp8-pp8.json"])
    res = bench.bench_inprocess(reqs, runs=2, min_time_ours=0.01, min_time_ref=0.01, min_iters_ref=1, log=lambda _: None)
    row = res["requests"]["kimi-k3 tp8 pp8"]
    for key in ("ours_plans_per_s", "ours_preset_form_plans_per_s", "sglang_plans_per_s", "sglang_oracle_plans_per_s"):
        assert row[key]["median"] > 0 and row[key]["min"] > 0 and row[key]["runs"] == 2
    assert row["sglang_functions_ms"]["median"] > 0  # SGLang's launch-path functions, timed alone
    # SGLang's own path = its resolution + its config load + its sizing functions, each timed alone.
    for key in ("sglang_resolve_ms", "sglang_model_config_ms"):
        assert row[key]["median"] > 0 and row[key]["runs"] == 2
    parts = row["sglang_resolve_ms"]["median"] + row["sglang_model_config_ms"]["median"] + row["sglang_functions_ms"]["median"]
    assert row["sglang_path_ms"] == pytest.approx(parts)
    assert row["speedup_path"] == pytest.approx(parts * 1e3 / row["ours_us_per_plan"])
    assert row["stages"] == 8
    assert row["outputs_differ"] == {}  # the benchmark times two sides that agree
    assert res["plan_speedup_vs_sglang"] == row["speedup_path"]  # one request: the smallest is its own


@pytest.mark.skipif(not _has_sglang(), reason="needs the sglang==0.5.23 wheel (scripts/test.sh installs it)")
@pytest.mark.parametrize("name", ["kimi-k3-tp8-pp8.json", "qwen3-next-tp4-eagle.json", "nemotron-h-56b-pp4-mamba512.json"])
def test_sglang_config_load_times_every_request(bench, name):
    """SGLang's config load, as a launch does it (trust_remote_code off), runs on each of the
    three requests: the full config.json files carry `auto_map`, which must not send it looking
    for the author's remote code."""
    (req,) = bench.load_requests([name]).values()
    times = bench.sglang_model_config_ms(bench.expand_preset(req), 1, 0.01)
    assert times and min(times) > 0
