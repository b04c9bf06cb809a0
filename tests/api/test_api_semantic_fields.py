"""Schema-valid requests that schemathesis found refused on fields their operation did not
declare in `x-semantic-fields` (issue 25): each is now refused on a declared field, judged by
the same rule tests/api/test_api_schemathesis.py applies (schemathesis_hooks.excused)."""

from __future__ import annotations

import types

from schemathesis_hooks import excused

REPLAYSSM_FROM_0_5_9 = {
    "model": {"preset": "qwen3.5-35b-a3b"}, "budget": {"gpu": "h200"},
    "server_args": {"enable_linear_replayssm_spec": True}, "from_version": "0.5.9",
}


def _case(doc: dict, path: str, body: dict):
    """Just what excused() reads of a schemathesis case."""
    op = doc["paths"][path]["post"]
    return types.SimpleNamespace(body=body, operation=types.SimpleNamespace(
        schema=types.SimpleNamespace(raw_schema=doc), definition=types.SimpleNamespace(raw=op)))


def test_a_release_that_does_not_size_replayssm_is_a_declared_refusal(client):
    doc = client.get("/openapi.json").json()
    # (schema-valid: a preset, a catalog GPU, a boolean flag and a listed release)
    resp = client.post("/v1/plan/compare", json=REPLAYSSM_FROM_0_5_9)
    assert resp.status_code == 422 and resp.json()["field"] == "server_args.enable_linear_replayssm_spec", resp.text
    assert excused(_case(doc, "/v1/plan/compare", REPLAYSSM_FROM_0_5_9), resp)
    # and on /v1/plan, whose body takes sglang_version
    plan = {k: v for k, v in REPLAYSSM_FROM_0_5_9.items() if k != "from_version"} | {"sglang_version": "0.5.9"}
    resp = client.post("/v1/plan", json=plan)
    assert resp.status_code == 422 and excused(_case(doc, "/v1/plan", plan), resp), resp.text
