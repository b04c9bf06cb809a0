"""Ignore-list entries from a client's config (issue 25 item 8): an entry SGLang's own `re`
refuses, one linear-time matching cannot express, and a list over the bounds are each a 422
naming the field and the entry on every route that sizes a config (plan, recommend, sweep,
check-log), and exit 2 with one line on the CLI; a crafted backtracking pattern is answered."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from api_helpers import assert_problem
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.weights.quant.ignore_list import MAX_ENTRIES, MAX_ENTRY_CHARS

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "checklog"))
from synth_log import synth_log

FIELD = "model.hf_config.quantization_config.ignored_layers"


def _hf(entries) -> dict:
    hf = dict(PRESETS["qwen3.5-35b-a3b"].hf_config)
    hf["quantization_config"] = {"quant_method": "fp8", "ignored_layers": entries}
    return hf


def _bodies(hf: dict) -> dict[str, tuple[dict, str | None]]:
    log, _ = synth_log({"model": {"preset": "qwen3.5-35b-a3b"}, "server_args": {"tp_size": 2, "mem_fraction_static": 0.85},
                        "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0}}, "/models/unnamed")
    return {
        "/v1/plan": ({"model": {"hf_config": hf}, "budget": {"gpu": "h200"}}, ""),
        "/v1/recommend": ({"model": {"hf_config": hf}, "gpu": "h200", "target": {"running_requests": 8, "context_length": 8192}}, ""),
        "/v1/sweep": ({"base": {"model": {"hf_config": hf}, "budget": {"gpu": "h200"}},
                       "axes": [{"field": "server_args.tp_size", "values": [1, 2]}]}, "base."),
        "/v1/check-log": ({"log": log, "hf_config": hf}, None),
    }


@pytest.mark.parametrize("entry, why", [
    ("re:(", "not a valid regular expression"),
    ("model.(*", "not a valid regular expression"),
    (r"re:(a)\1", "backreference"),
    ("re:(?<=x)lm_head", "lookahead or lookbehind"),
])
def test_a_refused_entry_is_a_422_naming_it_on_every_route(client, entry, why):
    for path, (body, prefix) in _bodies(_hf(["lm_head", entry])).items():
        problem = assert_problem(client.post(path, json=body), 422)
        assert repr(entry) in problem["detail"] and why in problem["detail"], (path, problem)
        # check-log names its own hf_config field and the config's path in the detail
        if prefix is None:
            assert problem["field"] == "hf_config" and f"{FIELD}[1]" in problem["detail"]
        else:
            assert problem["field"] == f"{prefix}{FIELD}[1]", (path, problem)


def test_lists_over_the_bounds_are_422(client):
    body = {"model": {"hf_config": _hf(["lm_head"] * (MAX_ENTRIES + 1))}, "budget": {"gpu": "h200"}}
    problem = assert_problem(client.post("/v1/plan", json=body), 422, field=FIELD)
    assert f"at most {MAX_ENTRIES}" in problem["detail"]
    body = {"model": {"hf_config": _hf(["lm_head", "x" * (MAX_ENTRY_CHARS + 1)])}, "budget": {"gpu": "h200"}}
    problem = assert_problem(client.post("/v1/plan", json=body), 422, field=f"{FIELD}[1]")
    assert f"at most {MAX_ENTRY_CHARS}" in problem["detail"]
    body = {"model": {"hf_config": _hf("lm_head")}, "budget": {"gpu": "h200"}}
    assert_problem(client.post("/v1/plan", json=body), 422, field=FIELD)


def test_a_backtracking_pattern_is_matched_in_linear_time(client):
    """Python's re would backtrack for ages on this entry against every module name; RE2 does
    not (a regression hangs this test rather than timing it)."""
    crafted = "re:" + "(.*)" * 12 + "Z$"
    plain = client.post("/v1/plan", json={"model": {"hf_config": _hf(["lm_head"])}, "budget": {"gpu": "h200"}})
    resp = client.post("/v1/plan", json={"model": {"hf_config": _hf(["lm_head", crafted])}, "budget": {"gpu": "h200"}})
    assert resp.status_code == plain.status_code == 200, resp.text
    weights = [s["weights_bytes"] for s in resp.json()["stages"]]
    assert weights == [s["weights_bytes"] for s in plain.json()["stages"]]  # it matches no module
    # and a regex that does match a module moves its bytes (the entries are really applied)
    heads = client.post("/v1/plan", json={"model": {"hf_config": _hf([r"re:.*\.mlp\.experts", crafted])}, "budget": {"gpu": "h200"}})
    assert heads.status_code == 200 and heads.json()["stages"][0]["weights_bytes"] > weights[0]


def test_the_cli_exits_2_with_one_line(tmp_path):
    path = tmp_path / "req.json"
    path.write_text(json.dumps({"model": {"hf_config": _hf(["lm_head", "re:("])}, "budget": {"gpu": "h200"}}))
    proc = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", "plan", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{FIELD}[1]" in lines[0] and "'re:('" in lines[0], proc.stderr
