"""The OpenAPI document: request schemas and problem+json answers (the request examples,
which the routes attach, are in examples.py).

The plan routes parse their bodies themselves (any Content-Type; one validation, the
solver's own), so their request schema is added here rather than inferred by FastAPI.
Every example is a real request: tests/api posts each one and expects 200.
`scripts/export_openapi.py` writes the committed `openapi.json`; a test fails when it
differs from the app.
"""

from __future__ import annotations

import copy

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import TypeAdapter

from mambasizer.schemas.json_schema import standard_bounds
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.plan import RELEASE_0_5_23_ONLY

# What Budget's validator enforces, stated in the schema so a client (or schemathesis) can see
# it: exactly one of the five forms (three measured, one of them vLLM's, two estimated from the GPU alone); `gpu` may
# name the device in the measured forms too. pydantic cannot derive this from a model validator.
BUDGET_FORMS: list[dict] = [
    {
        "title": "rest_gib",
        "required": ["rest_gib"],
        "properties": {
            "rest_gib": {"type": "number"},
            "free_gib_before_load": {"type": "null"},
            "free_gib_after_load": {"type": "null"},
            "gpu_memory_mib": {"type": "null"},
            "reserved_gib": {"type": "null"},
            "host_available_mib": {"type": "null"},
            "kv_cache_memory_gib": {"type": "null"},
        },
    },
    {
        "title": "free_gib_before_load + free_gib_after_load (+ gpu_memory_mib)",
        "required": ["free_gib_before_load", "free_gib_after_load"],
        "properties": {
            "rest_gib": {"type": "null"},
            "free_gib_before_load": {"type": "number", "exclusiveMinimum": 0},
            "free_gib_after_load": {"type": "number"},
            "reserved_gib": {"type": "null"},
            "host_available_mib": {"type": "null"},
            "kv_cache_memory_gib": {"type": "null"},
        },
    },
    {
        "title": "gpu (+ gpu_memory_mib), estimated from the GPU alone",
        "required": ["gpu"],
        "properties": {
            "gpu": {"type": ["string", "object"]},
            "rest_gib": {"type": "null"},
            "free_gib_before_load": {"type": "null"},
            "free_gib_after_load": {"type": "null"},
            "kv_cache_memory_gib": {"type": "null"},
        },
    },
    {
        "title": "gpu_memory_mib alone (estimated from the GPU alone)",
        "required": ["gpu_memory_mib"],
        "properties": {
            "gpu_memory_mib": {"type": "integer"},
            "rest_gib": {"type": "null"},
            "free_gib_before_load": {"type": "null"},
            "free_gib_after_load": {"type": "null"},
            "gpu": {"type": "null"},
            "kv_cache_memory_gib": {"type": "null"},
        },
    },
    {
        "title": "kv_cache_memory_gib (engine vllm: the logged Available KV cache memory, measured)",
        "required": ["kv_cache_memory_gib"],
        "properties": {
            "kv_cache_memory_gib": {"type": ["number", "array"]},
            "rest_gib": {"type": "null"},
            "free_gib_before_load": {"type": "null"},
            "free_gib_after_load": {"type": "null"},
            "reserved_gib": {"type": "null"},
        },
    },
]


# The fields whose validity depends on the model or on other fields in ways JSON Schema cannot
# state (a config.json SGLang cannot size, a launch line it would refuse, layer ids against the
# layer count, ...). A 422 for a schema-valid body names one of these in its `field`; any other
# field's 422 means this document is wrong (tests/api/test_api_schemathesis.py checks it).
SEMANTIC_FIELDS: tuple[str, ...] = (
    "model.hf_config", "model.layout", "sglang_args", "env",
    "server_args.tp_size", "server_args.attn_dp_size", "server_args.pp_size", "budget.free_gib_after_load",
    # the estimated budget: a GPU whose rules are not modelled, weights a preset or config cannot
    # give, experts that do not divide over tp_size
    "budget.gpu", "model.preset", "server_args.ep_size",
    # a part whose capacity no public source confirms needs the caller's figure
    "budget.gpu_memory_mib",
    # a described device's class, and the host's memory, which applies to integrated parts only
    "budget.gpu.compute_capability", "budget.host_available_mib",
    # DCP must divide tp_size and fit the attention TP (service/solver/dcp.py)
    "server_args.dcp_size",
    # a release that cannot load the model (service/solver/releases/sizing.py)
    "sglang_version",
    # a flag sized only from some release on (ReplaySSM's ring from 0.5.20: service/solver/plan.py);
    # JSON Schema cannot tie it to sglang_version / compare's from_version
    "server_args.enable_linear_replayssm_spec",
    # launch features modelled on SGLang 0.5.23 only: refused with any other sglang_version
    "server_args.kv_cache_dtype", *(f"server_args.{name}" for name in RELEASE_0_5_23_ONLY),
    # engine "vllm" (service/solver/vllm/; SGLang-only operations refuse it on `engine`): its flags as typed and
    # its measured figure; with engine "vllm" the SGLang fields it refuses (server_args, draft_model) and the
    # families its path does not size (model) are semantic too (tests/api/schemathesis_hooks.py `excused`)
    "engine", "vllm_args", "budget.kv_cache_memory_gib",
)
# A prefill/decode pair (service/disaggregated.py): either side's own rules, its role and model.
PAIR_SEMANTIC_FIELDS: tuple[str, ...] = ("prefill", "decode")


def _state_what_validators_enforce(schemas: dict) -> None:
    """Rules the request validators enforce, stated in the schema where JSON Schema can."""
    schemas["Budget"]["oneOf"] = BUDGET_FORMS
    # A preset is sized when SGLang 0.5.23 can load it; the others are listed
    # (GET /v1/presets) but never sized.
    schemas["PresetModel"]["properties"]["preset"]["enum"] = sorted(n for n, p in PRESETS.items() if p.sizable)
    # CompareRequest takes the same launch arguments, with the same bounds, as POST /v1/plan.
    schemas["CompareRequest"]["properties"]["sglang_args"] = schemas["ApiPlanRequest"]["properties"]["sglang_args"]
    for name in ("ApiPlanRequest", "CompareRequest"):
        # sglang_args replaces server_args: not both.
        schemas[name]["not"] = {
            "required": ["server_args", "sglang_args"],
            "properties": {"sglang_args": {"type": "array"}},
        }
        # The profiled budget needs gpu_memory_mib unless mem_fraction_static is given (in
        # server_args, or in sglang_args, which JSON Schema cannot look into).
        schemas[name]["anyOf"] = [
            {"properties": {"budget": {"required": ["rest_gib"], "properties": {"rest_gib": {"type": "number"}}}}},
            {"properties": {"budget": {"required": ["gpu_memory_mib"], "properties": {"gpu_memory_mib": {"type": "integer"}}}}},
            {"properties": {"budget": {"required": ["gpu"], "properties": {"gpu": {"type": "string"}}}}},
            {"required": ["server_args"], "properties": {"server_args": {
                "required": ["mem_fraction_static"], "properties": {"mem_fraction_static": {"type": "number"}}}}},
            {"required": ["sglang_args"], "properties": {"sglang_args": {"type": "array"}}},
        ]
        schemas[name]["x-semantic-fields"] = list(SEMANTIC_FIELDS)
    # The baseline release of a release diff may be one that cannot load the model.
    schemas["CompareRequest"]["x-semantic-fields"] += ["baseline_sglang_version", "from_version", "to_version"]
    # A recommendation: the GPU (one catalog name, or a list of them to compare) or a budget,
    # not both (service/recommend/search.py, kinds.py).
    schemas["RecommendRequest"]["oneOf"] = [
        {"required": ["gpu"], "properties": {"gpu": {"anyOf": [{"type": "string"}, {"type": "array"}]}, "budget": {"type": "null"}}},
        {"required": ["budget"], "properties": {"budget": {"type": "object"}, "gpu": {"type": "null"}}},
    ]
    # What only the search decides: a GPU whose rules are not modelled (or whose capacity is
    # unconfirmed), a price for a GPU not requested, `cheapest` without every price, a fixed
    # knob also searched, a model or launch line that cannot be sized, a search past its limits.
    schemas["RecommendRequest"]["x-semantic-fields"] = [
        "model", "gpu", "budget", "search", "sglang_args", "server_args", "env", "draft_model", "target", "gpus",
        "sglang_version", "gpu_prices", "objective",
    ]
    # The disaggregated recommendation (service/recommend/disaggregated.py): the same, per side.
    schemas["RecommendDisaggregatedRequest"]["oneOf"] = copy.deepcopy(schemas["RecommendRequest"]["oneOf"])
    schemas["RecommendDisaggregatedRequest"]["x-semantic-fields"] = [
        "model", "gpu", "budget", "prefill", "decode", "env", "draft_model", "context_length", "sglang_version",
    ]


def _component_schemas() -> dict:
    from mambasizer.schemas.recommend import RecommendRequest
    from mambasizer.schemas.recommend_disaggregated import RecommendDisaggregatedRequest
    from mambasizer.service.api.problems import Problem
    from mambasizer.service.api.wire import ApiPlanRequest, DisaggregatedPlanRequest
    from mambasizer.service.compare import CompareRequest  # schema only

    out: dict = {}
    for model in (ApiPlanRequest, CompareRequest, RecommendRequest, Problem, DisaggregatedPlanRequest, RecommendDisaggregatedRequest):
        schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}", mode="validation")
        for name, sub in schema.pop("$defs", {}).items():
            out.setdefault(name, sub)
        out[model.__name__] = schema
    _state_what_validators_enforce(out)
    return standard_bounds(out)


def _disaggregated_plan_response(doc: dict) -> None:
    """POST /v1/plan answers a PlanResponse, or for a prefill/decode pair both of them and
    the pair's summary (service/disaggregated.py): stated beside the PlanResponse FastAPI
    generated, which the pair's sides reference."""
    from mambasizer.schemas.disaggregated import PairSummary

    schemas = doc["components"]["schemas"]
    schemas["PairSummary"] = TypeAdapter(PairSummary).json_schema(ref_template="#/components/schemas/{model}", mode="serialization")
    plan_ref = {"$ref": "#/components/schemas/PlanResponse"}
    schemas["DisaggregatedPlanResponse"] = {
        "title": "DisaggregatedPlanResponse",
        "description": "Both sides' plans, each as POST /v1/plan answers it alone, and what the pair sustains.",
        "type": "object",
        "properties": {"prefill": plan_ref, "decode": plan_ref, "pair": {"$ref": "#/components/schemas/PairSummary"}},
        "required": ["prefill", "decode", "pair"],
        "additionalProperties": False,
    }
    schemas["DisaggregatedPlanRequest"]["x-semantic-fields"] = list(PAIR_SEMANTIC_FIELDS)
    for path in ("/v1/plan", "/plan"):
        content = doc["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]
        content["schema"] = {"oneOf": [plan_ref, {"$ref": "#/components/schemas/DisaggregatedPlanResponse"}]}
        # The body is one of two schemas: what either may refuse semantically, stated on the union.
        body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        body["x-semantic-fields"] = [*SEMANTIC_FIELDS, *PAIR_SEMANTIC_FIELDS]


def install(app: FastAPI) -> None:
    def openapi() -> dict:
        if app.openapi_schema is None:
            doc = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                tags=app.openapi_tags,
            )
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in _component_schemas().items():
                if name in schemas and schemas[name] != schema:
                    raise RuntimeError(f"OpenAPI schema name clash: {name}")
                schemas[name] = schema
            _disaggregated_plan_response(doc)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
