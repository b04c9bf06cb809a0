"""The integer contract is one rule on every field (issue 25 item 8): `"4"`, `true` and `4.5`
are refused, and `4.0` is the integer 4, on every integer field of every request model.

Why `4.0` is taken: the OpenAPI document says `"type": "integer"`, which in JSON Schema
includes `4.0`, and schemathesis generates such values from it; a field that refused them
(`prefill_replicas` did, `tp_size` did not) was a schema-valid request answered 422. The
fields are found by walking the models (every BaseModel reachable from each request body),
not listed by hand; a field typed plain `int` (pydantic's lax mode takes `"4"`) fails here."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from mambasizer.schemas import PlanRequest
from mambasizer.schemas.checklog import CheckLogPairRequest, CheckLogRequest
from mambasizer.schemas.recommend import RecommendRequest
from mambasizer.schemas.recommend_disaggregated import RecommendDisaggregatedRequest
from mambasizer.schemas.sweep import SweepRequest
from mambasizer.schemas.trial import TrialOptions
from mambasizer.service.api.wire import ApiPlanRequest, DisaggregatedPlanRequest
from mambasizer.service.compare import CompareRequest

REQUEST_MODELS = (PlanRequest, ApiPlanRequest, DisaggregatedPlanRequest, CompareRequest, RecommendRequest,
                  RecommendDisaggregatedRequest, SweepRequest, CheckLogRequest, CheckLogPairRequest, TrialOptions)


def _models(tp: Any, seen: set) -> None:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return
        seen.add(tp)
        for f in tp.model_fields.values():
            _models(f.annotation, seen)
        return
    for arg in get_args(tp):
        _models(arg, seen)


def _with(tp: Any, leaf: Any) -> Any:
    """A value of type `tp` whose integers are all `leaf`; None when `tp` holds no integer."""
    origin = get_origin(tp)
    if tp is int:
        return leaf
    if origin is Annotated:
        return _with(get_args(tp)[0], leaf)
    if origin in (Union, types.UnionType):
        if any(a in (float, str, bool) for a in get_args(tp)):
            return None  # a scalar of any kind (a sweep axis value: checked where it lands)
        for arg in get_args(tp):
            v = _with(arg, leaf)
            if v is not None:
                return v
        return None
    if origin in (list, tuple, set, frozenset, typing.Sequence):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        vals = [_with(a, leaf) for a in args]
        if all(v is None for v in vals):
            return None
        return [v if v is not None else _sample(a) for v, a in zip(vals, args, strict=True)]
    if origin is dict:
        v = _with(get_args(tp)[1], leaf)
        return None if v is None else {"k": v}
    return None


def _sample(tp: Any) -> Any:
    if get_origin(tp) is Annotated:
        return _sample(get_args(tp)[0])
    if get_origin(tp) is Literal:
        return get_args(tp)[0]
    return {str: "x", float: 1.0, bool: False}.get(tp, 1)


def _integer_fields() -> list[tuple[str, Any]]:
    seen: set = set()
    for m in REQUEST_MODELS:
        _models(m, seen)
    out = []
    for model in sorted(seen, key=lambda m: m.__name__):
        for name, f in model.model_fields.items():
            if _with(f.annotation, 4) is not None:
                typed = Annotated.__class_getitem__((f.annotation, *f.metadata)) if f.metadata else f.annotation  # type: ignore[attr-defined]
                out.append((f"{model.__name__}.{name}", typed))
    return out


FIELDS = _integer_fields()


def test_the_walk_finds_the_integer_fields():
    names = {n for n, _ in FIELDS}
    for expected in ("ServerArgs.tp_size", "DisaggregatedPlanRequest.prefill_replicas", "RecommendRequest.limit",
                     "Target.running_requests", "Search.tp_size", "Budget.gpu_memory_mib", "DraftModel.num_layers"):
        assert expected in names, sorted(names)
    assert len(FIELDS) > 40


@pytest.mark.parametrize("bad", [4.5, "4", True])
@pytest.mark.parametrize("field, annotation", FIELDS, ids=[n for n, _ in FIELDS])
def test_every_integer_field_refuses_what_is_not_an_integer(field, annotation, bad):
    adapter = TypeAdapter(annotation)
    value = _with(annotation, bad)
    with pytest.raises(ValidationError) as exc:
        adapter.validate_python(value)
    kinds = {e["type"] for e in exc.value.errors()}
    assert kinds & {"int_from_float", "int_type"}, (field, value, exc.value.errors())


@pytest.mark.parametrize("field, annotation", FIELDS, ids=[n for n, _ in FIELDS])
def test_every_integer_field_takes_an_integral_number_as_the_integer(field, annotation):
    adapter = TypeAdapter(annotation)
    try:
        as_int = adapter.validate_python(_with(annotation, 4))
    except ValidationError:
        as_int = adapter.validate_python(_with(annotation, 1))  # a field whose bound excludes 4
        as_float = adapter.validate_python(_with(annotation, 1.0))
    else:
        as_float = adapter.validate_python(_with(annotation, 4.0))
    assert as_float == as_int and repr(as_float) == repr(as_int), field  # the int, not a float


def test_the_api_takes_4_0_as_4_on_every_route(client):
    from api_helpers import assert_problem

    body = {"model": {"preset": "qwen3.5-35b-a3b"}, "budget": {"gpu": "h200"}}
    as_int = client.post("/v1/plan", json={**body, "server_args": {"tp_size": 4}})
    as_float = client.post("/v1/plan", json={**body, "server_args": {"tp_size": 4.0}})
    assert as_int.status_code == as_float.status_code == 200 and as_int.json() == as_float.json()
    assert_problem(client.post("/v1/plan", json={**body, "server_args": {"tp_size": 4.5}}), 422, field="server_args.tp_size")
    pair = {"prefill": body, "decode": body}
    one, two = (client.post("/v1/plan", json={**pair, "prefill_replicas": r, "decode_replicas": 3.0}) for r in (2, 2.0))
    assert one.status_code == two.status_code == 200 and one.json() == two.json(), two.text[:300]
    assert_problem(client.post("/v1/plan", json={**pair, "decode_replicas": 2.5}), 422, field="decode_replicas")
    rec = {"model": {"preset": "qwen3.5-35b-a3b"}, "gpu": "h200", "target": {"running_requests": "8", "context_length": 8192}}
    assert_problem(client.post("/v1/recommend", json=rec), 422, field="target.running_requests")
