"""What a heavy-work process runs for `POST /v1/check-log` (mambasizer.service.api.jobs):
the request's bytes (the JSON form, one log or a pair) or the start-up lines the route kept of
a text/plain log, to the rendered answer. Matching the client's config (its quantization
ignore lists) and planning happen here, never on the event loop. No route imports: the jobs
module imports this one, and the route module imports the pool."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mambasizer.schemas.checklog import (
    CheckLogPairRequest,
    CheckLogPairResponse,
    CheckLogRequest,
    CheckLogResponse,
)
from mambasizer.service.api import wire
from mambasizer.service.api.problems import (
    PROBLEM_JSON,
    TYPE_PREFIX,
    input_problem_bytes,
    problem_bytes,
)
from mambasizer.service.startlog.compare import check_log
from mambasizer.service.startlog.pair import PairRefused, SideError, check_pair
from mambasizer.service.startlog.parse import BootLogError

UNREADABLE_LOG = TYPE_PREFIX + "unreadable-log"
APPLICATION_JSON = "application/json"

Rendered = tuple[int, str, bytes]  # status, media type, body


def _unreadable(detail: str, instance: str, field: str = "log") -> Rendered:
    return (422, PROBLEM_JSON, problem_bytes(422, detail, type_=UNREADABLE_LOG, title="The log cannot be read", instance=instance, field=field))


def _invalid(exc: ValidationError, instance: str) -> Rendered:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err.get("loc", ())) or "request"
    detail = f"{field}: {err.get('msg')}"
    return (422, PROBLEM_JSON, problem_bytes(422, detail, type_=TYPE_PREFIX + "invalid-input", title="The request cannot be read", instance=instance, field=field))


def _single(text: Any, instance: str, hf_config: dict | None = None, sglang_args: list[str] | None = None,
            gpu: str | None = None, sglang_version: str | None = None) -> Rendered:
    try:
        result = check_log(text, hf_config, sglang_args, gpu, sglang_version)
    except BootLogError as exc:
        return _unreadable(str(exc), instance)
    return (200, APPLICATION_JSON, CheckLogResponse.model_validate(result.data).model_dump_json().encode())


def _pair(raw: dict, instance: str) -> Rendered:
    try:
        parsed = CheckLogPairRequest.model_validate(raw)
    except ValidationError as exc:
        return _invalid(exc, instance)
    sides = {
        role: {"text": side.log, "hf_config": side.hf_config, "sglang_args": side.sglang_args, "gpu": side.gpu, "sglang_version": side.sglang_version}
        for role, side in (("prefill", parsed.prefill), ("decode", parsed.decode))
    }
    try:
        result = check_pair(sides)
    except PairRefused as exc:  # two models: the 422 POST /v1/plan answers for that pair
        return (422, PROBLEM_JSON, input_problem_bytes(exc.error, instance))
    except SideError as exc:
        if exc.field.endswith(".log"):
            return _unreadable(f"{exc.field}: {exc.message}", instance, exc.field)
        problem = problem_bytes(422, f"{exc.field}: {exc.message}", type_=TYPE_PREFIX + "invalid-input",
                                title="The request cannot be used", instance=instance, field=exc.field)
        return (422, PROBLEM_JSON, problem)
    return (200, APPLICATION_JSON, CheckLogPairResponse.model_validate(result.data).model_dump_json().encode())


def answer(body: bytes, options: dict, instance: str) -> Rendered:
    """The whole answer, computed in a heavy-work process (mambasizer.service.api.jobs): the
    JSON form (one log or a pair) from its body, the text/plain form from the start-up lines
    the route kept of it (`options["kept"]`, a prefilter.KeptLines). Matching the client's
    config (quantization ignore lists) and planning happen here, never on the event loop."""
    kept = options.get("kept")
    if kept is not None:
        try:
            log = kept.read()
        except BootLogError as exc:
            return _unreadable(str(exc), instance)
        return _single(log, instance)
    raw = wire.decode_json(body)
    if "log" not in raw and ("prefill" in raw or "decode" in raw):
        return _pair(raw, instance)
    try:
        parsed = CheckLogRequest.model_validate(raw)
    except ValidationError as exc:
        return _invalid(exc, instance)
    return _single(parsed.log, instance, parsed.hf_config, parsed.sglang_args, parsed.gpu, parsed.sglang_version)


__all__ = ["UNREADABLE_LOG", "Rendered", "answer"]
