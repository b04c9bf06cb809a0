"""`GET /v1/presets` and `GET /v1/presets/{name}`: the shipped model layouts and their sources.

Both answers are encoded once, when the app is built: the request path reads no file and
re-validates nothing.
"""

from __future__ import annotations

import json
import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from mambasizer.service.api.problems import problem_doc, problem_response
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS, preset_name
from mambasizer.service.solver import PlanInputError


class PresetSummary(BaseModel):
    name: str
    model_id: str
    verified: bool = Field(description="Every value checked against the published config.json.")
    supported_by_sglang: bool = Field(description="SGLang 0.5.23 sizes this family through its mamba path.")
    sizable: bool = Field(description="Sized: SGLang 0.5.23 can load it (verified or not); the others are listed with the reason, never sized.")
    reason: str | None = Field(description="Why the preset is not sized by default; null when it is.")
    source: str = Field(description="Where the config values come from (see service/presets/models/SOURCES.md).")


class PresetList(BaseModel):
    presets: list[PresetSummary]


class PresetDetail(PresetSummary):
    sglang_support: str = Field(description="How SGLang 0.5.23 handles this family.")
    notes: str
    hf_config: dict[str, Any] = Field(description="The config.json subset the solver reads; usable as model.hf_config.")
    example_request: dict[str, Any] | None = Field(
        description="A PlanRequest for this preset, ready to POST to /v1/plan; null when the preset cannot be sized."
    )
    sizing_error: dict[str, Any] | None = Field(
        description="Why the preset cannot be sized (`field`, `message`); null when it can."
    )


def _detail(p) -> dict:
    """Built once per preset when the app is imported (the example is planned here, to
    offer it only when it plans)."""
    model: dict[str, Any] = {"preset": p.name}
    example: dict | None = {"model": model, "budget": {"rest_gib": 40.0}}
    error = None
    try:
        plan(example)
    except PlanInputError as exc:
        example, error = None, {"field": exc.field, "message": exc.message}
    return {
        **p.summary(),
        "sglang_support": p.sglang_support,
        "notes": p.notes,
        "hf_config": dict(p.hf_config),
        "example_request": example,
        "sizing_error": error,
    }


def json_safe(obj: Any) -> Any:
    """Two verbatim config.json files hold `Infinity` (Nemotron-H's time_step_limit), which
    strict JSON has no spelling for: on the wire it becomes the string "Infinity" (the
    solver never reads that key, so the config still plans when posted back)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def _encode(obj: Any) -> bytes:
    return json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


LIST_BODY = _encode({"presets": [p.summary() for p in PRESETS.values()]})
DETAIL_BODIES = {name: _encode(_detail(p)) for name, p in PRESETS.items()}
NAMES = sorted(PRESETS)

router = APIRouter(tags=["presets"])


@router.get("/v1/presets", operation_id="list_presets", summary="The shipped presets, sizable or not, with the reason", response_model=PresetList)
async def list_presets() -> Response:
    return Response(LIST_BODY, media_type="application/json")


@router.get(
    "/v1/presets/{name:path}",
    operation_id="get_preset",
    summary="One preset: its config, its source and a ready-to-post request",
    response_model=PresetDetail,
    responses={404: problem_doc("No preset of that name or checkpoint id; `allowed` lists the names.")},
    # The name is read from the path as is (any string is a valid question; unknown ones
    # are a 404), so it is declared here rather than validated by FastAPI.
    openapi_extra={
        "parameters": [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}, "description": "A preset name or its checkpoint's HF repo id (`model_id`, any case, e.g. nvidia/Qwen3.6-27B-NVFP4), from GET /v1/presets.", "example": "qwen3-next-80b-a3b-instruct"}
        ]
    },
)
async def get_preset(request: Request) -> Response:
    name = request.path_params["name"]
    body = DETAIL_BODIES.get(name) or DETAIL_BODIES.get(preset_name(name) or "")
    if body is None:
        return problem_response(404, f"unknown preset {name[:128]!r}", instance=request.url.path, field="name", allowed=NAMES)
    return Response(body, media_type="application/json")
