"""One verdict per launch flag on every front: each flag SGLang 0.5.23's parser knows, with a
representative value, is accepted (200 / exit 0 or 1) or refused (422 / exit 2, the same field
and message) alike by the front door itself, `POST /v1/plan` (sglang_args), `mambasizer plan
FILE`, `mambasizer check --preset P --gpu G -- ARGS` and the command the Helm chart's preflight
hook renders for the same values.

The expected verdict is read from the code (the front door, `service/requests.prepare`, then
`plan()`), never written per flag: the flag table (service/sglang_args.py and its JSON) may
reclassify a flag and this test follows. A few regression rows from issue 25 are pinned.

Cost: the front door, the API (TestClient) and the CLI in process (its real `main`) run over
every flag; the CLI and the Helm hook as real processes (a shell, the `mambasizer` command)
run over a deterministic sample: the pinned rows plus a fixed-seed draw of refused and accepted
flags. `MAMBASIZER_FLAG_TABLE_ALL=1` runs the processes over every flag too (slow: a few
seconds a flag).
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from deploy.deploy_helpers import CHART, documents, one, render
from mambasizer.service import sglang_args as sa
from mambasizer.service.api.app import create_app
from mambasizer.service.cli import main
from mambasizer.service.planner import plan
from mambasizer.service.requests import bounded, prepare
from mambasizer.service.solver import PlanInputError

ROOT = Path(__file__).resolve().parents[2]
PRESET = "qwen3-next-80b-a3b-instruct"
GPU = "h200"  # a GPU-only estimate: the weights are the checkpoint's own, so weight-moving flags are refused
BASE = ["--tp-size", "4"]
RELEASE = "0.5.23"
ALL_ENV = "MAMBASIZER_FLAG_TABLE_ALL"
SEED = 25  # the issue's number: the sample is the same on every run
SAMPLE_REFUSED = 6
SAMPLE_ACCEPTED = 4

# Issue 25's regression rows: the gate passed these while the API refused them.
PINNED_REFUSED = (
    ("--quantization", "fp8"),
    ("--cpu-offload-gb", "20"),
    ("--speculative-draft-model-quantization", "fp8"),
)


def representative(flag) -> list[str]:
    """The flag with a value other than SGLang's default (a default is a no-op by rule), of the
    kind its parser takes: a choice, a number beside the default, or a plain word."""
    option = flag.options[0]
    if flag.nargs == 0:
        return [option]
    if flag.choices:
        return [option, next((str(c) for c in flag.choices if str(c) != str(flag.default)), str(flag.choices[0]))]
    default = flag.default
    if isinstance(default, bool):
        return [option, "1"]
    if isinstance(default, int):
        return [option, str(default + 1)]
    if isinstance(default, float):
        return [option, repr(default / 2 if default else 0.5)]
    return [option, "1"]


def _rows() -> list[tuple[str, ...]]:
    _, by_dest = sa._flags(RELEASE)
    rows = {tuple(representative(f)) for f in by_dest.values()}
    return sorted(rows | set(PINNED_REFUSED))


ROWS = _rows()


@dataclass(frozen=True)
class Verdict:
    refused: bool
    field: str | None = None
    message: str | None = None
    feasible: bool | None = None
    tokens: int | None = None
    ignored: tuple[str, ...] = ()


def body(argv: tuple[str, ...] | list[str]) -> dict:
    return {"model": {"preset": PRESET}, "budget": {"gpu": GPU}, "sglang_args": [*BASE, *argv]}


def library(argv) -> Verdict:
    """The front door's own verdict: what every other front must answer."""
    try:
        prepared = prepare(body(argv), allow_trial=False)
        p = plan(prepared.request)
    except PlanInputError as exc:
        return Verdict(True, exc.field, exc.message)
    return Verdict(False, feasible=p.feasible, tokens=p.max_total_num_tokens, ignored=tuple(prepared.ignored_sglang_args or ()))


_VERDICTS: dict[tuple[str, ...], Verdict] = {}


def verdict(argv) -> Verdict:
    key = tuple(argv)
    if key not in _VERDICTS:
        _VERDICTS[key] = library(key)
    return _VERDICTS[key]


def _line(field: str | None, message: str | None) -> str:
    return " ".join(f"{field}: {message}".split())


def sample() -> list[tuple[str, ...]]:
    if os.environ.get(ALL_ENV) == "1":
        return ROWS
    pinned = [tuple(r) for r in PINNED_REFUSED]
    rest = [r for r in ROWS if r not in pinned]
    refused = [r for r in rest if verdict(r).refused]
    accepted = [r for r in rest if not verdict(r).refused]
    rng = random.Random(SEED)
    return pinned + rng.sample(refused, SAMPLE_REFUSED) + rng.sample(accepted, SAMPLE_ACCEPTED)


# --------------------------------------------------------------------------- the table itself


def test_the_table_covers_every_flag_and_both_verdicts():
    _, by_dest = sa._flags(RELEASE)
    assert {r[0] for r in ROWS} >= {f.options[0] for f in by_dest.values()}
    refused = [r for r in ROWS if verdict(r).refused]
    accepted = [r for r in ROWS if not verdict(r).refused]
    # Both verdicts occur (read from the code, so the split moves as flags are reclassified).
    assert refused and accepted, (len(refused), len(accepted))
    for row in refused:
        v = verdict(row)
        assert v.field is not None and v.field.startswith(("sglang_args", "server_args", "env", "model", "budget")), (row, v)


@pytest.mark.parametrize("row", PINNED_REFUSED, ids=" ".join)
def test_issue_25_regression_rows_are_refused_by_name(row):
    v = verdict(row)
    assert v.refused and v.field == "sglang_args", v
    assert row[0] in v.message and "GPU-only estimate does not model" in v.message


# --------------------------------------------------------------------------- every flag, in process


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), raise_server_exceptions=False) as c:
        yield c


def test_the_api_answers_every_flag_as_the_front_door(client):
    wrong = []
    for row in ROWS:
        expected = verdict(row)
        resp = client.post("/v1/plan", json=body(row))
        if expected.refused:
            problem = resp.json() if resp.status_code == 422 else {}
            got = (resp.status_code, problem.get("field"), problem.get("detail"))
            want = (422, expected.field, bounded(expected.message or ""))
        else:
            answer = resp.json() if resp.status_code == 200 else {}
            got = (resp.status_code, answer.get("feasible"), answer.get("max_total_num_tokens"), tuple(answer.get("ignored_sglang_args") or ()))
            want = (200, expected.feasible, expected.tokens, expected.ignored)
        if got != want:
            wrong.append((row, got, want))
    assert wrong == []


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _cli_agrees(row, code: int, err: str, prefix: str) -> str | None:
    """None when the CLI's exit code and line say what the front door says; else why not."""
    expected = verdict(row)
    if expected.refused:
        lines = err.strip().splitlines()
        if code != 2 or len(lines) != 1 or not lines[0].startswith(prefix + _line(expected.field, expected.message)):
            return f"exit {code}: {err.strip()[:300]}"
        return None
    want = 0 if expected.feasible else 1
    return None if code == want else f"exit {code} (want {want}): {err.strip()[:300]}"


def test_plan_file_and_check_answer_every_flag_as_the_front_door(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination-log"))
    request = tmp_path / "request.json"
    wrong = []
    for row in ROWS:
        request.write_text(json.dumps(body(row)))
        code, _, err = _cli(capsys, "plan", str(request))
        why = _cli_agrees(row, code, err, "mambasizer: error: ")
        if why:
            wrong.append(("plan", row, why))
        code, _, err = _cli(capsys, "check", "--preset", PRESET, "--gpu", GPU, "--", *BASE, *row)
        why = _cli_agrees(row, code, err, "mambasizer check: invalid input: ")
        if why:
            wrong.append(("check", row, why))
    assert wrong == []


# --------------------------------------------------------------------------- processes: the CLI and the Helm hook


def _shim(tmp_path: Path) -> dict:
    """`mambasizer` on PATH, this tree's CLI (as the image's entry point runs it)."""
    shim = tmp_path / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "mambasizer").write_text(f"#!/bin/sh\nexec {sys.executable} -m mambasizer.service.cli \"$@\"\n")
    (shim / "mambasizer").chmod(0o755)
    return {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
            "MAMBASIZER_TERMINATION_LOG": str(tmp_path / "termination-log")}


def _hook_command(row) -> list[str]:
    """The container command the chart renders for a preflight with these launch arguments."""
    values = {"preflight": {"enabled": True, "preset": PRESET, "gpu": GPU, "sglangArgs": [*BASE, *row]}}
    job = one(documents(render(CHART, copy.deepcopy(values))), "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    return [*container["command"], *container.get("args", [])]


@pytest.mark.parametrize("row", sample(), ids=" ".join)
def test_the_cli_and_the_rendered_preflight_hook_as_processes(row, tmp_path):
    env = _shim(tmp_path)
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body(row)))
    runs = {
        "plan": (["mambasizer", "plan", str(request)], "mambasizer: error: "),
        "check": (["mambasizer", "check", "--preset", PRESET, "--gpu", GPU, "--", *BASE, *row], "mambasizer check: invalid input: "),
        "helm": (_hook_command(row), "mambasizer check: invalid input: "),
    }
    assert runs["helm"][0][:6] == ["mambasizer", "check", "--preset", PRESET, "--gpu", GPU]
    for front, (argv, prefix) in runs.items():
        done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert _cli_agrees(row, done.returncode, done.stderr, prefix) is None, (front, done.returncode, done.stderr)
