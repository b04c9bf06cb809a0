"""`mambasizer check` on a disaggregated deployment ({"prefill": ..., "decode": ...}, the
form POST /v1/plan takes): both sides must start; exit 0 / 1 / 2 as for one plan."""

from __future__ import annotations

import json

import pytest

from mambasizer.service.cli import main

Q3N = {"preset": "qwen3-next-80b-a3b-instruct"}


def side(**sa):
    return {"model": Q3N, "server_args": {"tp_size": 4, **sa}, "budget": {"gpu": "h200"}}


@pytest.fixture(autouse=True)
def termination_log(tmp_path, monkeypatch):
    path = tmp_path / "termination-log"
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(path))
    return path


def check(tmp_path, capsys, body, *argv):
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(body))
    code = main(["check", str(path), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_pair_passes_with_what_it_sustains(tmp_path, capsys):
    code, out, err = check(tmp_path, capsys, {"prefill": side(), "decode": side(max_running_requests=32)})
    assert code == 0, err
    first, *rest = out.rstrip("\n").split("\n")
    assert first.startswith("mambasizer check: OK: disaggregated pair starts (decode_concurrency=32,")
    assert "prefill: " in first and "| decode: " in first and "binding_side=decode" in first
    assert any(line.startswith("mambasizer check: warning: decode side: ") and "97 mamba rows" in line for line in rest)


def test_pair_requirements_are_the_decode_sides(tmp_path, capsys):
    code, out, err = check(tmp_path, capsys, {"prefill": side(), "decode": side(max_running_requests=32)},
                           "--require-max-running-requests", "64")
    assert code == 1 and out == ""
    assert err.startswith("mambasizer check: FAIL: decode side: ") and "max_running_requests 32 < required 64" in err


def test_a_side_that_does_not_start_fails_the_pair(tmp_path, capsys):
    tiny = {"model": Q3N, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 0.01}}
    code, _, err = check(tmp_path, capsys, {"prefill": tiny, "decode": side()})
    assert code == 1 and err.startswith("mambasizer check: FAIL: prefill side: ")


@pytest.mark.parametrize("body,fragment", [
    ({"prefill": side()}, "decode: a disaggregated plan needs both sides"),
    ({"prefill": side(), "decode": side(dcp_size=3)}, "decode.server_args.dcp_size: tensor_model_parallel_size (4) must be divisible"),
    ({"prefill": side(disaggregation_mode="decode"), "decode": side()}, "prefill.server_args.disaggregation_mode"),
])
def test_bad_pair_is_exit_2_with_one_line(tmp_path, capsys, termination_log, body, fragment):
    code, out, err = check(tmp_path, capsys, body)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err
    assert termination_log.read_text().strip() == err.strip()


def test_gpu_flag_budgets_both_sides(tmp_path, capsys):
    measured = {"model": Q3N, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 40}}
    code, out, err = check(tmp_path, capsys, {"prefill": measured, "decode": measured}, "--gpu", "h200")
    assert code == 0, err
    assert out.count("budget=estimated") == 2


def test_pair_over_url_gives_the_in_process_verdict(tmp_path, capsys):
    from mambasizer.service.disaggregated import plan_pair
    from tests.deploy.test_deploy_check_cmd import _Service

    body = {"prefill": side(), "decode": side(max_running_requests=32)}
    local = check(tmp_path, capsys, body)
    with _Service(200, plan_pair(body)) as svc:
        remote = check(tmp_path, capsys, body, "--url", svc.url)
    assert svc.requests[0][0] == "/v1/plan" and set(svc.requests[0][1]) == {"prefill", "decode"}
    assert remote == local and local[0] == 0
