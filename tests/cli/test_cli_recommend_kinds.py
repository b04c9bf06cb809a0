"""`mambasizer recommend` across GPU kinds: --gpu (repeated) and --gpu-price NAME=PRICE give the
answer of the same request in the file, the table names each candidate's GPU and cost, and a
malformed price is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from mambasizer.service.api.recommend import THREE_GPUS
from mambasizer.service.cli import main
from mambasizer.service.recommend import recommend

ROOT = Path(__file__).resolve().parents[2]
FLAGS = ["--gpu", "h200", "--gpu", "b200", "--gpu", "mi300x", "--gpu-price", "h200=3.5", "--gpu-price", "b200=5.9", "--gpu-price", "mi300x=2.8"]


def run(capsys, *argv: str):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_flags_equal_the_request_file(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({k: v for k, v in THREE_GPUS.items() if k not in ("gpu", "gpu_prices")} | {"gpu": "l40s"}))
    code, flagged, _ = run(capsys, "recommend", "--json", str(path), *FLAGS)
    assert code == 0
    code, filed, _ = run(capsys, "recommend", "--json", str(ROOT / "examples" / "recommend-qwen3-next-three-gpus.json"))
    assert code == 0 and flagged == filed
    assert json.loads(filed) == json.loads(recommend(THREE_GPUS).model_dump_json())


def test_table_names_gpu_and_cost(capsys):
    code, out, _ = run(capsys, "recommend", str(ROOT / "examples" / "recommend-qwen3-next-three-gpus.json"))
    assert code == 0
    lines = out.split("\n")
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split() == ["#", "GPU", "GPUs", "cost/hour", "tp", "pp", "dp", "requests", "KV", "tokens", "mamba", "slots", "binding", "meets"]
    assert lines[lines.index(header) + 1].split()[:4] == ["1", "mi300x", "4", "11.20"]
    assert "pareto front (GPU, GPUs, cost/hour, requests, KV tokens): (b200, 1, 5.90, " in out


def test_a_price_added_to_the_file_and_one_gpu_flag(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**THREE_GPUS, "gpu_prices": {"h200": 3.5, "b200": 5.9}}))
    code, _, err = run(capsys, "recommend", str(path))
    assert code == 2
    assert err == ("mambasizer: error: gpu_prices: cheapest compares the cost per hour: give gpu_prices (price per "
                   "GPU-hour) for every requested GPU; missing: mi300x (allowed: h200, b200, mi300x)\n")
    code, _, _ = run(capsys, "recommend", "--json", str(path), "--gpu-price", "mi300x=2.8")
    assert code == 0
    # --gpu replaces the file's list: the two priced kinds are searched, a price left for
    # a GPU no longer requested is refused
    code, out, _ = run(capsys, "recommend", "--json", str(path), "--gpu", "b200", "--gpu", "h200")
    assert code == 0
    assert {c["gpu"] for c in json.loads(out)["candidates"]} == {"b200", "h200"}
    assert json.loads(out)["candidates"][0]["cost_per_hour"] == 11.8  # two B200 (two H200 miss the requests)
    code, _, err = run(capsys, "recommend", str(path), "--gpu", "b200")
    assert code == 2 and err.startswith("mambasizer: error: gpu_prices.h200: 'h200' is not one of the requested GPUs (b200)")


def test_malformed_price_is_one_line_exit_2(tmp_path, capsys):
    path = ROOT / "examples" / "recommend-qwen3-next-three-gpus.json"
    for bad in ("h200", "h200=", "=3", "h200=cheap"):
        code, out, err = run(capsys, "recommend", str(path), "--gpu-price", bad)
        assert code == 2 and out == ""
        assert err.startswith("mambasizer: error: --gpu-price: expected NAME=PRICE") and err.count("\n") == 1, err
    code, _, err = run(capsys, "recommend", str(path), "--gpu-price", "h200=-1")
    assert code == 2 and err.startswith("mambasizer: error: gpu_prices.h200: Input should be greater than 0")
    code, _, err = run(capsys, "recommend", str(path), "--gpu", "h200", "--gpu", "nope")
    assert code == 2 and err.startswith("mambasizer: error: gpu: unknown GPU 'nope'")
