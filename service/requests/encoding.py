"""THE encoding of a Plan: the API's body and `mambasizer plan --json` / `check` both use it,
so the two answer byte for byte the same."""

from __future__ import annotations

import json

from mambasizer.schemas import Plan
from mambasizer.schemas.vllm_plan import VllmPlan


def plan_json(plan: Plan | VllmPlan) -> bytes:
    """A Plan (or an engine "vllm" VllmPlan) as the JSON every front answers."""
    return plan.model_dump_json().encode()


def with_fields(body: bytes, fields: dict) -> bytes:
    """Append top-level fields to an encoded JSON object, leaving its bytes untouched."""
    if not fields:
        return body
    extra = json.dumps(fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    return body[:-1] + b"," + extra[1:]
