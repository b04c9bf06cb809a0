"""Every Plan that plan() returns survives a JSON round trip through full validation,
field for field and byte for byte: what the API serves is always a document the schema
accepts. The solver builds its output without validation (`Out.trusted`), so this is the
test that keeps it honest: a missing field, an int where the schema says float (40 vs
40.0 on the wire), a wrong type anywhere fails here."""

import os
import sys

from mambasizer.schemas import Plan
from mambasizer.schemas.plan import PlanError, ResolvedArgs, Stage
from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import cases


def _assert_exact(p: Plan) -> None:
    js = p.model_dump_json()
    again = Plan.model_validate_json(js)
    assert again == p
    assert again.model_dump_json() == js  # types survive: 40.0 stays 40.0, never 40
    assert Plan.model_validate(p.model_dump()).model_dump_json() == js
    parts = [(Plan, p), (ResolvedArgs, p.resolved), *((Stage, s) for s in p.stages)]
    if p.error is not None:
        parts.append((PlanError, p.error))
    for cls, obj in parts:
        assert type(obj) is cls
        assert set(obj.__dict__) == set(cls.model_fields), cls.__name__


def test_every_plan_round_trips_through_full_validation():
    checked = infeasible = with_remedies = 0
    for case in cases.generate_cases(1000, 5):
        try:
            p = plan(cases.wire(case))
        except PlanInputError:
            continue
        _assert_exact(p)
        checked += 1
        infeasible += not p.feasible
        with_remedies += bool(p.error and p.error.remedies)
    assert checked > 800
    assert infeasible > 50 and with_remedies > 20  # the remedy path (model_copy of a trusted plan) is covered


def test_a_budget_given_in_whole_gib_serialises_as_a_float():
    # rest_gib: 40 (a JSON integer) is a float field: the wire says 40.0, as validation would.
    p = plan({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4, "mamba_full_memory_ratio": 1}, "budget": {"rest_gib": 40}})
    _assert_exact(p)
    assert '"rest_gib":40.0' in p.model_dump_json()
    assert '"mamba_full_memory_ratio":1.0' in p.model_dump_json()
