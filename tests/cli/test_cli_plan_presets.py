"""`mambasizer plan` exit codes (0 starts, 1 would not, 2 invalid) and output, and
`mambasizer presets`."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mambasizer.service.cli import main
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS

ROOT = Path(__file__).resolve().parents[2]
SIZABLE = sorted(p.name for p in PRESETS.values() if p.sizable)
LISTED_ONLY = sorted(p.name for p in PRESETS.values() if not p.sizable)
OK = {"model": {"preset": "kimi-linear-48b-a3b-instruct"}, "server_args": {"tp_size": 2, "pp_size": 2}, "budget": {"rest_gib": 40.0}}
TOO_SMALL = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 0.1}}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path, obj, name="request.json") -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


# --------------------------------------------------------------------------- exit 0


def test_feasible_plan_table(tmp_path, capsys):
    code, out, err = run(capsys, "plan", write(tmp_path, OK))
    assert code == 0 and err == ""
    p = plan(OK)
    assert "kimi-linear-48b-a3b-instruct (kimi_linear)" in out and "would start" in out
    assert f"{p.max_total_num_tokens:,}" in out and f"{p.max_running_requests:,}" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("pp_rank"))
    assert lines[header].split()[:4] == ["pp_rank", "layers", "mamba", "attn"]
    rows = [line.split() for line in lines[header + 1 : header + 3]]
    assert [r[0] for r in rows] == ["0", "1"]
    assert [r[1] for r in rows] == [f"{s.start_layer}-{s.end_layer - 1}" for s in p.stages]


def test_feasible_plan_json(tmp_path, capsys):
    code, out, err = run(capsys, "plan", "--json", write(tmp_path, OK))
    assert code == 0 and err == ""
    assert out == plan(OK).model_dump_json() + "\n"


def test_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(OK).encode())))
    code, out, _ = run(capsys, "plan", "--json", "-")
    assert code == 0 and json.loads(out)["feasible"] is True


@pytest.mark.parametrize("name", SIZABLE)
def test_every_sizable_preset_tables(tmp_path, capsys, name):
    req = {"model": {"preset": name}, "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0, "gpu_memory_mib": 143771}}
    code, out, _ = run(capsys, "plan", write(tmp_path, req))
    assert code == (0 if plan(req).feasible else 1)
    assert out.startswith(name)


# --------------------------------------------------------------------------- exit 1


def test_would_not_start_prints_error_and_remedies(tmp_path, capsys):
    code, out, _ = run(capsys, "plan", write(tmp_path, TOO_SMALL))
    assert code == 1
    p = plan(TOO_SMALL)
    assert "would NOT start" in out
    assert f"error ({p.error.kind}): {p.error.exception}: {p.error.message}" in out
    assert "remedies:" in out
    for remedy in p.error.remedies:
        assert f"  - {remedy}" in out


# Refused plans leave mamba_ratio, the limits and the pools null: the table shows `-`, never
# Python's None. One request per kind of refusal the solver reports.
REFUSED = {
    "mamba_cache_too_small": {"model": {"preset": "qwen3-next-80b-a3b-instruct"},
                              "server_args": {"tp_size": 4, "mem_fraction_static": 0.2},
                              "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 101.3, "gpu_memory_mib": 143771}},
    "no_memory_for_kv": {"model": {"preset": "qwen3-next-80b-a3b-instruct"},
                         "server_args": {"tp_size": 4, "max_mamba_cache_size": 2000}, "budget": {"rest_gib": 0.5}},
    "state_cache_serves_no_request": {"model": {"preset": "qwen3-next-80b-a3b-instruct"},
                                      "server_args": {"tp_size": 4, "max_mamba_cache_size": 2}, "budget": {"rest_gib": 40}},
    "launch_rejected": {"model": {"preset": "qwen3-next-80b-a3b-instruct"},
                        "server_args": {"tp_size": 4, "page_size": 64, "mamba_radix_cache_strategy": "no_buffer"},
                        "budget": {"rest_gib": 40}},
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_plan_table_never_prints_none(tmp_path, capsys, case):
    req = REFUSED[case]
    p = plan(req)
    assert not p.feasible and p.error.kind == case
    code, out, err = run(capsys, "plan", write(tmp_path, req))
    assert code == 1
    assert "None" not in out and "None" not in err, out
    if p.mamba_ratio is None:
        assert "rest for the mamba split" in out and ", - mamba slots per request," in out


def test_would_not_start_json(tmp_path, capsys):
    code, out, err = run(capsys, "plan", "--json", write(tmp_path, TOO_SMALL))
    assert code == 1
    assert json.loads(out)["feasible"] is False
    assert out == plan(TOO_SMALL).model_dump_json() + "\n"
    assert "would not start" in err and "remedy:" in err


# --------------------------------------------------------------------------- exit 2


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"model": {"preset": "nope"}, "budget": {"rest_gib": 1}}, "mambasizer: error: model.preset: unknown preset 'nope' (neither a preset name nor a shipped checkpoint's HF repo id, any case); GET /v1/presets lists both; for another checkpoint paste its config.json as model.hf_config; "
         "listed but not sizable (GET /v1/presets/NAME says why): " + ", ".join(LISTED_ONLY)
         + "; the sizable presets are allowed (allowed: " + ", ".join(SIZABLE) + ")"),
        ({**OK, "server_args": {"pp_size": 2}, "model": {"preset": "qwen3-next-80b-a3b-instruct"}}, "mambasizer: error: server_args.pp_size: "),
        ({**OK, "bogus": 1}, "mambasizer: error: bogus: unknown field (not part of the PlanRequest contract)"),
        ({**OK, "server_args": {"kv_cache_dtype": "fp4"}}, "mambasizer: error: server_args.kv_cache_dtype: Input should be"),
        ({**OK, "budget": {"rest_gib": "x"}}, "mambasizer: error: budget.rest_gib: "),
        ({"model": {"hf_config": {"model_type": "llama"}}, "budget": {"rest_gib": 1}}, "mambasizer: error: model.hf_config.model_type: "),
        ("{not json", "mambasizer: error: request: "),
        ("[1, 2]", "mambasizer: error: request: "),
        ({**OK, "trial": {}}, "mambasizer: error: trial: "),
    ],
)
def test_invalid_input_is_one_line(tmp_path, capsys, content, expected):
    code, out, err = run(capsys, "plan", write(tmp_path, content))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(expected), lines[0]


def test_allowed_values_on_the_line(tmp_path, capsys):
    code, _, err = run(capsys, "plan", write(tmp_path, {**OK, "server_args": {"kv_cache_dtype": "fp4"}}))
    assert code == 2
    assert err.strip().endswith("(allowed: auto, bfloat16, bf16, fp8_e4m3, fp8_e5m2, mxfp8, nvfp4, fp4_mx_block16)")


def test_missing_file(tmp_path, capsys):
    code, out, err = run(capsys, "plan", str(tmp_path / "missing.json"))
    assert code == 2 and out == ""
    assert err.strip() == f"mambasizer: error: {tmp_path / 'missing.json'}: cannot read: No such file or directory"


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith("mambasizer: error: ")


# --------------------------------------------------------------------------- presets


def test_presets_table(capsys):
    code, out, _ = run(capsys, "presets")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["name", "sizable", "model_id"]
    for name, preset in PRESETS.items():
        row = next(line for line in lines if line.startswith(name + " "))
        assert row.split()[1] == ("yes" if preset.sizable else "no")
        if preset.reason:
            assert preset.reason[:40] in row
    assert f"{len(SIZABLE)} of {len(PRESETS)} presets" in out


def test_presets_json_is_the_api_list(capsys):
    from fastapi.testclient import TestClient

    from mambasizer.service.api.app import create_app

    code, out, _ = run(capsys, "presets", "--json")
    assert code == 0
    assert json.loads(out) == TestClient(create_app()).get("/v1/presets").json()


# --------------------------------------------------------------------------- entry points


def _entry(tmp_path, argv: list[str], *prefix: str):
    return subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_console_script_exit_codes(tmp_path):
    script = Path(sys.executable).with_name("mambasizer")
    if not script.exists():
        pytest.skip("console script not installed (pip install -e .)")
    ok, small, bad = write(tmp_path, OK, "ok.json"), write(tmp_path, TOO_SMALL, "small.json"), write(tmp_path, "{", "bad.json")
    assert _entry(tmp_path, ["plan", ok], str(script)).returncode == 0
    assert _entry(tmp_path, ["plan", small], str(script)).returncode == 1
    result = _entry(tmp_path, ["plan", bad], str(script))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert _entry(tmp_path, ["presets"], str(script)).returncode == 0


@pytest.mark.skipif(not (ROOT / "service" / "cli" / "__main__.py").exists(), reason="service/cli/__main__.py is not in this tree")
def test_python_m_service_cli(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mambasizer.service.cli", "plan", "--json", write(tmp_path, OK)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == plan(OK).model_dump_json() + "\n"
