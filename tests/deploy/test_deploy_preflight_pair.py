"""The preflight hook on a 1P1D pair (`preflight.prefill` / `preflight.decode`, or `request:
{prefill, decode}` as `mambasizer check` takes it) and with `upgradeTo`: the chart renders the
pair as the JSON `check -` reads, the rendered command runs the real CLI in a shell as the pod
would, and the install fails when either side would not start; bad forms are one line."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from deploy_helpers import CHART, FULL_VALUES, ROOT, documents, helm, k8s_validate, one, render

QWEN = "qwen3-next-80b-a3b-instruct"


def _values(**preflight) -> dict:
    values = copy.deepcopy(FULL_VALUES)
    values["preflight"] = {"enabled": True, **preflight}
    return values


def _container(values: dict) -> dict:
    job = one(documents(render(CHART, values)), "Job")
    k8s_validate(job)
    return job["spec"]["template"]["spec"]["containers"][0]


def _run(tmp_path, c: dict) -> subprocess.CompletedProcess:
    """The rendered command line, in a shell, against the real CLI (as the pod runs it)."""
    env = {e["name"]: e["value"] for e in c["env"]}
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "mambasizer").write_text(f"#!/bin/sh\nexec {sys.executable} -c 'from mambasizer.service.cli import main; raise SystemExit(main())' \"$@\"\n")
    (shim / "mambasizer").chmod(0o755)
    run_env = {**os.environ, **env, "PATH": f"{shim}:{os.environ['PATH']}", "MAMBASIZER_TERMINATION_LOG": str(tmp_path / "termination-log"),
               "PYTHONPATH": str(ROOT)}
    return subprocess.run(c["command"], env=run_env, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_preset_sides_render_as_the_pair_check_takes_and_pass(tmp_path):
    c = _container(_values(
        prefill={"preset": QWEN, "gpu": "h200", "sglangArgs": ["--tp-size", 4]},
        decode={"preset": QWEN, "gpu": "h200", "sglangArgs": ["--tp-size", "4", "--max-running-requests", "32"]},
        require={"maxRunningRequests": 32},
    ))
    env = {e["name"]: e["value"] for e in c["env"]}
    assert json.loads(env["MAMBASIZER_REQUEST_JSON"]) == {
        "prefill": {"model": {"preset": QWEN}, "budget": {"gpu": "h200"}, "sglang_args": ["--tp-size", "4"]},
        "decode": {"model": {"preset": QWEN}, "budget": {"gpu": "h200"}, "sglang_args": ["--tp-size", "4", "--max-running-requests", "32"]},
    }
    assert c["command"][4:] == ["--require-max-running-requests", "32"]
    result = _run(tmp_path, c)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("mambasizer check: OK: disaggregated pair starts (decode_concurrency=32,")


def test_a_side_that_would_not_start_fails_the_install(tmp_path):
    c = _container(_values(
        prefill={"preset": QWEN, "gpu": "h200", "sglangArgs": ["--tp-size", "4"]},
        decode={"model": {"preset": QWEN}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 0.01}},
    ))
    result = _run(tmp_path, c)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("mambasizer check: FAIL: decode side: SGLang 0.5.23 would not start qwen3-next-80b-a3b-instruct")
    assert (tmp_path / "termination-log").read_text() == result.stderr


def test_request_takes_the_pair_form_of_check(tmp_path):
    side = {"model": {"preset": QWEN}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 40}}
    c = _container(_values(request={"prefill": side, "decode": side}))
    env = {e["name"]: e["value"] for e in c["env"]}
    assert json.loads(env["MAMBASIZER_REQUEST_JSON"]) == {"prefill": side, "decode": side}
    assert _run(tmp_path, c).returncode == 0


def test_upgrade_to_fails_the_install_on_the_slack_the_upgrade_loses(tmp_path):
    # Nemotron-H-56B TP 2 x PP 4 on 0.5.16 -> 0.5.23: 60.1% of pp_rank 1's slack goes to the pools.
    request = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2, "pp_size": 4, "mem_fraction_static": 0.88},
               "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 110.0}}
    c = _container(_values(request=request, sglangVersion="0.5.16", upgradeTo="0.5.23"))
    assert c["command"][4:] == ["--sglang-version", "0.5.16", "--upgrade-to", "0.5.23", "--max-capacity-loss", "0.1",
                                "--max-slack-loss", "0.5"]
    result = _run(tmp_path, c)
    assert result.returncode == 1
    assert result.stderr == ("mambasizer check: FAIL: upgrade to SGLang 0.5.23: SGLang 0.5.23 leaves 19.90 GiB outside the pools on "
                             "pp_rank 1 where SGLang 0.5.16 left 49.88 GiB: 60.1% of the slack lost (activations, CUDA graphs, NCCL "
                             "live there), more than --max-slack-loss 0.5\n")
    c = _container(_values(request=request, sglangVersion="0.5.16", upgradeTo="0.5.23", maxSlackLoss=0.7))
    result = _run(tmp_path, c)
    assert result.returncode == 0, result.stderr
    assert "mambasizer check: OK: upgrade to SGLang 0.5.23: starts with max_running_requests 25 -> 99" in result.stdout


def test_no_upgrade_to_no_upgrade_flags():
    c = _container(_values(preset=QWEN, gpu="h200", sglangArgs=["--tp-size", "4"]))
    assert "--upgrade-to" not in c["args"] and "--max-slack-loss" not in c["args"]


def _refusal_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text.strip(), text
    return text.split("): ", 1)[1]


GPU_SIDE = {"preset": QWEN, "gpu": "h200", "sglangArgs": ["--tp-size", "4"]}


@pytest.mark.parametrize("preflight, line", [
    ({"prefill": GPU_SIDE}, ("mambasizer preflight: a 1P1D pair needs both prefill and decode (each a PlanRequest, or preset or modelPath with "
                             "gpu or budgetGiB, and sglangArgs)")),
    ({"prefill": GPU_SIDE, "decode": GPU_SIDE, "preset": QWEN, "gpu": "h200"},
     "mambasizer preflight: set prefill and decode (a 1P1D pair), or preset / request (one deployment), not both"),
    ({"prefill": GPU_SIDE, "decode": {"preset": QWEN, "sglangArgs": ["--tp-size", "4"]}},
     ("mambasizer preflight: decode.preset needs a budget: set decode.gpu (e.g. gpu: h200, planned from the GPU alone; with "
      "gpuMemoryMib where its capacity is unconfirmed) or "
      "decode.budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)")),
    ({"prefill": {**GPU_SIDE, "budgetGiB": 40}, "decode": GPU_SIDE},
     ("mambasizer preflight: prefill.preset takes gpu or budgetGiB, not both: keep prefill.gpu (e.g. gpu: h200, planned from the "
      "GPU alone; with gpuMemoryMib where its capacity is unconfirmed) or prefill.budgetGiB (e.g. budgetGiB: 40, GiB per GPU left for the mamba/KV split)")),
])
def test_bad_pair_forms_are_one_line_naming_the_field(preflight, line):
    with pytest.raises(helm().HelmError) as info:
        render(CHART, _values(**preflight))
    assert _refusal_line(info.value) == line


@pytest.mark.parametrize("preflight, field", [
    ({"prefill": {"preset": QWEN, "gpu": "h200", "bogus": 1}, "decode": GPU_SIDE}, "prefill"),
    ({"upgradeTo": "0.6.0", "preset": QWEN, "gpu": "h200"}, "upgradeTo"),
    ({"maxSlackLoss": 1.5, "preset": QWEN, "gpu": "h200"}, "maxSlackLoss"),
])
def test_the_values_schema_refuses_bad_pair_and_upgrade_values(preflight, field):
    with pytest.raises(Exception) as info:
        render(CHART, _values(**preflight))
    assert field in str(info.value)
