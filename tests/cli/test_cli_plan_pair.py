"""`mambasizer plan PAIR.json`: a prefill/decode pair from the command line, each side as
POST /v1/plan plans it alone, and the pair's summary."""

from __future__ import annotations

import json
from pathlib import Path

from mambasizer.service import disaggregated
from mambasizer.service import requests as wire
from mambasizer.service.cli import main
from mambasizer.service.planner import plan

ROOT = Path(__file__).resolve().parents[2]
PAIR = ROOT / "examples" / "disaggregated" / "qwen3-next-h200-1p1d.json"


def run(capsys, *argv: str):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_pair_json_is_what_the_api_answers(capsys):
    code, out, err = run(capsys, "plan", "--json", str(PAIR))
    assert code == 0, err
    answer = json.loads(out)
    assert answer == disaggregated.plan_pair(json.loads(PAIR.read_text()))
    # each side is the plan of that side alone, with its role set
    raw = json.loads(PAIR.read_text())
    for role in ("prefill", "decode"):
        alone = plan(wire.prepare(disaggregated.split(raw)[0][role], allow_trial=False).request)
        assert answer[role]["max_running_requests"] == alone.max_running_requests
        assert answer[role]["resolved"]["disaggregation_mode"] == role
    assert answer["pair"]["decode_concurrency"] == answer["decode"]["max_running_requests"]


def test_pair_table_shows_both_sides_and_the_pair(capsys):
    code, out, err = run(capsys, "plan", str(PAIR))
    assert code == 0, err
    answer = disaggregated.plan_pair(json.loads(PAIR.read_text()))
    assert "== prefill side (1 replica(s))" in out and "== decode side (1 replica(s))" in out
    assert f"mem_fraction_static {answer['prefill']['resolved']['mem_fraction_static']:g}" in out
    assert f"mem_fraction_static {answer['decode']['resolved']['mem_fraction_static']:g}" in out
    assert "== the pair: both sides would start" in out
    assert f"decode_concurrency            {answer['pair']['decode_concurrency']:,}" in out
    assert f"prefill_kv_tokens             {answer['pair']['prefill_kv_tokens']:,}" in out


def test_a_bad_side_is_one_line_naming_the_side_field(capsys, tmp_path):
    raw = json.loads(PAIR.read_text())
    raw["prefill"]["sglang_args"] = ["--tp", "four"]
    bad = tmp_path / "pair.json"
    bad.write_text(json.dumps(raw))
    code, out, err = run(capsys, "plan", str(bad))
    assert code == 2 and out == ""
    assert err.startswith("mambasizer: error: prefill.sglang_args") and err.count("\n") == 1


def test_a_pair_that_cannot_start_exits_1(capsys, tmp_path):
    raw = json.loads(PAIR.read_text())
    raw["decode"]["budget"] = {"rest_gib": 0.5}
    f = tmp_path / "pair.json"
    f.write_text(json.dumps(raw))
    code, out, _ = run(capsys, "plan", str(f))
    assert code == 1
    assert "== the pair: would NOT start" in out and "the decode side would not start" in out
