"""`mambasizer recommend`: the table and the paste-ready command, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json

from mambasizer.service.cli import main
from mambasizer.service.recommend import recommend

BODY = {
    "model": {"preset": "qwen3.5-35b-a3b"}, "gpu": "h200", "gpus": [1, 2, 4],
    "target": {"running_requests": 400, "context_length": 131072, "tokens_per_request": 4096},
    "search": {"tp_size": [1, 2], "pp_size": [1, 2]}, "limit": 4,
}


def run(capsys, *argv: str):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table_and_best_command(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(BODY))
    code, out, err = run(capsys, "recommend", str(path))
    assert code == 0, err
    best = recommend(BODY).candidates[0]
    assert out.startswith(recommend(BODY).why)
    assert "python -m sglang.launch_server --model-path MODEL " + " ".join(best.sglang_args) in out
    assert f"{best.max_total_num_tokens:,}" in out
    assert "running_requests target, " in out and "searched " in out and "pareto front" in out


def test_json_is_the_response(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(BODY))
    code, out, _ = run(capsys, "recommend", "--json", str(path))
    assert code == 0
    assert json.loads(out) == json.loads(recommend(BODY).model_dump_json())


def test_unmet_target_exits_1(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**BODY, "target": {"running_requests": 10**9}}))
    code, out, _ = run(capsys, "recommend", str(path))
    assert code == 1
    assert "No searched setting meets every target" in out


def test_invalid_input_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**BODY, "search": {"tp_size": [0]}}))
    code, out, err = run(capsys, "recommend", str(path))
    assert code == 2 and out == ""
    assert err.startswith("mambasizer: error: search.tp_size.0: ") and err.count("\n") == 1
    code, _, err = run(capsys, "recommend", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_readme_worked_example_is_the_real_output(capsys):
    """README's Kimi-K3 example is what the command prints today."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    cmd = "$ mambasizer recommend examples/recommend-kimi-k3-h200.json\n"
    shown = readme[readme.index(cmd) + len(cmd):].split("\n```", 1)[0]
    code, out, _ = run(capsys, "recommend", str(root / "examples" / "recommend-kimi-k3-h200.json"))
    assert code == 0
    assert out.rstrip("\n") == shown


def test_the_target_lines_say_what_they_count(tmp_path, capsys):
    """The JSON keys name the targets given; the text says what their figures count (a
    tokens_per_request target is checked as KV tokens over all workers)."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(BODY))
    code, out, _ = run(capsys, "recommend", str(path))
    assert code == 0
    t = recommend(BODY).candidates[0].targets
    assert t["tokens_per_request"].required == 400 * 4096
    assert (f"  tokens_per_request target, KV tokens over all workers (requests x tokens_per_request): "
            f"{t['tokens_per_request'].achieved:,} for 1,638,400 required") in out
    assert (f"  context_length target, KV tokens in one worker's pool (the served context when shorter): "
            f"{t['context_length'].achieved:,} for 131,072 required") in out
    assert f"  running_requests target, running requests over all workers: {t['running_requests'].achieved:,} for 400 required" in out
    assert "\n  tokens_per_request: " not in out and "\n  context_length: " not in out


def test_why_and_the_plan_header_name_the_release_planned(tmp_path, capsys):
    body = {**BODY, "sglang_version": "0.5.18"}
    result = recommend(body)
    assert result.candidates[0].plan.reference == "sglang==0.5.18"
    assert "SGLang 0.5.18 would start with max_running_requests" in result.why and "0.5.23" not in result.why
    # plan's header: the accounting and the verdict name the same release
    req = tmp_path / "p.json"
    req.write_text(json.dumps({"model": {"preset": "qwen3.5-35b-a3b"}, "server_args": {"tp_size": 2}, "budget": {"gpu": "h200"},
                               "sglang_version": "0.5.18"}))
    code, out, _ = run(capsys, "plan", str(req))
    assert code == 0
    assert out.splitlines()[0] == "qwen3.5-35b-a3b (qwen3_5), sglang-0.5.18 accounting: SGLang 0.5.18 would start"
    req.write_text(json.dumps({"model": {"preset": "qwen3.5-35b-a3b"}, "server_args": {"tp_size": 2}, "budget": {"gpu": "h200"},
                               "sglang_version": "0.5.18", "accounting": "whole-model"}))
    code, out, _ = run(capsys, "plan", str(req))
    assert out.splitlines()[0] == "qwen3.5-35b-a3b (qwen3_5), whole-model accounting: SGLang 0.5.18 would start"
