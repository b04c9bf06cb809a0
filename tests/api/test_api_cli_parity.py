"""`mambasizer plan --json REQUEST.json` prints exactly what `POST /v1/plan` answers
(the issue's `curl -s localhost:8000/v1/plan -d @request.json`), for every sizable preset
at a realistic budget, and for the other request forms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from api_helpers import H200
from mambasizer.service.api.examples import PLAN_EXAMPLES
from mambasizer.service.cli import main
from mambasizer.service.presets import PRESETS

SIZABLE = [p.name for p in PRESETS.values() if p.sizable]


def _cli_json(path: Path, capsys) -> tuple[int, bytes]:
    code = main(["plan", "--json", str(path)])
    out = capsys.readouterr().out
    return code, out.encode()


@pytest.mark.parametrize("name", SIZABLE)
@pytest.mark.parametrize("budget", [H200, {"rest_gib": 40.0}], ids=["profiled", "rest_gib"])
def test_cli_json_equals_api_body_for_every_sizable_preset(client, tmp_path, capsys, name, budget):
    req = {"model": {"preset": name}, "budget": budget}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(req, indent=2))
    # Sent as curl -d @file sends it: form encoding, newlines stripped.
    resp = client.post("/v1/plan", content=path.read_bytes().replace(b"\n", b""), headers={"content-type": "application/x-www-form-urlencoded"})
    assert resp.status_code == 200
    code, out = _cli_json(path, capsys)
    assert out == resp.content + b"\n"
    assert code == (0 if resp.json()["feasible"] else 1)


@pytest.mark.parametrize("name", sorted(k for k in PLAN_EXAMPLES if k != "trial"))
def test_cli_json_equals_api_body_for_every_request_form(client, tmp_path, capsys, name):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(PLAN_EXAMPLES[name]["value"]))
    resp = client.post("/v1/plan", content=path.read_bytes())
    code, out = _cli_json(path, capsys)
    assert out == resp.content + b"\n"
    assert code == (0 if resp.json()["feasible"] else 1)


def test_console_script_prints_the_api_body(client, tmp_path):
    script = Path(sys.executable).with_name("mambasizer")
    if not script.exists():
        pytest.skip("console script not installed (pip install -e .)")
    req = {"model": {"preset": "kimi-linear-48b-a3b-instruct"}, "server_args": {"tp_size": 2, "pp_size": 2}, "budget": H200}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(req))
    result = subprocess.run([str(script), "plan", "--json", str(path)], capture_output=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == client.post("/v1/plan", json=req).content + b"\n"
