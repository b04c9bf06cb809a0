"""`POST /v1/sweep`: every row equals `POST /v1/plan` at that point; bad points, axes and bases
are 422s naming the field; the point cap; CSV."""

from __future__ import annotations

import csv
import io
import json

import pytest

from api_helpers import H200, assert_problem, preset_request
from mambasizer.schemas.sweep import MAX_STRING_VALUES
from mambasizer.service.sweep import MAX_POINTS

QWEN_GPU = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}}


def _set(req: dict, field: str, value) -> dict:
    out = json.loads(json.dumps(req))
    node = out
    *parents, leaf = field.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
    return out


def _assert_row_is_the_plan(client, base: dict, row: dict) -> None:
    req = base
    for field, value in row["point"].items():
        req = _set(req, field, value)
    resp = client.post("/v1/plan", json=req)
    if row["error_kind"] == "invalid_input":
        body = assert_problem(resp, 422)
        assert body["field"] == row["error_field"] and body["detail"] == row["error_message"]
        return
    assert resp.status_code == 200, resp.text
    plan = resp.json()
    assert row["feasible"] == plan["feasible"]
    for f in ("max_running_requests", "max_total_num_tokens", "max_mamba_cache_size", "pp_max_micro_batch_size", "binding_limit", "gpu_memory_mib"):
        assert row[f] == plan[f], (f, row["point"])
    if plan["error"] is None:
        assert row["error_kind"] is None and row["error_message"] is None
    else:
        assert row["error_kind"] == plan["error"]["kind"] and row["error_message"] == plan["error"]["message"]
    assert len(row["stages"]) == len(plan["stages"])
    for rs, ps in zip(row["stages"], plan["stages"], strict=True):
        assert rs["pp_rank"] == ps["pp_rank"]
        assert rs["mamba_pool_bytes"] == ps["conv_state_bytes"] + ps["ssm_state_bytes"] + ps["intermediate_state_bytes"] + ps["replayssm_ring_bytes"]
        for f in ("weights_bytes", "kv_pool_bytes", "req_to_token_bytes", "idle_bytes", "kv_tokens"):
            assert rs[f] == ps[f], (f, row["point"])


@pytest.mark.parametrize(
    "base, axes",
    [
        # GPU-only budget, context length: req_to_token grows with it, the pools do not move
        (QWEN_GPU, [{"field": "server_args.context_length", "values": [8192, 65536, 262144]}]),
        # two axes, GPU x TP, with a Blackwell part (the solver refuses it: a row) and TP 3
        # (SGLang asserts on the state shapes: a row) and TP 1 (the weights do not fit)
        (QWEN_GPU, [{"field": "budget.gpu", "values": ["h100", "h200", "b200"]}, {"field": "server_args.tp_size", "values": [1, 3, 4, 8]}]),
        # measured budget with PP, the split ratio; null unsets the field (SGLang's default)
        (preset_request("kimi-linear-48b-a3b-instruct", {"rest_gib": 40.0}, tp_size=2, pp_size=2),
         [{"field": "server_args.mamba_full_memory_ratio", "values": [0.5, None, 2.0]}]),
        # profiler budget, mem_fraction_static x max_mamba_cache_size: 0.25 leaves nothing after the weights (refused)
        (preset_request(budget={k: v for k, v in H200.items() if k != "gpu_memory_mib"}, tp_size=4, mem_fraction_static=0.8),
         [{"field": "server_args.mem_fraction_static", "values": [0.25, 0.88]}, {"field": "server_args.max_mamba_cache_size", "values": [8, 600, None]}]),
        # PP over a GPU-only budget: per-stage weights differ by stage
        ({"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2}, "budget": {"gpu": "h100"}},
         [{"field": "server_args.pp_size", "values": [1, 2, 4]}]),
        # a model axis
        ({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}},
         [{"field": "model.preset", "values": ["qwen3-next-80b-a3b-instruct", "kimi-linear-48b-a3b-instruct", "nemotron-h-8b-base-8k"]}]),
    ],
)
def test_every_row_is_what_plan_answers(client, base, axes):
    resp = client.post("/v1/sweep", json={"base": base, "axes": axes})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    n = 1
    for a in axes:
        n *= len(a["values"])
    assert body["points"] == n == len(body["rows"])
    assert body["axes"] == [a["field"] for a in axes]
    # the first axis varies slowest
    expected_points = [{}]
    for a in axes:
        expected_points = [{**p, a["field"]: v} for p in expected_points for v in a["values"]]
    assert [r["point"] for r in body["rows"]] == expected_points
    for row in body["rows"]:
        _assert_row_is_the_plan(client, base, row)


def test_a_sweep_shows_what_moves(client):
    body = client.post("/v1/sweep", json={"base": QWEN_GPU, "axes": [
        {"field": "budget.gpu", "values": ["h100", "h200", "b200", "v100"]}, {"field": "server_args.tp_size", "values": [1, 3, 4, 8]}]}).json()
    rows = {(r["point"]["budget.gpu"], r["point"]["server_args.tp_size"]): r for r in body["rows"]}
    assert rows[("h200", 1)]["error_kind"] == "weights_do_not_fit" and rows[("h200", 1)]["stages"][0]["weights_bytes"] > 143771 << 20
    assert rows[("h200", 3)]["error_kind"] == "invalid_input" and rows[("h200", 3)]["error_field"] == "server_args.tp_size"
    assert rows[("v100", 4)]["error_kind"] == "invalid_input" and rows[("v100", 4)]["error_field"] == "budget.gpu"
    assert rows[("b200", 4)]["feasible"] and rows[("b200", 4)]["gpu_memory_mib"] == 183359  # SGLang's resolution on B200
    assert rows[("h200", 4)]["feasible"] and rows[("h200", 8)]["max_running_requests"] > rows[("h200", 4)]["max_running_requests"]
    assert rows[("h100", 8)]["max_total_num_tokens"] < rows[("h200", 8)]["max_total_num_tokens"]


def test_base_with_sglang_args(client):
    base = {"model": {"preset": "nemotron-h-56b-base-8k"}, "sglang_args": ["--tp-size", "2", "--pp-size", "4", "--host", "0.0.0.0"], "budget": {"gpu": "h200"}}
    body = client.post("/v1/sweep", json={"base": base, "axes": [{"field": "server_args.max_mamba_cache_size", "values": [64, 112]}]}).json()
    for row in body["rows"]:
        assert len(row["stages"]) == 4
        req = {"model": base["model"], "sglang_args": base["sglang_args"] + ["--max-mamba-cache-size", str(row["point"]["server_args.max_mamba_cache_size"])], "budget": base["budget"]}
        plan = client.post("/v1/plan", json=req).json()
        assert (row["max_running_requests"], row["max_total_num_tokens"], row["max_mamba_cache_size"]) == (
            plan["max_running_requests"], plan["max_total_num_tokens"], plan["max_mamba_cache_size"])


def test_csv(client):
    axes = [{"field": "server_args.pp_size", "values": [1, 2]}, {"field": "budget.gpu", "values": ["h200", "=HYPERLINK(1)"]}]
    base = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2}, "budget": {"gpu": "h200"}}
    resp = client.post("/v1/sweep", json={"base": base, "axes": axes}, headers={"accept": "text/csv"})
    assert resp.status_code == 200 and resp.headers["content-type"] == "text/csv; charset=utf-8"
    table = list(csv.reader(io.StringIO(resp.text)))
    rows = client.post("/v1/sweep", json={"base": base, "axes": axes}).json()["rows"]
    header = table[0]
    assert header[:3] == ["server_args.pp_size", "budget.gpu", "feasible"]
    assert header[-6:] == [f"pp1_{c}" for c in ("weights_bytes", "mamba_pool_bytes", "kv_pool_bytes", "req_to_token_bytes", "idle_bytes", "kv_tokens")]
    assert len(table) == 1 + len(rows) == 5
    for line, row in zip(table[1:], rows, strict=True):
        assert len(line) == len(header)
        cells = dict(zip(header, line, strict=True))
        assert cells["server_args.pp_size"] == str(row["point"]["server_args.pp_size"])
        assert cells["feasible"] == ("true" if row["feasible"] else "false")
        assert cells["max_total_num_tokens"] == ("" if row["max_total_num_tokens"] is None else str(row["max_total_num_tokens"]))
        for st in row["stages"]:
            assert cells[f"pp{st['pp_rank']}_kv_pool_bytes"] == str(st["kv_pool_bytes"])
        if row["point"]["server_args.pp_size"] == 1 and row["feasible"]:
            assert cells["pp1_kv_pool_bytes"] == ""
    # a client string that a spreadsheet would run as a formula is quoted
    assert table[2][1] == "'=HYPERLINK(1)" and table[2][header.index("error_kind")] == "invalid_input"


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": [4, 0]}]}, "axes.0.values.1", "server_args.tp_size"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_sz", "values": [4]}]}, "axes.0.values.0", "server_args.tp_sz: unknown field"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.context_length", "values": [4096]}, {"field": "server_args.kv_cache_dtype", "values": ["auto", "fp4"]}]}, "axes.1.values.1", "kv_cache_dtype"),
        ({"base": QWEN_GPU, "axes": [{"field": "budget.free_gib_after_load", "values": [30]}]}, "axes.0.values.0", "needs rest_gib, or both"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": [[4]]}]}, "axes.0.values.0", "JSON scalar"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": ["x" * 300]}]}, "axes.0.values.0", "256 characters"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": []}]}, "axes.0.values", "1 to"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size"}]}, "axes.0.values", "required"),
        ({"base": QWEN_GPU, "axes": [{"field": "server args", "values": [1]}]}, "axes.0.field", "dotted"),
        ({"base": QWEN_GPU, "axes": [{"field": "model.hf_config.num_hidden_layers", "values": [1]}]}, "axes.0.field", "model.preset"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args", "values": [1]}]}, "axes.0.field", "cannot be swept"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": [1]}, {"field": "server_args.tp_size", "values": [2]}]}, "axes.1.field", "once"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": [1], "step": 2}]}, "axes.0.step", "unknown field"),
        ({"base": QWEN_GPU, "axes": []}, "axes", "1 to 2"),
        ({"base": QWEN_GPU, "axes": [{"field": f"server_args.f{i}", "values": [1]} for i in range(3)]}, "axes", "1 to 2"),
        ({"base": QWEN_GPU}, "axes", "1 to 2"),
        ({"axes": [{"field": "server_args.tp_size", "values": [1]}]}, "base", "POST /v1/plan body"),
        ({"base": {"model": {"preset": "qwen3-next-80b-a3b-instruct"}}, "axes": [{"field": "server_args.tp_size", "values": [1]}]}, "base.budget", "required"),
        ({"base": {**QWEN_GPU, "trial": {}}, "axes": [{"field": "server_args.tp_size", "values": [1]}]}, "base.trial", "only accepted by POST /v1/plan"),
        ({"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": [1]}], "limit": 3}, "limit", "unknown field"),
    ],
)
def test_bad_sweeps_name_the_field(client, body, field, words):
    resp = client.post("/v1/sweep", json=body)
    problem = assert_problem(resp, 422, field=field)
    assert words in problem["detail"], problem


def test_a_bad_enum_value_lists_the_allowed_ones(client):
    body = {"base": QWEN_GPU, "axes": [{"field": "server_args.kv_cache_dtype", "values": ["auto", "fp4"]}]}
    problem = assert_problem(client.post("/v1/sweep", json=body), 422, field="axes.0.values.1")
    assert problem["allowed"] == ["auto", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16"]
    assert problem["point"] == {"server_args.kv_cache_dtype": "fp4"}


def test_a_bad_point_names_its_values(client):
    body = {"base": QWEN_GPU, "axes": [{"field": "server_args.tp_size", "values": [2, 4]}, {"field": "server_args.mem_fraction_static", "values": [0.8, 1.5]}]}
    problem = assert_problem(client.post("/v1/sweep", json=body), 422, field="axes.1.values.1")
    assert problem["point"] == {"server_args.tp_size": 2, "server_args.mem_fraction_static": 1.5}
    assert problem["errors"][0]["field"] == "server_args.mem_fraction_static"
    assert problem["detail"].startswith("at the point server_args.tp_size=2, server_args.mem_fraction_static=1.5: server_args.mem_fraction_static:")


def test_point_cap(client):
    at_cap = {"base": {"model": {"preset": "nemotron-h-8b-base-8k"}, "budget": {"rest_gib": 30.0}},
              "axes": [{"field": "server_args.max_running_requests", "values": list(range(1, 101))},
                       {"field": "server_args.context_length", "values": [1024 * (i + 1) for i in range(MAX_POINTS // 100)]}]}
    resp = client.post("/v1/sweep", json=at_cap)
    assert resp.status_code == 200 and resp.json()["points"] == MAX_POINTS
    over = {**at_cap, "axes": [at_cap["axes"][0], {**at_cap["axes"][1], "values": at_cap["axes"][1]["values"] + [1 << 20]}]}
    problem = assert_problem(client.post("/v1/sweep", json=over), 422, field="axes")
    assert "100 x 101 = 10100 points" in problem["detail"] and str(MAX_POINTS) in problem["detail"]
    one_axis = {"base": at_cap["base"], "axes": [{"field": "server_args.context_length", "values": list(range(1, MAX_POINTS + 2))}]}
    assert_problem(client.post("/v1/sweep", json=one_axis), 422, field="axes.0.values")


def test_malformed_bodies(client):
    assert_problem(client.post("/v1/sweep", content=b"{"), 422, field="request")
    assert_problem(client.post("/v1/sweep", content=b"[]"), 422, field="request")
    assert_problem(client.post("/v1/sweep", content=b'{"base": {}, "axes": [{"field": "server_args.tp_size", "values": [1e400]}]}'), 422)
    assert client.post("/v1/sweep", content=b" " * (2 << 20)).status_code == 413


def test_openapi_documents_the_sweep_and_its_examples_answer(client):
    doc = client.get("/openapi.json").json()
    op = doc["paths"]["/v1/sweep"]["post"]
    body = op["requestBody"]["content"]["application/json"]
    assert body["schema"]["properties"]["base"]["$ref"] == "#/components/schemas/ApiPlanRequest"
    assert body["schema"]["properties"]["axes"]["maxItems"] == 2
    values = body["schema"]["properties"]["axes"]["items"]["properties"]["values"]
    # Numbers up to MAX_POINTS; with a string among them, up to MAX_STRING_VALUES (the body limit).
    assert [v["maxItems"] for v in values["anyOf"]] == [MAX_POINTS, MAX_STRING_VALUES]
    assert "text/csv" in op["responses"]["200"]["content"]
    assert op["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/SweepResponse"}
    assert "/" not in doc["paths"] and not any(p.startswith("/static") for p in doc["paths"])
    assert len(body["examples"]) == 3
    for name, ex in body["examples"].items():
        resp = client.post("/v1/sweep", json=ex["value"])
        assert resp.status_code == 200, (name, resp.text)
        rows = resp.json()["rows"]
        assert rows and any(r["feasible"] for r in rows), name


# --------------------------------------------------------------------------- repeated points


def _counting_replan(monkeypatch) -> list:
    """Wrap the sweep's own `replan` (the real one runs underneath) and record each call."""
    import mambasizer.service.sweep as sweep_mod

    calls: list = []
    real = sweep_mod.replan

    def counted(req, layout):
        calls.append(req)
        return real(req, layout)

    monkeypatch.setattr(sweep_mod, "replan", counted)
    return calls


def test_repeated_points_are_planned_once_and_answer_as_the_distinct_ones(monkeypatch):
    from mambasizer.service.sweep import run_sweep

    base = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}}
    # tp 3 is an invalid point (SGLang asserts on the state shapes), tp 1 does not fit: both
    # answers are repeated too, as are two GPUs.
    distinct_tp, distinct_gpu = [1, 3, 4, 8], ["h200", "h100"]
    repeated_tp, repeated_gpu = [4, 1, 4, 3, 8, 4, 3, 1, 8, 4], ["h200", "h100", "h200"]
    calls = _counting_replan(monkeypatch)
    unique = run_sweep({"base": base, "axes": [{"field": "budget.gpu", "values": distinct_gpu}, {"field": "server_args.tp_size", "values": distinct_tp}]})
    assert len(calls) == 8  # one plan per point, the refused tp 3 included (replan raises)
    by_point = {(r["point"]["budget.gpu"], r["point"]["server_args.tp_size"]): r for r in unique["rows"]}
    assert by_point[("h200", 3)]["error_kind"] == "invalid_input" and by_point[("h200", 1)]["error_kind"] == "weights_do_not_fit"

    calls.clear()
    dup = run_sweep({"base": base, "axes": [{"field": "budget.gpu", "values": repeated_gpu}, {"field": "server_args.tp_size", "values": repeated_tp}]})
    assert dup["points"] == len(dup["rows"]) == 30
    # the pipeline (replan) runs once per distinct point: 2 GPUs x 4 TP sizes, not 30 times
    assert len(calls) == 8
    assert len({(r.budget.gpu, r.server_args.tp_size) for r in calls}) == 8
    for row in dup["rows"]:
        want = by_point[(row["point"]["budget.gpu"], row["point"]["server_args.tp_size"])]
        assert row == want  # element by element: point, figures, error, every stage


def test_a_sweep_of_9999_identical_points_plans_once(monkeypatch):
    from mambasizer.service.sweep import run_sweep

    base = {"model": {"preset": "kimi-linear-48b-a3b-instruct"}, "server_args": {"tp_size": 2}, "budget": {"gpu": "h200"}}
    calls = _counting_replan(monkeypatch)
    once = run_sweep({"base": base, "axes": [{"field": "server_args.max_running_requests", "values": [64]}]})
    assert len(calls) == 1
    calls.clear()
    many = run_sweep({"base": base, "axes": [{"field": "server_args.max_running_requests", "values": [64] * 9999}]})
    assert len(calls) == 1
    assert many["points"] == 9999 and all(row == once["rows"][0] for row in many["rows"])
    assert once["rows"][0]["feasible"] and once["rows"][0]["max_running_requests"] == 64


def test_points_equal_as_requests_share_one_plan(monkeypatch, client):
    """An explicit default and an omitted field are one request: one plan, and through the API
    the same rows as POST /v1/plan at each point."""
    from mambasizer.service.sweep import run_sweep

    base = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2, "pp_size": 2}, "budget": {"gpu": "h200"}}
    calls = _counting_replan(monkeypatch)
    # accounting "sglang-0.5.23" is the schema's default: the base and that point are the same request
    body = run_sweep({"base": base, "axes": [{"field": "accounting", "values": ["sglang-0.5.23", "whole-model", "sglang-0.5.23"]}]})
    assert len(calls) == 2
    assert body["rows"][0] == body["rows"][2] and body["rows"][0]["point"] == {"accounting": "sglang-0.5.23"}
    resp = client.post("/v1/sweep", json={"base": base, "axes": [{"field": "accounting", "values": ["sglang-0.5.23", "whole-model", "sglang-0.5.23"]}]})
    assert resp.json()["rows"] == body["rows"]
    for row in body["rows"]:
        _assert_row_is_the_plan(client, base, row)
