"""`GET /v1/gpus`: the GPUs `budget.gpu` names, each with the capacity SGLang's probe reads
on it (nvidia-smi memory.total; rocminfo Pool 1 on ROCm), the public source of that figure
(or why none is confirmed), and the platform facts SGLang's resolution branches on.
Encoded once, when the app is built."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from mambasizer.service.solver import gpu_budget, gpu_labels
from mambasizer.service.solver.gpus import ALIASES, CATALOG, CLASSES, DEFAULT_GPU, NOT_MODELLED


class GpuEntry(BaseModel):
    name: str = Field(description="What budget.gpu takes.")
    product: str = Field(description="The name nvidia-smi / rocminfo prints.")
    memory_mib: int | None = Field(description="The capacity SGLang's get_device_memory_capacity reads (MiB): nvidia-smi memory.total on CUDA, rocminfo Pool 1 Size KB / 1024 on ROCm. null: unconfirmed, give budget.gpu_memory_mib.")
    confirmed: bool = Field(description="Whether a public source shows memory_mib; an unconfirmed part is accepted only with budget.gpu_memory_mib.")
    architecture: str = Field(description="hopper, blackwell (SM100/SM103), blackwell-rtx (SM120/SM121), ampere, ada, cdna3, cdna4, rdna3, rdna3.5.")
    device_class: str = Field(description="The class SGLang's resolution branches on: sm80 ... sm121 on CUDA, the gfx arch on ROCm (gfx942, gfx950, gfx1100, gfx1151).")
    compute_capability: str = Field(description="torch.cuda.get_device_capability() (the gfx version on ROCm), from which SGLang's SM probes answer.")
    runtime: str = Field(description="cuda or hip (torch.version.hip set: SGLang's is_hip rules).")
    integrated: bool = Field(description="props.is_integrated: unified memory (GB10, MI300A, Strix Halo); SGLang then reads free memory from the host (psutil), and an estimated plan takes budget.host_available_mib.")
    resolution: str = Field(description="What is exact on this part: SGLang 0.5.23's flag resolution, conformance-tested with its own code.")
    residents: str = Field(description="What is estimated: the memory resident before the weights load (F_pre).")
    source: str = Field(description="The public text showing memory_mib, or why none is confirmed.")
    aliases: list[str] = Field(description="Other spellings budget.gpu accepts for this part.")
    gpu_labels: dict[str, str] = Field(description="The node labels that identify this part (NVIDIA GPU Feature Discovery; AMD's node labeller: product name only, its other keys are unconfirmed); `check --gpu-labels` and the chart's preflight.gpuLabels take them.")


class GpuList(BaseModel):
    gpus: list[GpuEntry]
    default_gpu: str = Field(description="The part whose (Hopper) resolution applies when budget.gpu is not given.")
    not_modelled: list[str] = Field(description="Known parts refused by budget.gpu (a 422): their device class is not one whose resolution is reproduced.")
    device_classes: list[str] = Field(description="The device classes a described budget.gpu (product, memory_mib, compute_capability, runtime, integrated) may have.")
    resident_before_load_gib: dict[str, float] = Field(description="The calibrated GiB resident before the weights load (CUDA context, cuBLAS, NCCL, custom all-reduce), by world size; calibrated on Hopper only, used on every part; budget.reserved_gib overrides it.")
    load_resident_gib: float = Field(description="GiB the load leaves resident besides the parameters.")


def _entry(g) -> dict:
    hopper = g.architecture == "hopper"
    return {
        "name": g.name, "product": g.product, "memory_mib": g.memory_mib, "confirmed": g.confirmed,
        "architecture": g.architecture, "device_class": g.device_class,
        "compute_capability": f"{g.capability[0]}.{g.capability[1]}", "runtime": g.runtime,
        "integrated": g.integrated,
        "resolution": "exact: SGLang 0.5.23's resolution on this platform (tests/conformance/test_platform_resolution.py)",
        "residents": "calibrated on Hopper logs" if hopper else (
            f"estimated: Hopper's calibrated residents stand in ({gpu_budget.fpre_evidence_note(g)}; the plan warns), budget.reserved_gib overrides"),
        "source": g.source, "aliases": sorted(a for a, k in ALIASES.items() if k == g.name),
        "gpu_labels": gpu_labels.labels_of(g),
    }


def _body() -> bytes:
    doc = {
        "gpus": [_entry(g) for g in sorted(CATALOG.values(), key=lambda g: (g.memory_mib is None, g.memory_mib or 0, g.name))],
        "default_gpu": DEFAULT_GPU,
        "not_modelled": sorted(NOT_MODELLED),
        "device_classes": list(CLASSES),
        "resident_before_load_gib": {
            "one_rank": gpu_budget.SINGLE_RANK_RESIDENT_GIB,
            "several_ranks": round(gpu_budget.SINGLE_RANK_RESIDENT_GIB + gpu_budget.MULTI_RANK_EXTRA_GIB, 6),
        },
        "load_resident_gib": gpu_budget.LOAD_RESIDENT_GIB,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


BODY = _body()

router = APIRouter(tags=["presets"])


@router.get("/v1/gpus", operation_id="list_gpus", summary="The GPUs budget.gpu names: capacity, architecture, platform facts and sources", response_model=GpuList)
async def list_gpus() -> Response:
    return Response(BODY, media_type="application/json")
