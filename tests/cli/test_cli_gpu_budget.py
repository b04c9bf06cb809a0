"""`mambasizer check --gpu` (the Helm preflight's form: no measured figures) and the plan
table's weights column."""

from __future__ import annotations

import json

import pytest

from mambasizer.service.cli import main
from mambasizer.service.planner import plan

PRESET = "qwen3-next-80b-a3b-instruct"


@pytest.fixture(autouse=True)
def termination_log(tmp_path, monkeypatch):
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination-log"))


def run(capsys, *argv: str):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_preset_with_gpu_passes_with_the_estimated_figures(capsys):
    code, out, err = run(capsys, "check", "--preset", PRESET, "--gpu", "h200", "--", "--tp-size", "4")
    assert code == 0, err
    p = plan({"model": {"preset": PRESET}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}})
    assert f"max_total_num_tokens={p.max_total_num_tokens}" in out
    assert f"budget=estimated (free_gib_after_load={p.free_gib_after_load:.2f}, set by pp stage 0)" in out
    assert out.split("\n")[1:] == [f"mambasizer check: warning: {w}" for w in p.warnings] + [""]


def test_check_off_catalog_capacity_prints_the_plans_hopper_warning(capsys):
    # --gpu-memory-mib off the catalog: the same warning POST /v1/plan answers, on its own line
    code, out, err = run(capsys, "check", "--preset", PRESET, "--gpu-memory-mib", "100000", "--", "--tp-size", "4")
    assert code == 0, err
    p = plan({"model": {"preset": PRESET}, "server_args": {"tp_size": 4}, "budget": {"gpu_memory_mib": 100000}})
    hopper = next(w for w in p.warnings if "Hopper's resolution" in w)
    lines = out.rstrip("\n").split("\n")
    assert lines[0].startswith(f"mambasizer check: OK: {PRESET} starts under SGLang 0.5.23")
    assert "mambasizer check: warning: " + hopper.removeprefix("mambasizer: ") in lines[1:]
    assert len(lines) == 1 + len(p.warnings)


def test_check_gpu_replaces_a_request_files_budget(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"model": {"preset": PRESET}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 0.01}}))
    code, _out, err = run(capsys, "check", str(path))
    assert code == 1  # the file's own budget does not start
    code, _out, err = run(capsys, "check", str(path), "--gpu", "h200")
    assert code == 0, err


def test_check_gpu_weights_that_do_not_fit_exit_1_with_the_fix(capsys, tmp_path):
    code, out, err = run(capsys, "check", "--preset", PRESET, "--gpu", "h100")
    assert code == 1 and out == ""
    assert "[weights_do_not_fit]" in err and "fix: --tp-size 4 starts" in err  # at TP 2 the 74 GiB shards fit but leave no KV room
    assert err.count("\n") == 1


@pytest.mark.parametrize("argv, part", [
    (["--preset", PRESET, "--gpu", "v100"], "budget.gpu: 'v100' is Volta (SM 7.0)"),
    (["--preset", PRESET, "--gpu", "mi325x"], "budget.gpu_memory_mib: is needed with budget.gpu 'mi325x'"),
    (["--preset", PRESET, "--gpu", "h200", "--budget-gib", "40"], "not both"),
    (["--preset", PRESET, "--reserved-gib", "2"], "--reserved-gib needs --gpu"),
])
def test_check_gpu_input_errors_exit_2_on_one_line(capsys, argv, part):
    code, out, err = run(capsys, "check", *argv)
    assert code == 2 and out == ""
    assert part in err and err.count("\n") == 1


def test_check_reserved_gib_and_gpu_memory_mib(capsys):
    code, out, _ = run(capsys, "check", "--preset", PRESET, "--gpu-memory-mib", "143771", "--reserved-gib", "3", "--", "--tp-size", "4")
    assert code == 0
    p = plan({"model": {"preset": PRESET}, "server_args": {"tp_size": 4}, "budget": {"gpu_memory_mib": 143771, "reserved_gib": 3}})
    assert f"max_total_num_tokens={p.max_total_num_tokens}" in out


def test_plan_table_has_a_weights_column(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"pp_size": 4}, "budget": {"gpu": "h100"}}))
    code, out, err = run(capsys, "plan", str(path))
    assert code == 0, err
    p = plan(json.loads(path.read_text()))
    assert "budget ESTIMATED from a 81,559 MiB GPU" in out and f"set by pp stage {p.min_free_stage}" in out
    header = next(line for line in out.splitlines() if line.strip().startswith("pp_rank"))
    assert "weights" in header.split()
    for s in p.stages:
        row = next(line for line in out.splitlines() if line.strip().startswith(f"{s.pp_rank} ") and f"{s.start_layer}-" in line)
        assert f"{s.weights_bytes / 2**30:.2f} GiB" in row


@pytest.mark.parametrize("argv, part", [
    (["--gpu-labels", "nvidia.com/gpu.product=NVIDIA-Foo"], "--gpu-labels: gpu_labels: 'NVIDIA-Foo' is no catalog part"),
    (["--gpu", "h200", "--gpu-labels", "nvidia.com/gpu.product=NVIDIA-H200"], "give --gpu or --gpu-labels, not both"),
    (["--gpu", "h200", "--host-available-mib", "1000"], "budget.host_available_mib: applies only to an integrated"),
])
def test_check_gpu_labels_errors_exit_2_on_one_line(capsys, argv, part):
    code, out, err = run(capsys, "check", "--preset", PRESET, *argv)
    assert code == 2 and out == ""
    assert part in err and err.count("\n") == 1


def test_check_plans_from_gpu_labels_and_host_memory(capsys, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("nvidia.com/gpu.product: NVIDIA-GB10\nnvidia.com/gpu.compute.major: 12\nnvidia.com/gpu.compute.minor: 1\n")
    code, out, err = run(capsys, "check", "--preset", "qwen3.5-27b", "--gpu-labels", f"@{labels}", "--host-available-mib", "110000")
    assert code == 0, err
    assert "budget=estimated" in out


LISTED = ["rtx-3090", "a10", "rtx-4090", "rtx-5090", "l20", "l40", "a100-40gb", "a800", "mi355x", "gb10", "b300", "rtx-pro-6000"]


@pytest.mark.parametrize("gpu", LISTED)
def test_each_listed_part_checks_by_name_as_the_planner_plans_it(capsys, gpu):
    from mambasizer.service.planner import plan

    p = plan({"model": {"preset": "qwen3.5-27b"}, "server_args": {"tp_size": 4}, "budget": {"gpu": gpu}})
    code, out, err = run(capsys, "check", "--preset", "qwen3.5-27b", "--gpu", gpu, "--", "--tp-size", "4")
    assert code == (0 if p.feasible else 1), err
    if p.feasible:
        assert f"max_total_num_tokens={p.max_total_num_tokens}," in out
