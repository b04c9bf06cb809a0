"""Shared helpers for tests/api (imported by name: the tests folders are not packages)."""

from __future__ import annotations

import json
from typing import Any

PROBLEM_JSON = "application/problem+json"
H200 = {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0, "gpu_memory_mib": 143771}


def preset_request(name: str = "qwen3-next-80b-a3b-instruct", budget: dict | None = None, **server_args: Any) -> dict:
    req: dict = {"model": {"preset": name}, "budget": budget if budget is not None else {"rest_gib": 30.0}}
    if server_args:
        req["server_args"] = server_args
    return req


def assert_problem(resp, status: int, field: Any = ..., type_: str | None = None) -> dict:
    """An RFC 9457 answer: status, content type, the members, no internals."""
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].split(";")[0] == PROBLEM_JSON, resp.headers
    body = resp.json()
    for member in ("type", "title", "status", "detail", "field"):
        assert member in body, (member, body)
    assert body["status"] == status
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    if field is not ...:
        assert body["field"] == field, body
    if type_ is not None:
        assert body["type"] == type_, body
    assert_no_internals(resp.text)
    return body


def assert_no_internals(text: str) -> None:
    for marker in ("Traceback", 'File "', "/work/", "site-packages", ".py\"", ".py:", "/home/", "/tmp/"):
        assert marker not in text, (marker, text[:500])


def dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()
