"""bench/heavy_bench.py runs end to end against a real server, briefly. No timing is asserted
(that is the benchmark's job): the probes must have answered 200 throughout, the eight heavy
recommends must all have been stopped at the deadline with 503, and the pool must have
answered every ordinary recommend and sweep."""

from __future__ import annotations

from pathlib import Path

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_heavy_bench_small(capsys):
    module = load_script(ROOT / "bench" / "heavy_bench.py", "mambasizer_heavy_bench")
    res = module.bench_heavy(seconds=1.0, requests=4, deadline_s=6.0)
    for phase in ("idle", "eight_heavy"):
        for probe in ("livez", "plan"):
            assert res[phase][probe]["n"] > 5 and res[phase][probe]["non_200"] == 0, (phase, probe, res[phase][probe])
    assert res["eight_heavy"]["load"]["statuses"] == {"503": 8}
    assert res["recommend"]["statuses"] == {"200": 4} and res["sweep"]["statuses"] == {"200": 4}
    assert res["recommend"]["serial_per_s"] > 0 and res["sweep"]["serial_per_s"] > 0
    module.print_heavy(res)
    out = capsys.readouterr().out
    assert "8 heavy recommends" in out and "through the pool" in out
