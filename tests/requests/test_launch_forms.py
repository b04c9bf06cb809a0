"""`check` and the preflight take a launch as deployments write it: `--model-path` naming a
shipped checkpoint (no --preset), `--gpu-memory-mib` beside `--gpu`, a release whose own parser
reads the line, and a 1P1D pair; each answers what `POST /v1/plan` answers for the same body
(service/requests is the one front door), and the chart's values render each into a command the
real CLI runs."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from deploy.deploy_helpers import CHART, documents, k8s_validate, one, render
from mambasizer.service.api.app import create_app
from mambasizer.service.cli import main
from mambasizer.service.planner import plan
from mambasizer.service.requests import command_line, prepare

ROOT = Path(__file__).resolve().parents[2]
NEMOTRON = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"  # a shipped checkpoint's HF repo id
QWEN = "qwen3-next-80b-a3b-instruct"
MI355X = {"gpu": "mi355x", "gpu_memory_mib": 294896}  # rocminfo Pool 1 KB / 1024 on one MI355X


@pytest.fixture(autouse=True)
def termination_log(tmp_path, monkeypatch):
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination-log"))


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), raise_server_exceptions=False) as c:
        yield c


def check(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def expected_line(body: dict) -> str:
    """The pass line `check` prints for the plan of `body`, built from plan() itself."""
    from mambasizer.service.cli.check_cmd import verdict

    p = plan(prepare(body, allow_trial=False).request).model_dump(mode="json")
    args = main.__globals__["build_parser"]().parse_args(["check", "x.json"])
    return verdict(p, args)


# --------------------------------------------------------------------------- --model-path


def test_model_path_names_the_model_without_preset(capsys, client):
    argv = ["--model-path", NEMOTRON, "--tp", "4"]
    code, out, err = check(capsys, "--gpu", "h200", "--", *argv)
    assert code == 0, err
    body = {"budget": {"gpu": "h200"}, "sglang_args": argv}
    assert out.splitlines()[0] == expected_line(body)
    answer = client.post("/v1/plan", json=body).json()
    p = plan(prepare(body).request)
    assert answer["model_name"] == p.model_name == "nvidia-nemotron-3-super-120b-a12b"
    assert f"max_total_num_tokens={answer['max_total_num_tokens']}," in out
    assert answer["max_total_num_tokens"] == p.max_total_num_tokens > 0


def test_model_path_beside_a_preset_must_name_its_checkpoint(capsys, client):
    same = check(capsys, "--preset", QWEN, "--gpu", "h200", "--", "--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp", "4")
    assert same[0] == 0 and same[1] == check(capsys, "--preset", QWEN, "--gpu", "h200", "--", "--tp", "4")[1]
    code, out, err = check(capsys, "--preset", QWEN, "--gpu", "h200", "--", "--model-path", NEMOTRON, "--tp", "4")
    assert code == 2 and out == ""
    line = err.strip()
    assert line.startswith(f"mambasizer check: invalid input: sglang_args: --model-path {NEMOTRON} names the checkpoint of preset "
                           f"'nvidia-nemotron-3-super-120b-a12b', but the request sizes preset '{QWEN}'")
    # The API refuses the same body with the same words.
    resp = client.post("/v1/plan", json={"model": {"preset": QWEN}, "budget": {"gpu": "h200"},
                                         "sglang_args": ["--model-path", NEMOTRON, "--tp", "4"]})
    assert resp.status_code == 422 and resp.json()["field"] == "sglang_args"
    assert line == f"mambasizer check: invalid input: sglang_args: {resp.json()['detail']}"


def test_a_launch_line_that_names_no_model_is_refused_by_field(capsys):
    code, _, err = check(capsys, "--gpu", "h200", "--", "--tp", "4")
    assert code == 2
    assert err.strip().startswith("mambasizer check: invalid input: model: is required: give model")
    assert "--model-path" in err


# --------------------------------------------------------------------------- --gpu-memory-mib


def test_gpu_memory_mib_gates_a_part_whose_capacity_is_unconfirmed(capsys):
    argv = ["--model-path", NEMOTRON, "--tp", "4"]
    code, out, err = check(capsys, "--gpu", "mi355x", "--gpu-memory-mib", "294896", "--", *argv)
    assert code == 0, err
    assert out.splitlines()[0] == expected_line({"budget": MI355X, "sglang_args": argv})
    # Without the capacity the catalog cannot confirm (mi325x: no public figure), the same line
    # is refused naming the field.
    code, _, err = check(capsys, "--gpu", "mi325x", "--", *argv)
    assert code == 2 and err.startswith("mambasizer check: invalid input: budget.gpu_memory_mib: is needed with budget.gpu 'mi325x'"), err


def test_budget_flags_are_one_line_usage_errors(capsys):
    code, _, err = check(capsys, "--gpu", "h200", "--budget-gib", "40", "--", "--model-path", NEMOTRON)
    assert code == 2 and err == "mambasizer check: invalid input: give --budget-gib or --gpu / --gpu-memory-mib, not both\n"
    code, _, err = check(capsys, "--", "--model-path", NEMOTRON)
    assert code == 2 and err == f"mambasizer check: invalid input: a launch line needs a budget: {command_line.BUDGET_FORMS}\n"


# --------------------------------------------------------------------------- --sglang-version


def test_the_release_parser_reads_the_launch_line(capsys, client):
    """0.5.13 spells the mamba cache strategy --mamba-scheduler-strategy: the CLI form parsed
    every line with 0.5.23's flags, so it took --mamba-radix-cache-strategy, which the API refuses."""
    old = ["--sglang-version", "0.5.13", "--preset", QWEN, "--gpu", "h200", "--", "--tp", "4"]
    code, _, err = check(capsys, *old, "--mamba-radix-cache-strategy", "no_buffer")
    assert code == 2
    assert err.startswith("mambasizer check: invalid input: sglang_args: unknown flag --mamba-radix-cache-strategy: "
                          "not a launch argument of SGLang 0.5.13")
    resp = client.post("/v1/plan", json={"model": {"preset": QWEN}, "budget": {"gpu": "h200"}, "sglang_version": "0.5.13",
                                         "sglang_args": ["--tp", "4", "--mamba-radix-cache-strategy", "no_buffer"]})
    assert resp.status_code == 422 and resp.json()["detail"].startswith("unknown flag --mamba-radix-cache-strategy")
    code, out, err = check(capsys, *old, "--mamba-scheduler-strategy", "no_buffer")
    assert code == 0, err
    body = {"model": {"preset": QWEN}, "budget": {"gpu": "h200"}, "sglang_version": "0.5.13",
            "sglang_args": ["--tp", "4", "--mamba-scheduler-strategy", "no_buffer"]}
    assert out.splitlines()[0] == expected_line(body)
    assert "starts under SGLang 0.5.13" in out


# --------------------------------------------------------------------------- a pair


def test_a_pair_file_on_a_part_given_by_gpu_and_capacity(tmp_path, capsys):
    side = {"model": {"preset": NEMOTRON}, "budget": {"rest_gib": 1}, "sglang_args": ["--tp", "4"]}
    path = tmp_path / "pair.json"
    path.write_text(json.dumps({"prefill": side, "decode": side}))
    code, out, err = check(capsys, "--gpu", "mi355x", "--gpu-memory-mib", "294896", str(path))
    assert code == 0, err
    from mambasizer.service.disaggregated import plan_pair

    answer = plan_pair({role: {**side, "budget": MI355X} for role in ("prefill", "decode")})
    pair = answer["pair"]
    assert out.startswith(f"mambasizer check: OK: disaggregated pair starts (decode_concurrency={pair['decode_concurrency']}, ")
    assert f"max_total_num_tokens={answer['decode']['max_total_num_tokens']}," in out


def test_a_pair_of_launch_lines_is_the_pair_file(capsys):
    """`-- <prefill line> -- <decode line>`: the shipped 1P1D example, written as its two
    nodes' launch lines, answers exactly what the example file answers."""
    prefill = ["--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp", "4", "--disaggregation-mode", "prefill"]
    decode = ["--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp", "4", "--disaggregation-mode", "decode",
              "--max-running-requests", "32"]
    by_lines = check(capsys, "--gpu", "h200", "--", *prefill, "--", *decode)
    by_file = check(capsys, str(ROOT / "examples" / "disaggregated" / "qwen3-next-h200-1p1d.json"))
    assert by_lines[0] == 0 and by_lines == by_file
    assert by_lines[1].startswith("mambasizer check: OK: disaggregated pair starts (decode_concurrency=32, prefill_in_flight_requests=")
    code, _, err = check(capsys, "--gpu", "h200", "--", *prefill, "--")
    assert code == 2 and err == ("mambasizer check: invalid input: a launch pair needs both lines: "
                                 "-- <prefill launch args> -- <decode launch args>\n")


# --------------------------------------------------------------------------- the chart


def _container(preflight: dict) -> dict:
    job = one(documents(render(CHART, {"preflight": {"enabled": True, **preflight}})), "Job")
    k8s_validate(job)
    return job["spec"]["template"]["spec"]["containers"][0]


def _run(tmp_path: Path, c: dict) -> subprocess.CompletedProcess:
    """The rendered command, in a process with `mambasizer` on PATH, as the hook's pod runs it."""
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "mambasizer").write_text(f"#!/bin/sh\nexec {sys.executable} -m mambasizer.service.cli \"$@\"\n")
    (shim / "mambasizer").chmod(0o755)
    env = {**os.environ, **{e["name"]: e["value"] for e in c["env"]}, "PATH": f"{shim}:{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT), "MAMBASIZER_TERMINATION_LOG": str(tmp_path / "termination-log")}
    return subprocess.run([*c["command"], *c.get("args", [])], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_chart_model_path_gpu_memory_and_release_reach_the_real_cli(tmp_path, capsys):
    c = _container({"modelPath": NEMOTRON, "gpu": "mi355x", "gpuMemoryMib": 294896, "sglangVersion": "0.5.17",
                    "sglangArgs": ["--tp", 4]})
    assert c["command"] == ["mambasizer"]
    assert c["args"] == ["check", "--gpu", "mi355x", "--gpu-memory-mib", "294896", "--sglang-version", "0.5.17", "--",
                         "--model-path", NEMOTRON, "--tp", "4"]
    done = _run(tmp_path, c)
    assert done.returncode == 0, done.stderr
    assert done.stdout == check(capsys, *c["args"][1:])[1]
    assert done.stdout.splitlines()[0] == expected_line(
        {"budget": MI355X, "sglang_version": "0.5.17", "sglang_args": ["--model-path", NEMOTRON, "--tp", "4"]})


def test_chart_takes_model_path_inside_sglang_args(tmp_path):
    c = _container({"gpu": "h200", "sglangArgs": ["--model-path", NEMOTRON, "--tp", "4"]})
    assert c["args"] == ["check", "--gpu", "h200", "--", "--model-path", NEMOTRON, "--tp", "4"]
    assert _run(tmp_path, c).returncode == 0


def test_chart_refuses_what_the_api_refuses(tmp_path, client):
    c = _container({"preset": QWEN, "gpu": "h200", "sglangArgs": ["--tp-size", "4", "--quantization", "fp8"]})
    done = _run(tmp_path, c)
    resp = client.post("/v1/plan", json={"model": {"preset": QWEN}, "budget": {"gpu": "h200"},
                                         "sglang_args": ["--tp-size", "4", "--quantization", "fp8"]})
    assert done.returncode == 2 and resp.status_code == 422
    assert done.stderr == f"mambasizer check: invalid input: sglang_args: {resp.json()['detail']}\n"
    assert (tmp_path / "termination-log").read_text() == done.stderr


def test_chart_pair_sides_in_the_launch_form(tmp_path, capsys):
    side = {"modelPath": NEMOTRON, "gpu": "mi355x", "gpuMemoryMib": 294896, "sglangArgs": ["--tp", "4"]}
    c = _container({"prefill": side, "decode": {**side, "sglangArgs": ["--tp", "4", "--max-running-requests", "32"]}})
    env = {e["name"]: e["value"] for e in c["env"]}
    request = json.loads(env["MAMBASIZER_REQUEST_JSON"])
    assert request == {
        "prefill": {"budget": MI355X, "sglang_args": ["--model-path", NEMOTRON, "--tp", "4"]},
        "decode": {"budget": MI355X, "sglang_args": ["--model-path", NEMOTRON, "--tp", "4", "--max-running-requests", "32"]},
    }
    done = _run(tmp_path, c)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(request))
    assert done.stdout == check(capsys, str(path))[1]
    assert done.stdout.startswith("mambasizer check: OK: disaggregated pair starts (decode_concurrency=32,")


BUDGETS = ("gpu (e.g. gpu: h200, planned from the GPU alone; with gpuMemoryMib where its capacity is unconfirmed) or budgetGiB "
           "(e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)")


@pytest.mark.parametrize("preflight, line", [
    ({"gpu": "h200", "sglangArgs": ["--tp", "4"]},  # no model named anywhere
     ("mambasizer preflight: set preset (or modelPath) or request; the forms: preset or modelPath (or --model-path in sglangArgs) "
     f"with {BUDGETS}, and sglangArgs; or request (a PlanRequest); or prefill and decode (a 1P1D pair)")),
    ({"modelPath": NEMOTRON, "sglangArgs": ["--tp", "4"]}, f"mambasizer preflight: modelPath needs a budget: set {BUDGETS}"),
    ({"sglangArgs": ["--model-path", NEMOTRON]}, f"mambasizer preflight: sglangArgs (its --model-path) needs a budget: set {BUDGETS}"),
    ({"modelPath": NEMOTRON, "gpuMemoryMib": 294896, "budgetGiB": 40},
     f"mambasizer preflight: modelPath takes gpu or budgetGiB, not both: keep {BUDGETS}"),
    ({"prefill": {"modelPath": NEMOTRON, "gpu": "h200"}, "decode": {"modelPath": NEMOTRON}},
     f"mambasizer preflight: decode.modelPath needs a budget: set decode.{BUDGETS.replace(') or budgetGiB', ') or decode.budgetGiB')}"),
])
def test_chart_refuses_a_launch_form_without_a_model_or_one_budget(preflight, line):
    from deploy.deploy_helpers import helm

    with pytest.raises(helm().HelmError) as info:
        render(CHART, {"preflight": {"enabled": True, **copy.deepcopy(preflight)}})
    text = str(info.value)
    assert "\n" not in text.strip()
    assert text.split("): ", 1)[1] == line
