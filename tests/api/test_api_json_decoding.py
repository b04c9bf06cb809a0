"""How a request body's JSON is read (issue 17 §Medium, issue 21), on every route that parses
one, whatever its Content-Type: a key given twice in one object is a 422 naming it (Python's
json would keep the last silently); Infinity / NaN are read as Python's json reads them inside
a model's hf_config (a real config.json carries them) and refused, naming the field, anywhere
else; and no 422 quotes more than a bounded part of what the client sent."""

from __future__ import annotations

import json

import pytest

from api_helpers import assert_problem
from mambasizer.service.api.problems import INVALID_INPUT
from mambasizer.service.api.wire import MAX_MESSAGE_CHARS, bounded
from mambasizer.service.presets import PRESETS

NEMOTRON = "nemotron-h-56b-base-8k"
ROUTES = ["/v1/plan", "/v1/plan/compare", "/v1/recommend", "/v1/recommend/disaggregated", "/v1/sweep", "/v1/check-log"]
SWEEP_AXES = '"axes":[{"field":"server_args.tp_size","values":[1]}]'


@pytest.mark.parametrize("route", [r for r in ROUTES if r != "/v1/check-log"])
def test_a_duplicated_top_level_key_is_named(client, route):
    # Whatever the Content-Type: these routes read every body as JSON.
    body = b'{"model":{"preset":"kimi-k3"},"model":{"preset":"qwen3.5-35b-a3b"},"budget":{"gpu":"h200"}}'
    problem = assert_problem(client.post(route, content=body, headers={"content-type": "text/plain"}), 422, field="model", type_=INVALID_INPUT)
    assert problem["detail"] == "is given more than once in the same JSON object ('model'); give each key once"


def test_check_log_json_body_with_a_duplicated_key(client):
    # check-log reads a JSON body only as application/json (otherwise the body is the log).
    body = b'{"log":"one","log":"two"}'
    problem = assert_problem(client.post("/v1/check-log", content=body, headers={"content-type": "application/json"}), 422, field="log")
    assert problem["detail"] == "is given more than once in the same JSON object ('log'); give each key once"


def test_a_duplicated_nested_key_is_named_by_its_path(client):
    body = b'{"model":{"preset":"kimi-k3"},"server_args":{"tp_size":8,"pp_size":2,"tp_size":4},"budget":{"gpu":"h200"}}'
    problem = assert_problem(client.post("/v1/plan", content=body), 422, field="server_args.tp_size")
    assert problem["detail"] == "is given more than once in the same JSON object ('tp_size'); give each key once"


def test_a_duplicated_key_inside_a_list_is_named_by_its_index(client):
    body = (b'{"base":{"model":{"preset":"kimi-k3"},"budget":{"gpu":"h200"}},'
            b'"axes":[{"field":"server_args.tp_size","values":[1],"values":[2]}]}')
    problem = assert_problem(client.post("/v1/sweep", content=body), 422, field="axes.0.values")
    assert "more than once" in problem["detail"]


def _nemotron_body() -> bytes:
    body = {"model": {"hf_config": dict(PRESETS[NEMOTRON].hf_config)}, "budget": {"rest_gib": 30.0}}
    text = json.dumps(body, allow_nan=True)
    assert '"time_step_limit": [0.0, Infinity]' in text  # the published file's own token
    return text.encode()


def test_infinity_in_a_pasted_config_plans_like_the_preset(client):
    by_config = client.post("/v1/plan", content=_nemotron_body())
    by_preset = client.post("/v1/plan", json={"model": {"preset": NEMOTRON}, "budget": {"rest_gib": 30.0}})
    assert by_config.status_code == 200 == by_preset.status_code, by_config.text
    assert by_config.json()["max_total_num_tokens"] == by_preset.json()["max_total_num_tokens"]


def test_infinity_in_a_sweep_base_config_plans(client):
    plan_body = json.loads(_nemotron_body())
    text = json.dumps({"base": plan_body, "axes": [{"field": "server_args.tp_size", "values": [1, 2]}]}, allow_nan=True)
    resp = client.post("/v1/sweep", content=text)
    assert resp.status_code == 200, resp.text
    assert [r["feasible"] for r in resp.json()["rows"]] == [True, True]


def test_nan_in_a_sizing_integer_of_a_config_names_the_key(client):
    text = _nemotron_body().decode().replace('"hidden_size": 8192', '"hidden_size": NaN')
    problem = assert_problem(client.post("/v1/plan", content=text), 422, field="model.hf_config.hidden_size")
    assert problem["detail"] == "must be a finite integer, got nan: SGLang sizes the model from it"


@pytest.mark.parametrize("body, field, name", [
    (b'{"model":{"preset":"kimi-k3"},"budget":{"rest_gib":NaN}}', "budget.rest_gib", "NaN"),
    (b'{"model":{"preset":"kimi-k3"},"budget":{"rest_gib":Infinity}}', "budget.rest_gib", "Infinity"),
    (b'{"model":{"preset":"kimi-k3"},"budget":{"gpu":"h200"},"server_args":{"mem_fraction_static":-Infinity}}',
     "server_args.mem_fraction_static", "-Infinity"),
    (b'{"base":{"model":{"preset":"kimi-k3"},"budget":{"gpu":"h200"}},"axes":[{"field":"budget.rest_gib","values":[1,Infinity]}]}',
     "axes.0.values.1", "Infinity"),
])
def test_a_non_finite_number_outside_a_config_is_refused_by_field(client, body, field, name):
    route = "/v1/sweep" if body.startswith(b'{"base"') else "/v1/plan"
    problem = assert_problem(client.post(route, content=body), 422, field=field, type_=INVALID_INPUT)
    assert problem["detail"] == f"is {name}: numbers must be finite here (only a model's hf_config, a config.json, may carry Infinity or NaN)"


def test_a_megabyte_string_is_not_echoed_back(client):
    hf = {"model_type": "x" * 1_000_000}
    resp = client.post("/v1/plan", json={"model": {"hf_config": hf}, "budget": {"rest_gib": 30.0}})
    problem = assert_problem(resp, 422, field="model.hf_config.model_type")
    assert len(problem["detail"]) == MAX_MESSAGE_CHARS
    assert problem["detail"].startswith("model_type='xxx") and " … " in problem["detail"]
    # The end of the message (what is supported) survives the cut.
    assert problem["detail"].endswith("LFM2 / LFM2-MoE (ShortConv) [model_type: lfm2, lfm2_moe]")
    assert len(resp.content) < 4 * MAX_MESSAGE_CHARS + 2048  # allowed (the model types) included


def test_bounded_keeps_short_text_and_cuts_the_middle_of_long_text():
    assert bounded("short") == "short"
    text = "a" * 600 + "b" * 10_000 + "c" * 400
    out = bounded(text)
    assert len(out) == MAX_MESSAGE_CHARS
    assert out.startswith("a" * 598 + " … ") and out.endswith(" … " + "c" * 399)


def test_the_cli_line_is_bounded_too(tmp_path, capsys):
    from mambasizer.service.cli import main

    path = tmp_path / "req.json"
    path.write_text(json.dumps({"model": {"hf_config": {"model_type": "y" * 1_000_000}}, "budget": {"rest_gib": 30.0}}))
    assert main(["plan", str(path)]) != 0
    err = capsys.readouterr().err
    assert err.startswith("mambasizer: error: model.hf_config.model_type: model_type='yyy")
    assert len(err) < 2 * MAX_MESSAGE_CHARS + 100


def test_a_number_too_large_for_a_float_is_infinity_and_refused_outside_a_config(client):
    body = b'{"model":{"preset":"kimi-k3"},"budget":{"rest_gib":1e400}}'
    problem = assert_problem(client.post("/v1/plan", content=body), 422, field="budget.rest_gib")
    assert problem["detail"].startswith("is Infinity: numbers must be finite here")
