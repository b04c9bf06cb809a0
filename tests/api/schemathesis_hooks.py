"""schemathesis hooks for this API: the one rule JSON Schema cannot carry.

A schema-valid body can still be refused (422) for what JSON Schema cannot state: a
config.json SGLang cannot size, a launch line it would refuse, layer ids against the layer
count. The request schemas list those fields in `x-semantic-fields`, and such a 422 must name
one of them; any other 422 for a schema-valid body means openapi.json is wrong.

Used by tests/api/test_api_schemathesis.py, and by `schemathesis run` from the repository root
(schemathesis.toml loads this file; it lets 422 through schemathesis' own
positive_data_acceptance so that this narrower check decides).
"""

from __future__ import annotations

import schemathesis
from schemathesis.core.errors import IncorrectUsage

# What schemathesis' positive_data_acceptance lets through (404 answers an unknown path
# parameter; 5xx is not_a_server_error's to judge).
PASSING = {*range(200, 400), 401, 403, 404, 409, 429, *range(500, 600)}


def semantic_fields(case) -> tuple[str, ...]:
    """The fields the operation's request schema declares semantic (x-semantic-fields)."""
    raw = case.operation.schema.raw_schema
    body = case.operation.definition.raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    ref = body.get("schema", {}).get("$ref", "")
    if ref:
        component = raw.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {})
    else:  # an inline request schema (POST /v1/sweep, POST /v1/check-log)
        component = body.get("schema", {})
    return tuple(component.get("x-semantic-fields", ()))


def excused(case, response) -> bool:
    """A 422 that names a declared semantic field. With sglang_args, the launch line decides
    server_args (and whether budget.gpu_memory_mib is needed), which the schema cannot see."""
    if response.status_code != 422:
        return False
    try:
        field = str(response.json().get("field") or "")
    except ValueError:
        return False
    prefixes = semantic_fields(case)
    if isinstance(case.body, dict) and isinstance(case.body.get("sglang_args"), list):
        prefixes += ("server_args", "budget.gpu_memory_mib")
    if isinstance(case.body, dict) and case.body.get("engine") == "vllm":
        # engine "vllm" refuses SGLang's fields and sizes fewer families (service/solver/vllm/),
        # which the shared PlanRequest schema cannot tie to the engine
        prefixes += ("server_args", "draft_model", "model")
    return any(field == p or field.startswith(p + ".") for p in prefixes)


def _register(check):
    """schemathesis.check, once: this file is loaded by path (schemathesis.toml, the in-process
    run) and by name (tests that reuse `excused`), and a second registration is refused."""
    try:
        return schemathesis.check(check)
    except IncorrectUsage:
        return check


@_register
def semantic_rejection_names_a_declared_field(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code in PASSING:
        return None
    if not excused(case, response):
        raise AssertionError(
            f"schema-valid request rejected with {response.status_code} for a field not in x-semantic-fields: "
            f"{response.text[:500]}"
        )
    return None
