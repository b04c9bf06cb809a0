"""Every JSON answer (and every other) carries `X-Content-Type-Options: nosniff`, problems
included (issue 25 item 8): a browser never second-guesses the declared type."""

from __future__ import annotations

from api_helpers import preset_request


def test_every_kind_of_answer_says_nosniff(client):
    answers = {
        "plan 200": client.post("/v1/plan", json=preset_request(tp_size=4)),
        "plan 422": client.post("/v1/plan", json={"model": {"preset": "nope"}}),
        "malformed 400/422": client.post("/v1/plan", content=b"{not json", headers={"content-type": "application/json"}),
        "404": client.get("/v1/nope"),
        "405": client.get("/v1/plan"),
        "413": client.post("/v1/plan", content=b"x" * (2 << 20), headers={"content-type": "application/json"}),
        "openapi": client.get("/openapi.json"),
        "livez": client.get("/livez"),
        "metrics": client.get("/metrics"),
    }
    statuses = {name: r.status_code for name, r in answers.items()}
    assert statuses["plan 200"] == 200 and statuses["plan 422"] == 422 and statuses["404"] == 404 and statuses["413"] == 413, statuses
    for name, r in answers.items():
        assert r.headers.get("x-content-type-options") == "nosniff", (name, r.status_code, dict(r.headers))
    assert answers["plan 422"].headers["content-type"].startswith("application/problem+json")
