"""Every Plan that plan() returns survives a JSON round trip through full validation,
field for field: what the API serves is always a document the schema accepts."""

import os
import sys

from schemas import Plan
from service.solver import PlanInputError, plan

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import cases  # noqa: E402


def test_every_plan_round_trips_through_full_validation():
    checked = 0
    for case in cases.generate_cases(400, 5):
        try:
            p = plan(cases.wire(case))
        except PlanInputError:
            continue
        assert Plan.model_validate_json(p.model_dump_json()) == p
        checked += 1
    assert checked > 300
