"""bench/sweep_bench.py runs end to end against a real server on a small sweep. No timing is
asserted: the figures only have to exist, and every point of every case must have answered."""

from __future__ import annotations

from pathlib import Path

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_sweep_bench_small(capsys):
    module = load_script(ROOT / "bench" / "sweep_bench.py", "mambasizer_sweep_bench")
    from bench.harness import load_requests  # the project root is on sys.path through sweep_bench

    res = module.bench_sweep(load_requests(), runs=1, points=50)
    labels = list(res["cases"])
    assert len(labels) == 4 and any("budget.gpu=h200" in label for label in labels)
    for row in res["cases"].values():
        assert row["points"] == 50
        assert row["json"]["median"] > 0 and row["csv"]["median"] > 0
        assert row["json"]["bytes"] > row["csv"]["bytes"] > 0
    module.print_sweep(res)
    out = capsys.readouterr().out
    assert "POST /v1/sweep, 50 points per call" in out and "slowest median" in out
