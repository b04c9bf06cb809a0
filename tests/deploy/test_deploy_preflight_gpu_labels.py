"""The preflight hook's node-label form (`preflight.gpuLabels`, `preflight.gpuLabelsFromNode`):
the chart renders `check --preset P --gpu-labels K=V,... -- ARGS` from GPU Feature Discovery's
labels, and the real `mambasizer check` gates the deployment on the part they name."""

from __future__ import annotations

import copy

import pytest

from deploy_helpers import CHART, FULL_VALUES, documents, helm, one, render
from mambasizer.service.cli import main
from mambasizer.service.solver import gpu_labels, gpus

H200_GFD = {"nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/gpu.memory": 143771, "nvidia.com/gpu.compute.major": 9,
            "nvidia.com/gpu.compute.minor": 0, "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.count": 8}


def _values(**preflight):
    values = copy.deepcopy(FULL_VALUES)
    pf = values["preflight"]
    pf.pop("budgetGiB", None)
    pf.update(preflight)
    return values


def _args(values) -> list[str]:
    job = one(documents(render(CHART, values)), "Job")
    return job["spec"]["template"]["spec"]["containers"][0]["args"]


def _run(args, tmp_path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination-log"))
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_gfd_labels_render_gpu_labels_and_the_real_cli_passes_them(tmp_path, monkeypatch, capsys):
    args = _args(_values(gpuLabels=H200_GFD))
    assert args[:4] == ["check", "--preset", "qwen3-next-80b-a3b-instruct", "--gpu-labels"]
    assert args[4] == ("nvidia.com/gpu.compute.major=9,nvidia.com/gpu.compute.minor=0,nvidia.com/gpu.count=8,"
                       "nvidia.com/gpu.family=hopper,nvidia.com/gpu.memory=143771,nvidia.com/gpu.product=NVIDIA-H200")
    assert "--gpu" not in args and "--budget-gib" not in args
    code, out = _run(args, tmp_path, monkeypatch, capsys)
    assert code == 0, out
    assert "budget=estimated" in out


def test_labels_of_a_part_too_small_fail_the_install(tmp_path, monkeypatch, capsys):
    """An RTX 4090 node (24 GiB): Qwen3-Next-80B at TP 4 does not fit, and the hook says so."""
    labels = gpu_labels.labels_of(gpus.CATALOG["rtx-4090"])
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-GeForce-RTX-4090"
    code, out = _run(_args(_values(gpuLabels=labels)), tmp_path, monkeypatch, capsys)
    assert code == 1, out
    assert "weights_do_not_fit" in out


def test_labels_and_gpu_together_are_refused_on_one_line():
    with pytest.raises(helm().HelmError) as info:
        render(CHART, _values(gpu="h200", gpuLabels=H200_GFD))
    assert str(info.value).split("): ", 1)[1] == "mambasizer preflight: preset takes gpu or gpuLabels (gpuLabelsFromNode), not both"


def test_labels_from_a_node_need_a_live_cluster():
    """Helm's lookup reads nothing when rendering offline: the hook refuses, naming the node."""
    with pytest.raises(helm().HelmError) as info:
        render(CHART, _values(gpuLabelsFromNode="gpu-node-1"))
    line = str(info.value).split("): ", 1)[1]
    assert line.startswith('mambasizer preflight: gpuLabelsFromNode: node "gpu-node-1" has no nvidia.com/gpu.* or amd.com/gpu.* labels')


@pytest.mark.parametrize("gpu", ["rtx-3090", "a10", "rtx-5090", "l20", "a800", "mi355x", "gb10", "b300"])
def test_each_listed_part_gates_by_name_and_by_its_labels(tmp_path, monkeypatch, capsys, gpu):
    """preflight.gpu: NAME and preflight.gpuLabels (the part's own labels) render to the same
    verdict, which is the planner's."""
    from mambasizer.service.planner import plan

    p = plan({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4, "max_running_requests": 64},
              "budget": {"gpu": gpu}})
    by_name = _args(_values(gpu=gpu))
    assert by_name[3:5] == ["--gpu", gpu]
    by_labels = _args(_values(gpuLabels=gpu_labels.labels_of(gpus.CATALOG[gpu])))
    codes = [_run(args, tmp_path, monkeypatch, capsys)[0] for args in (by_name, by_labels)]
    # FULL_VALUES requires 64 running requests and a 32,768-token context.
    passes = p.feasible and (p.max_running_requests or 0) >= 64 and p.resolved.context_length >= 32768
    assert codes == [0, 0] if passes else codes == [1, 1]
