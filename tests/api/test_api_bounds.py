"""Every number that drives work has one bound, held on every path (issue 17 §2).

pp_size against the model's layers (plan, compare, sweep points, recommend candidates,
however the pp_size was reached: given, derived from `gpus`, or with a setting SGLang
refuses for another reason), pp_size derived from `gpus` against ServerArgs' 1..1024, and
a sweep's points x stages. Each refusal is a 422 naming the field, answered before any
stage is built: in milliseconds and without memory growth.
"""

from __future__ import annotations

import time

import psutil
import pytest

from api_helpers import assert_problem
from mambasizer.schemas.request import MAX_PARALLEL
from mambasizer.schemas.sweep import MAX_STAGES

PP_PRESET = "nemotron-h-56b-base-8k"  # 118 layers, takes PP
LAYERS = 118
FAST_S = 2.0  # generous: what these catch took minutes (239 s, 146 s)
RSS_LIMIT = 64 << 20


def _bounded(client, url, body):
    rss = psutil.Process().memory_info().rss
    t0 = time.perf_counter()
    resp = client.post(url, json=body)
    assert time.perf_counter() - t0 < FAST_S
    assert psutil.Process().memory_info().rss - rss < RSS_LIMIT
    return resp


@pytest.mark.parametrize("spec", [None, "NGRAM", "EAGLE"])
def test_pp_size_above_the_layers_is_refused_whatever_else_sglang_refuses(client, spec):
    server_args = {"pp_size": 1024}
    if spec:
        server_args["speculative_algorithm"] = spec
    body = {"model": {"preset": PP_PRESET}, "server_args": server_args, "budget": {"rest_gib": 30.0}}
    resp = _bounded(client, "/v1/plan", body)
    problem = assert_problem(resp, 422, field="server_args.pp_size")
    assert problem["detail"] == (
        f"is 1024 but the model has num_hidden_layers={LAYERS}: SGLang 0.5.23 asserts num_hidden_layers >= pp_size "
        f"when it builds the model; use pp_size {LAYERS} or less"
    )


def test_ngram_with_pp_within_the_layers_is_still_sglangs_refusal(client):
    body = {"model": {"preset": PP_PRESET}, "server_args": {"pp_size": 2, "speculative_algorithm": "NGRAM"}, "budget": {"rest_gib": 30.0}}
    plan = client.post("/v1/plan", json=body).json()
    assert plan["feasible"] is False and plan["error"]["kind"] == "launch_rejected"
    assert "only supports EAGLE" in plan["error"]["message"]
    assert len(plan["stages"]) == 2


def test_compare_holds_the_same_pp_bound(client):
    body = {"model": {"preset": PP_PRESET}, "server_args": {"pp_size": 1024, "speculative_algorithm": "NGRAM"}, "budget": {"rest_gib": 30.0}}
    problem = assert_problem(_bounded(client, "/v1/plan/compare", body), 422, field="server_args.pp_size")
    assert f"num_hidden_layers={LAYERS}" in problem["detail"]


def test_recommend_pp_derived_from_gpus_obeys_the_pp_bound(client):
    body = {"model": {"preset": PP_PRESET}, "gpu": "h200", "gpus": [MAX_PARALLEL * MAX_PARALLEL], "search": {"speculative": ["NGRAM"]}}
    problem = assert_problem(_bounded(client, "/v1/recommend", body), 422, field="gpus")
    assert problem["detail"] == (
        f"these GPU counts need pp_size {MAX_PARALLEL * MAX_PARALLEL // 8:,} or more at tp_size 8 or less; "
        f"pp_size is at most {MAX_PARALLEL}: give fewer GPUs per replica, or search.tp_size"
    )


def test_recommend_derived_pp_beyond_the_layers_is_counted_refused_not_planned(client):
    # 8 x 256 GPUs: pp 256 at tp 8 (above the 118 layers), pp 2048.. dropped by the 1..1024 bound.
    body = {"model": {"preset": PP_PRESET}, "gpu": "h200", "gpus": [2048], "search": {"speculative": ["NGRAM", None]}}
    resp = _bounded(client, "/v1/recommend", body)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["candidates"] == []
    # pp 256 at tp 8, pp 512 at tp 4, pp 1024 at tp 2, each with and without NGRAM.
    assert out["refused"] == {"invalid server_args.pp_size": 6}
    assert out["searched"] == 6


def test_sweep_points_times_stages_is_bounded_before_planning(client):
    base = {"model": {"preset": PP_PRESET}, "server_args": {"pp_size": 100}, "budget": {"rest_gib": 30.0}}
    body = {"base": base, "axes": [{"field": "server_args.context_length", "values": list(range(1, 10_001))}]}
    problem = assert_problem(_bounded(client, "/v1/sweep", body), 422, field="axes")
    assert problem["detail"] == (
        f"10,000 points plan 1,000,000 pipeline stages in all (pp_size up to 100); a sweep plans at most {MAX_STAGES:,}: "
        "fewer points, or smaller pp_size values (split it into several calls)"
    )


def test_sweep_stage_bound_names_the_pp_axis(client):
    base = {"model": {"preset": PP_PRESET}, "budget": {"rest_gib": 30.0}}
    body = {"base": base, "axes": [
        {"field": "server_args.context_length", "values": list(range(1, 201))},
        {"field": "server_args.pp_size", "values": [1024, 1000]},
    ]}
    problem = assert_problem(_bounded(client, "/v1/sweep", body), 422, field="axes.1")
    assert problem["detail"].startswith("400 points plan 404,800 pipeline stages in all (pp_size up to 1,024)")


def test_sweep_within_the_stage_bound_plans_every_point(client):
    base = {"model": {"preset": PP_PRESET}, "budget": {"rest_gib": 30.0}}
    body = {"base": base, "axes": [{"field": "server_args.pp_size", "values": [1, 2, 118, 119]}]}
    rows = client.post("/v1/sweep", json=body).json()["rows"]
    assert [len(r["stages"]) for r in rows] == [1, 2, 118, 0]
    assert rows[3]["error_kind"] == "invalid_input" and rows[3]["error_field"] == "server_args.pp_size"


def test_a_sweep_axis_with_strings_has_at_most_1000_values(client):
    base = {"model": {"preset": PP_PRESET}, "budget": {"gpu": "h200"}}
    body = {"base": base, "axes": [{"field": "budget.gpu", "values": ["h200"] * 1000 + [None]}]}
    problem = assert_problem(client.post("/v1/sweep", json=body), 422, field="axes.0.values")
    assert problem["detail"] == "has 1001 values with a string among them; an axis with strings has at most 1000"


def test_a_numeric_sweep_axis_still_takes_10000_values(client):
    base = {"model": {"preset": PP_PRESET}, "budget": {"rest_gib": 30.0}}
    body = {"base": base, "axes": [{"field": "server_args.context_length", "values": list(range(1, 10_001))}]}
    resp = client.post("/v1/sweep", json=body, headers={"accept": "text/csv"})
    assert resp.status_code == 200
    assert resp.text.count("\r\n") == 10_001


@pytest.mark.parametrize("route", ["/v1/plan", "/v1/recommend"])
def test_launch_arguments_have_one_bound_on_every_route(client, route):
    from mambasizer.schemas.request import MAX_SGLANG_ARG_CHARS, MAX_SGLANG_ARGS

    body = {"model": {"preset": PP_PRESET}, "budget": {"gpu": "h200"}} if route == "/v1/plan" else {"model": {"preset": PP_PRESET}, "gpu": "h200"}
    too_many = {**body, "sglang_args": ["--tp-size", "2"] * (MAX_SGLANG_ARGS // 2) + ["--pp-size"]}
    problem = assert_problem(client.post(route, json=too_many), 422, field="sglang_args")
    assert str(MAX_SGLANG_ARGS) in problem["detail"]
    too_long = {**body, "sglang_args": ["--served-model-name", "m" * (MAX_SGLANG_ARG_CHARS + 1)]}
    problem = assert_problem(client.post(route, json=too_long), 422, field="sglang_args.1")
    assert problem["detail"] == f"is longer than {MAX_SGLANG_ARG_CHARS} characters"


def test_check_log_json_form_log_is_bounded_below_the_body_limit(client):
    from mambasizer.schemas.checklog import MAX_JSON_LOG_CHARS

    resp = client.post("/v1/check-log", json={"log": "x" * (MAX_JSON_LOG_CHARS + 1)})
    problem = assert_problem(resp, 422, field="log")
    assert "at most 524288 characters" in problem["detail"]
