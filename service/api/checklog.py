"""`POST /v1/check-log`: an SGLang start-up log compared with mambasizer's plan.

The body is the log itself (`text/plain`, or any non-JSON type: `curl --data-binary @server.log`)
or JSON `{"log": "...", "hf_config": {...}, "sglang_args": [...], "gpu": "h200", "sglang_version": "0.5.19"}`
(all optional but `log`: the model's config.json, the launch command for a log cut without its
server_args record, the catalog GPU for the memory estimates, the release that wrote the log when
the log does not tell it). A disaggregated deployment's two logs go as JSON
`{"prefill": {"log": ...}, "decode": {"log": ...}}`: each compared with its role's plan, plus the
pair's summary (mambasizer.service.startlog.pair); a side whose log is the other role's is a 422
naming `<side>.log`. The log itself may be up to 64 MiB
(MAX_LOG_BODY_BYTES: a multi-rank log is mostly per-request lines): it is read as a stream,
chunk by chunk, keeping only the start-up records (mambasizer.service.startlog.parse.BootLogReader), so its
size costs time, not memory. The JSON form is bounded as every JSON body (1 MiB). A body over
its limit is refused with 413 while it streams in (the observability middleware's limit). The
answer is what `mambasizer check-log --json` prints; an unreadable log (empty, no start-up
line, nothing to compare) is a 422 problem+json naming `log`.

Reading, matching the client's config and planning run in the heavy-work pool
(mambasizer.service.api.workpool, the job in mambasizer.service.api.checklog_job), every form and the pair too, under the same deadline,
disconnect cancellation, memory ceiling and concurrency bound as a heavy `/v1/plan`; a full
pool is a 429 before the body is read. The text/plain log is filtered as it streams in
(mambasizer.service.startlog.prefilter: the lines the start-up reader can use, found at C
speed), and only those lines go to the pool.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import TypeAdapter

from mambasizer.schemas.checklog import (
    MAX_LOG_BODY_BYTES,
    CheckLogPairRequest,
    CheckLogPairResponse,
    CheckLogRequest,
    CheckLogResponse,
)
from mambasizer.schemas.json_schema import standard_bounds
from mambasizer.service.api.checklog_job import UNREADABLE_LOG
from mambasizer.service.api.plan import read_body
from mambasizer.service.api.problems import heavy_docs, problem_doc, problem_response
from mambasizer.service.api.workpool import pool_of, rejection_response, run_heavy
from mambasizer.service.startlog.parse import BootLogError
from mambasizer.service.startlog.prefilter import StartupLines

router = APIRouter(tags=["plan"])

# What the text/plain form keeps of a log, at most: SGLang prints a few start-up lines per
# rank (a 4,096-rank log holds about 8 MiB of them); a log that is nothing but such wordings
# is refused (422 naming `log`) rather than held whole and sent to the pool.
MAX_KEPT_BYTES = 16 << 20


# A log in SGLang 0.5.23's wording for a shipped preset (Nemotron-H 8B on one GPU,
# --mem-fraction-static 0.85 --max-running-requests 64): every predicted figure matches.
EXAMPLE_LOG = """\
[2026-12-01 10:00:00] server_args={'model_path': 'nvidia/Nemotron-H-8B-Base-8K', 'host': '0.0.0.0', 'port': 30000, 'device': 'cuda', 'mem_fraction_static': 0.85, 'max_running_requests': 64}
[2026-12-01 10:00:01] Load weight begin. avail mem=79.10 GB
[2026-12-01 10:00:31] Load weight end. elapsed=30.12 s, type=NemotronHForCausalLM, avail mem=63.60 GB, mem usage=15.50 GB.
[2026-12-01 10:00:31] Mamba Cache is allocated. max_mamba_cache_size: 256, conv_state size: 0.35GB, ssm_state size: 24.09GB 
[2026-12-01 10:00:31] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1788366, K size: 13.64 GB, V size: 13.64 GB
[2026-12-01 10:00:31] Memory pool end. avail mem=11.62 GB
[2026-12-01 10:00:40] max_total_num_tokens=1788366, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=51, context_len=8192, available_gpu_mem=10.41 GB
"""

def _inlined(schema: Any, defs: dict) -> Any:
    """`schema` with each local `$ref` replaced by its definition: the body schema is inline in
    the operation, where `#/$defs/...` would not resolve (the models nest without recursion)."""
    if isinstance(schema, list):
        return [_inlined(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = _inlined(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return {k: _inlined(v, defs) for k, v in schema.items()}


_raw_schema = TypeAdapter(CheckLogRequest | CheckLogPairRequest).json_schema(mode="validation")
_REQUEST_SCHEMA = standard_bounds(_inlined({k: v for k, v in _raw_schema.items() if k != "$defs"}, _raw_schema.get("$defs", {})))
# What only reading decides: a log with none of SGLang's lines, a config or launch line that
# cannot be sized, a pair's side whose log is the other role's (`prefill.log`, `decode.gpu`, ...)
# (tests/api/schemathesis_hooks.py: a 422 for a schema-valid body names one).
_REQUEST_SCHEMA["x-semantic-fields"] = ["log", "hf_config", "sglang_args", "gpu", "sglang_version", "prefill", "decode"]

_RESPONSES: dict[Any, Any] = {
    200: {
        "model": CheckLogResponse | CheckLogPairResponse,
        "description": "Every figure the log prints, per rank: logged, predicted, and the cause of each difference; for a pair, each side and the pair's summary.",
    },
    413: problem_doc("The body is larger than its limit: 64 MiB for the text/plain log, 1 MiB for the JSON form."),
    422: problem_doc("The log cannot be read (`field`: `log`), or the JSON form, the config.json or the launch arguments are invalid (`field` names which)."),
    **heavy_docs(),
}

_BODY = {
    "required": True,
    "content": {
        "text/plain": {
            # minLength: an empty body is refused (422, `log`). maxLength bounds characters;
            # the limit is MAX_LOG_BODY_BYTES bytes (64 MiB), read as a stream.
            "schema": {
                "type": "string", "minLength": 1, "maxLength": MAX_LOG_BODY_BYTES,
                "description": "The SGLang start-up log as printed (UTF-8), at most 64 MiB: read as a stream, keeping only the start-up lines.",
            },
            "examples": {"sglang_0_5_23": {"summary": "An SGLang 0.5.23 start-up log", "value": EXAMPLE_LOG}},
        },
        "application/json": {
            "schema": _REQUEST_SCHEMA,
            "examples": {
                "log": {"summary": "The same log in the JSON form (hf_config optional)", "value": {"log": EXAMPLE_LOG, "gpu": "h100"}},
                "release": {"summary": "The release named, for a log that does not print it", "value": {"log": EXAMPLE_LOG, "sglang_version": "0.5.23"}},
                "pair": {"summary": "A disaggregated pair: each log with its role's plan", "value": {"prefill": {"log": EXAMPLE_LOG}, "decode": {"log": EXAMPLE_LOG}}},
            },
        },
    },
}


def _is_json(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


async def post_check_log(request: Request) -> Response:
    # A full pool is said before the body is read (a 64 MiB upload for a 429 helps nobody).
    full = pool_of(request).refusal(request, "check_log")
    if full is not None:
        return rejection_response(full)
    if _is_json(request):
        return await run_heavy(request, "check_log", await read_body(request))
    # The text/plain log as it streams in: only the lines the reader can use are kept, found
    # at C speed a quarter MiB at a time (prefilter.py), so the body is never held whole.
    lines = StartupLines(MAX_KEPT_BYTES)
    try:
        async for chunk in request.stream():
            lines.buffer(chunk)
            if lines.due:
                # One needle's search over a quarter MiB at a time, then the other tasks (and
                # /livez): the loop is never held longer than one search.
                for _ in lines.scan_steps():
                    await asyncio.sleep(0)
        kept = lines.finish()
    except BootLogError as exc:
        return problem_response(422, str(exc), type_=UNREADABLE_LOG, title="The log cannot be read", instance=request.url.path, field="log")
    return await run_heavy(request, "check_log", b"", {"kept": kept})


router.add_api_route(
    "/v1/check-log",
    post_check_log,
    methods=["POST"],
    summary="Compare an SGLang start-up log with the plan, per rank and figure",
    operation_id="check_log",
    response_model=None,
    responses=_RESPONSES,
    openapi_extra={"requestBody": _BODY},
)

__all__ = ["EXAMPLE_LOG", "UNREADABLE_LOG", "post_check_log", "router"]
