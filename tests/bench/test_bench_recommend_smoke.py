"""bench/run.py's recommend section runs end to end and prints its figures (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_recommend_section_headline(capsys):
    bench = load_script(ROOT / "bench" / "run.py", "mambasizer_bench_run_rec")
    assert bench.main(["--skip-http", "--skip-inprocess", "--runs", "1", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "-- recommend" in out and "looping plan() over the same" in out
    head = json.loads(out.strip().splitlines()[-1])
    for name in ("kimi-k3 <=64 h200", "kimi-k3 <=128 h200"):
        assert head["recommend_p50_ms"][name] > 0 and head["recommend_first_ms"][name] > 0
        assert head["recommend_plans_per_s"][name] > 0 and head["loop_plan_per_s"][name] > 0
