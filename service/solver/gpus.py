"""The GPU catalog for `budget: {"gpu": NAME}`: the parts whose SGLang 0.5.23 resolution is
modelled (Hopper: page size 1, FA3 default, the automatic mem_fraction_static rules of
launch.py), each with its capacity as `nvidia-smi --query-gpu=memory.total` reports it (MiB,
what SGLang's `get_nvgpu_memory_capacity` reads) and the public page that shows that figure.

A part is listed only with such a source. H20, H800 and GH200 are left out: no public
`nvidia-smi` output of theirs was found to cite.
"""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.service.solver.errors import PlanInputError

GPU_FIELD = "budget.gpu"


class Gpu(NamedTuple):
    name: str  # the catalog key a request uses
    product: str  # what nvidia-smi prints as the name
    memory_mib: int  # nvidia-smi memory.total
    architecture: str
    source: str  # a public page showing `memory_mib` in nvidia-smi output


CATALOG: dict[str, Gpu] = {
    g.name: g
    for g in (
        Gpu(
            "h100", "NVIDIA H100 80GB HBM3", 81559, "hopper",
            "https://github.com/sgl-project/sglang/issues/7478 (nvidia-smi: 1MiB / 81559MiB)",
        ),
        Gpu(
            "h100-nvl", "NVIDIA H100 NVL", 95830, "hopper",
            "https://github.com/NVIDIA/gpu-admin-tools/issues/4 (nvidia-smi: 0MiB / 95830MiB)",
        ),
        Gpu(
            "h200", "NVIDIA H200", 143771, "hopper",
            "https://github.com/sgl-project/sglang/issues/3196 (nvidia-smi: 124585MiB / 143771MiB)",
        ),
    )
}

# Spellings people use for the same part.
ALIASES = {"h100-80gb": "h100", "h100-sxm": "h100", "h100nvl": "h100-nvl", "h200-141gb": "h200", "h200-sxm": "h200"}

# Known parts whose SGLang resolution differs from Hopper's (page size, attention backend,
# FP4/MXFP8 kernels, unified memory, ROCm's mem_get_info): refused by name, never sized
# with Hopper's rules unless the caller says so through gpu_memory_mib.
NOT_MODELLED = {
    "b200": "Blackwell", "b300": "Blackwell", "gb200": "Blackwell", "gb300": "Blackwell",
    "gb10": "Blackwell (unified memory)", "rtx-pro-6000": "Blackwell", "rtx-5090": "Blackwell",
    "mi300x": "AMD CDNA3", "mi325x": "AMD CDNA3", "mi350x": "AMD CDNA4", "mi355x": "AMD CDNA4",
    "a100": "Ampere", "a800": "Ampere", "l40s": "Ada", "rtx-4090": "Ada", "rtx-3090": "Ampere",
}


def canonical_name(name: str) -> str:
    """`name` as the catalog spells it: lower case, dashes, no `NVIDIA ` prefix, aliases resolved."""
    k = name.strip().lower().replace("_", "-").replace(" ", "-")
    if k.startswith("nvidia-"):
        k = k[len("nvidia-"):]
    return ALIASES.get(k, k)


def lookup(name: str) -> Gpu:
    """The catalog entry for `name`, or a PlanInputError naming budget.gpu."""
    gpu = CATALOG.get(name)  # the common case: the catalog spelling
    if gpu is not None:
        return gpu
    key = canonical_name(name)
    gpu = CATALOG.get(key)
    if gpu is not None:
        return gpu
    names = sorted(CATALOG)
    arch = NOT_MODELLED.get(key)
    if arch is not None:
        raise PlanInputError(
            GPU_FIELD,
            f"{name!r} is {arch}: SGLang 0.5.23's resolution on it (page size, attention backend, "
            "memory probe) is not modelled. Plan a modelled GPU, or give budget.gpu_memory_mib "
            "to plan its capacity with Hopper's rules (the plan then warns).",
            names,
        )
    raise PlanInputError(GPU_FIELD, f"unknown GPU {name!r}; GET /v1/gpus lists the modelled ones", names)


def by_capacity(memory_mib: int) -> Gpu | None:
    """The catalog part with exactly this capacity, if any."""
    for gpu in CATALOG.values():
        if gpu.memory_mib == memory_mib:
            return gpu
    return None
