"""`mambasizer recommend --disaggregated`: the prefill/decode recommend from the command line,
the same answer POST /v1/recommend/disaggregated gives (without the API's time bound)."""

from __future__ import annotations

import json
from pathlib import Path

from mambasizer.service.cli import main
from mambasizer.service.recommend.disaggregated import recommend_disaggregated

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "recommend-disaggregated-kimi-k3-h200.json"


def run(capsys, *argv: str):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_is_the_libraries_answer(capsys):
    code, out, err = run(capsys, "recommend", "--disaggregated", "--json", str(EXAMPLE))
    assert code == 0, err
    answer = json.loads(out)
    direct = recommend_disaggregated(json.loads(EXAMPLE.read_text()))
    assert answer == json.loads(direct.model_dump_json())
    assert answer["gpus"] == answer["prefill"]["gpus"] + answer["decode"]["gpus"]


def test_text_names_each_side_its_launch_line_and_the_pair(capsys):
    code, out, err = run(capsys, "recommend", "--disaggregated", str(EXAMPLE))
    assert code == 0, err
    r = recommend_disaggregated(json.loads(EXAMPLE.read_text()))
    assert r.prefill is not None and r.decode is not None and r.pair is not None
    for c in (r.prefill, r.decode):
        assert f"{c.role}: {c.replicas} x {c.gpus_per_replica} GPUs (tp {c.tp_size}, pp {c.pp_size}," in out
        assert f"per replica {c.requests_per_replica:,} requests, {c.kv_tokens_per_replica:,} KV tokens" in out
        assert " ".join(c.sglang_args) in out and "--disaggregation-mode " + c.role in out
    assert f"GPUs in all: {r.gpus:,}" in out
    assert f"pair: decode_concurrency {r.pair.decode_concurrency}, prefill_in_flight_requests {r.pair.prefill_in_flight_requests}" in out


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path):
    raw = json.loads(EXAMPLE.read_text())
    raw["decode"]["concurrent_requests"] = 0
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(raw))
    code, out, err = run(capsys, "recommend", "--disaggregated", str(f))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("mambasizer: error: decode.concurrent_requests")
    code, _, err = run(capsys, "recommend", "--disaggregated", str(EXAMPLE), "--gpu", "b200")
    assert code == 2 and err.startswith("mambasizer: error: --gpu/--gpu-price:")
