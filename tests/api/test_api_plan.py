"""POST /v1/plan and POST /plan through the real app over HTTP."""

from __future__ import annotations

import json

import pytest

from api_helpers import H200, assert_problem, dumps, preset_request
from mambasizer.schemas import Plan
from mambasizer.service.api import trial_seam
from mambasizer.service.api.app import create_app
from mambasizer.service.api.examples import PLAN_EXAMPLES
from mambasizer.service.api.trials import TrialSettings
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS

SIZABLE = [p.name for p in PRESETS.values() if p.sizable]
TRIALS_ON = TrialSettings(enabled=True)


def test_plan_is_the_solver_plan_encoded_once(client):
    req = preset_request(tp_size=4)
    resp = client.post("/v1/plan", json=req)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert resp.content == plan(req).model_dump_json().encode()
    body = resp.json()
    Plan.model_validate(body)  # the wire contract, no extra fields
    assert "ignored_sglang_args" not in body and "trial" not in body


def test_unversioned_route_is_identical(client):
    req = preset_request("kimi-linear-48b-a3b-instruct", H200, tp_size=2, pp_size=2)
    a = client.post("/v1/plan", json=req)
    b = client.post("/plan", json=req)
    assert a.status_code == b.status_code == 200
    assert a.content == b.content


@pytest.mark.parametrize("name", SIZABLE)
def test_every_sizable_preset_plans(client, name):
    resp = client.post("/v1/plan", json=preset_request(name, H200))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["model_name"] == name
    assert body["stages"], body


def test_infeasible_plan_is_200_with_error_and_remedies(client):
    resp = client.post("/v1/plan", json=preset_request(budget={"rest_gib": 0.1}, tp_size=4))
    assert resp.status_code == 200
    body = resp.json()
    assert body["feasible"] is False
    assert body["error"]["kind"] in {"mamba_cache_too_small", "no_memory_for_kv", "not_enough_memory", "state_cache_serves_no_request", "launch_rejected"}
    assert body["error"]["exception"] and body["error"]["message"]
    assert body["error"]["remedies"], body["error"]


def test_negative_rest_is_an_answer_not_an_input_error(client):
    # rest_gib < 0 is what SGLang computes when the weights leave nothing: it refuses to start.
    resp = client.post("/v1/plan", json=preset_request(budget={"rest_gib": -1.0}))
    assert resp.status_code == 200
    assert resp.json()["feasible"] is False


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json", "application/x-www-form-urlencoded", "text/plain", "application/json; charset=utf-8"],
)
def test_body_is_json_whatever_the_content_type(client, content_type):
    # `curl -d @request.json` sends application/x-www-form-urlencoded.
    req = preset_request()
    headers = {"content-type": content_type} if content_type else {}
    resp = client.post("/v1/plan", content=dumps(req), headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.content == plan(req).model_dump_json().encode()


@pytest.mark.parametrize("name", sorted(k for k in PLAN_EXAMPLES if k != "trial"))
def test_every_documented_request_form(client, name):
    resp = client.post("/v1/plan", json=PLAN_EXAMPLES[name]["value"])
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["feasible"] is (name != "infeasible")


def test_budget_forms_give_what_the_solver_gives(client):
    forms = [
        {"rest_gib": 25.5},
        {"free_gib_before_load": 139.6, "free_gib_after_load": 101.3, "gpu_memory_mib": 143771},
    ]
    for budget in forms:
        req = preset_request(budget=budget, tp_size=4)
        assert client.post("/v1/plan", json=req).content == plan(req).model_dump_json().encode()
    req = preset_request(budget={"free_gib_before_load": 139.6, "free_gib_after_load": 101.3}, tp_size=4, mem_fraction_static=0.85)
    resp = client.post("/v1/plan", json=req)
    assert resp.status_code == 200
    assert resp.json()["resolved"]["mem_fraction_static"] == 0.85


def test_profiled_budget_without_mem_fraction_names_gpu_memory(client):
    req = preset_request(budget={"free_gib_before_load": 139.6, "free_gib_after_load": 101.3})
    assert_problem(client.post("/v1/plan", json=req), 422, field="budget.gpu_memory_mib")


# --------------------------------------------------------------------------- sglang_args


def test_sglang_args_in_place_of_server_args(client):
    args = ["--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--tp-size", "4", "--host", "0.0.0.0", "--port", "30000"]
    resp = client.post("/v1/plan", json={"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "sglang_args": args, "budget": {"rest_gib": 30.0}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["ignored_sglang_args"] == ["--model-path", "--host", "--port"]
    assert body["resolved"]["tp_size"] == 4
    # The Plan itself is the one server_args would give.
    same = plan(preset_request(tp_size=4))
    plan_part = {k: v for k, v in body.items() if k not in ("ignored_sglang_args", "sglang_args_warnings")}
    assert plan_part == json.loads(same.model_dump_json())


def test_sglang_args_aliases_and_inline_values(client):
    a = client.post("/v1/plan", json={"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "sglang_args": ["--tensor-parallel-size=4", "--max-running-requests", "64"], "budget": {"rest_gib": 30.0}})
    b = client.post("/v1/plan", json=preset_request(tp_size=4, max_running_requests=64))
    assert a.status_code == b.status_code == 200
    assert {k: v for k, v in a.json().items() if k != "ignored_sglang_args"} == b.json()
    assert a.json()["ignored_sglang_args"] == []


def test_unmodelled_sizing_flag_is_refused_by_name(client):
    resp = client.post(
        "/v1/plan",
        json={"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "sglang_args": ["--tp-size", "4", "--enable-unified-memory"], "budget": {"rest_gib": 30.0}},
    )
    body = assert_problem(resp, 422, field="sglang_args")
    assert "--enable-unified-memory" in body["detail"]


def test_sglang_args_and_server_args_together_are_refused(client):
    req = preset_request(tp_size=4)
    req["sglang_args"] = ["--tp-size", "4"]
    assert_problem(client.post("/v1/plan", json=req), 422, field="sglang_args")


@pytest.mark.parametrize("value", ["--tp-size 4", [1, 2], {"tp": 4}])
def test_sglang_args_must_be_a_list_of_strings(client, value):
    req = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "sglang_args": value, "budget": {"rest_gib": 30.0}}
    assert_problem(client.post("/v1/plan", json=req), 422, field="sglang_args")


def test_sglang_args_value_errors_name_the_field(client):
    req = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "sglang_args": ["--page-size", "0"], "budget": {"rest_gib": 30.0}}
    body = assert_problem(client.post("/v1/plan", json=req), 422, field="server_args.page_size")
    assert "sglang_args" in body["detail"]


# --------------------------------------------------------------------------- trial


def test_trial_without_worker_is_unavailable(monkeypatch):
    from fastapi.testclient import TestClient

    async def no_worker(plan_, request, options, memory_budget_bytes=None):
        return None

    monkeypatch.setattr(trial_seam, "run_trial", no_worker)
    req = preset_request(tp_size=4)
    req["trial"] = {}
    with TestClient(create_app(trials=TRIALS_ON)) as client:
        resp = client.post("/v1/plan", json=req)
    assert resp.status_code == 200
    body = resp.json()
    assert body["trial"] == {"status": "unavailable"}
    # The rest is the plain Plan, byte for byte.
    expected = plan(preset_request(tp_size=4)).model_dump_json()
    assert resp.content == expected[:-1].encode() + b',"trial":{"status":"unavailable"}}'


def test_trial_goes_to_the_worker_hook():
    from fastapi.testclient import TestClient

    seen = {}

    async def worker(plan_, request, options):
        seen.update(plan=plan_, request=request, options=options)
        return {"status": "ok", "device": "cpu", "stages": []}

    with TestClient(create_app(worker=worker, trials=TRIALS_ON)) as c:
        req = preset_request(tp_size=4)
        req["trial"] = {"device": "cpu"}
        resp = c.post("/v1/plan", json=req)
    assert resp.status_code == 200
    assert resp.json()["trial"] == {"status": "ok", "device": "cpu", "stages": []}
    assert seen["options"] == {"device": "cpu"}
    assert seen["plan"].model_name == "qwen3-next-80b-a3b-instruct"
    assert seen["request"].server_args.tp_size == 4


def test_worker_object_with_run_trial_and_aclose():
    from fastapi.testclient import TestClient

    class Worker:
        closed = False

        async def run_trial(self, plan_, request, options):
            return {"status": "rejected", "reason": "busy"}

        async def aclose(self):
            Worker.closed = True

    with TestClient(create_app(worker=Worker(), trials=TRIALS_ON)) as c:
        req = preset_request()
        req["trial"] = {}
        assert c.post("/v1/plan", json=req).json()["trial"] == {"status": "rejected", "reason": "busy"}
    assert Worker.closed, "lifespan shutdown closes the worker"


def test_a_failing_worker_never_fails_the_plan():
    from fastapi.testclient import TestClient

    async def broken(plan_, request, options):
        raise RuntimeError("/secret/path exploded")

    with TestClient(create_app(worker=broken, trials=TRIALS_ON)) as c:
        req = preset_request()
        req["trial"] = {}
        resp = c.post("/v1/plan", json=req)
    assert resp.status_code == 200
    trial = resp.json()["trial"]
    assert trial["status"] == "unavailable"
    assert "/secret/path" not in resp.text


def test_trial_must_be_an_object(client):
    req = preset_request()
    req["trial"] = "yes"
    assert_problem(client.post("/v1/plan", json=req), 422, field="trial")
