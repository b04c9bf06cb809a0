"""`GET /v1/gpus`: the GPUs `budget: {"gpu": NAME}` accepts, their capacity as nvidia-smi
reports it, and the public source of each figure. Encoded once, when the app is built."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from mambasizer.service.solver import gpu_budget
from mambasizer.service.solver.gpus import ALIASES, CATALOG, NOT_MODELLED


class GpuEntry(BaseModel):
    name: str = Field(description="What budget.gpu takes.")
    product: str = Field(description="The name nvidia-smi prints.")
    memory_mib: int = Field(description="nvidia-smi memory.total (MiB), SGLang's get_device_memory_capacity.")
    architecture: str
    source: str = Field(description="A public page showing this memory.total in nvidia-smi output.")
    aliases: list[str] = Field(description="Other spellings budget.gpu accepts for this part.")


class GpuList(BaseModel):
    gpus: list[GpuEntry]
    not_modelled: list[str] = Field(description="Known parts refused by budget.gpu (a 422): their SGLang resolution differs from Hopper's. budget.gpu_memory_mib sizes them with Hopper's rules, with a warning.")
    resident_before_load_gib: dict[str, float] = Field(description="The calibrated GiB resident before the weights load (CUDA context, cuBLAS, NCCL, custom all-reduce), by world size; budget.reserved_gib overrides it.")
    load_resident_gib: float = Field(description="GiB the load leaves resident besides the parameters.")


def _body() -> bytes:
    doc = {
        "gpus": [
            {**g._asdict(), "aliases": sorted(a for a, k in ALIASES.items() if k == g.name)}
            for g in sorted(CATALOG.values(), key=lambda g: g.memory_mib)
        ],
        "not_modelled": sorted(NOT_MODELLED),
        "resident_before_load_gib": {
            "one_rank": gpu_budget.SINGLE_RANK_RESIDENT_GIB,
            "several_ranks": round(gpu_budget.SINGLE_RANK_RESIDENT_GIB + gpu_budget.MULTI_RANK_EXTRA_GIB, 6),
        },
        "load_resident_gib": gpu_budget.LOAD_RESIDENT_GIB,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


BODY = _body()

router = APIRouter(tags=["presets"])


@router.get("/v1/gpus", operation_id="list_gpus", summary="The GPUs budget.gpu accepts, with their capacity and its source", response_model=GpuList)
async def list_gpus() -> Response:
    return Response(BODY, media_type="application/json")
