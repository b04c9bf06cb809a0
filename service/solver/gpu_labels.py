"""A cluster's node labels, as the device they name: NVIDIA GPU Feature Discovery
(`nvidia.com/gpu.product`, `nvidia.com/gpu.memory` in MiB, `nvidia.com/gpu.compute.major` /
`.minor`, `nvidia.com/gpu.family`) and AMD's node labeller (`amd.com/gpu.product-name`,
`amd.com/gpu.vram`, `amd.com/gpu.family`).

What is confirmed (research note GPUS.md §4): GFD's label keys (second-hand, through a package
that reads them), `nvidia.com/gpu.memory` in MiB, and `gpu.product` being the printed device
name with spaces replaced by dashes (`NVIDIA-H100-80GB-HBM3`). Not confirmed: whether
`gpu.memory` equals nvidia-smi's memory.total (so the catalog's capacity wins for a catalog
part, and a differing label is reported), and AMD's exact key spellings and VRAM unit (so an
AMD node is matched by its product name only). Names are compared with spaces, dashes and
underscores folded, since printed names contain dashes too (`NVIDIA A100-SXM4-80GB`).

`budget_gpu(labels)` is the `budget.gpu` value they name: a catalog name, or a device
description (schemas.request.DeviceDescription) for a product the catalog lacks. Pure.
"""

from __future__ import annotations

from mambasizer.service.solver import gpus
from mambasizer.service.solver.errors import PlanInputError

FIELD = "gpu_labels"
NV_PRODUCT, NV_MEMORY = "nvidia.com/gpu.product", "nvidia.com/gpu.memory"
NV_MAJOR, NV_MINOR, NV_FAMILY = "nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor", "nvidia.com/gpu.family"
AMD_PRODUCT = ("amd.com/gpu.product-name", "beta.amd.com/gpu.product-name")


def _fold(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


def labels_of(gpu: gpus.Gpu) -> dict[str, str]:
    """The node labels that identify `gpu` (GET /v1/gpus)."""
    if gpu.runtime == "hip":
        return {AMD_PRODUCT[0]: gpu.product.replace(" ", "_")}
    out = {NV_PRODUCT: gpu.product.replace(" ", "-"), NV_MAJOR: str(gpu.capability[0]), NV_MINOR: str(gpu.capability[1])}
    if gpu.memory_mib is not None and not gpu.integrated:
        out[NV_MEMORY] = str(gpu.memory_mib)
    return out


def _catalog_part(product: str, runtime: str) -> gpus.Gpu | None:
    folded = _fold(product)
    return next((g for g in gpus.CATALOG.values() if g.runtime == runtime and _fold(g.product) == folded), None)


def budget_gpu(labels: dict[str, str]) -> str | dict:
    """The `budget.gpu` value the labels name (see the module docstring)."""
    amd = next((labels[k] for k in AMD_PRODUCT if labels.get(k)), None)
    if amd is not None:
        part = _catalog_part(amd, "hip")
        if part is None:
            raise PlanInputError(
                f"{FIELD}.{AMD_PRODUCT[0]}",
                f"{amd!r} is no catalog AMD part (GET /v1/gpus lists each part's labels); name the part with --gpu, or "
                "describe it (budget.gpu: product, memory_mib, compute_capability, runtime, integrated)",
                sorted(g.name for g in gpus.CATALOG.values() if g.runtime == "hip"),
            )
        return part.name
    product = labels.get(NV_PRODUCT)
    if not product:
        raise PlanInputError(
            FIELD, f"names no GPU: give {NV_PRODUCT} (GPU Feature Discovery; with {NV_MEMORY}, {NV_MAJOR}, {NV_MINOR}) "
            f"or {AMD_PRODUCT[0]} (AMD's node labeller)",
        )
    part = _catalog_part(product, "cuda")
    if part is not None:
        return part.name
    missing = [k for k in (NV_MEMORY, NV_MAJOR, NV_MINOR) if not labels.get(k)]
    if missing:
        raise PlanInputError(
            FIELD, f"{product!r} is no catalog part, and describing it needs {', '.join(missing)} too "
            "(GPU Feature Discovery sets them); or name the part with --gpu",
        )
    try:
        memory, major, minor = int(labels[NV_MEMORY]), int(labels[NV_MAJOR]), int(labels[NV_MINOR])
    except ValueError:
        raise PlanInputError(FIELD, f"{NV_MEMORY}, {NV_MAJOR} and {NV_MINOR} must be integers (MiB, compute capability)") from None
    cls = f"sm{major}{minor}"
    # is_integrated is no GFD label: a class whose catalog parts are all integrated (sm121: GB10) is taken as integrated.
    siblings = [g for g in gpus.CATALOG.values() if g.device_class == cls]
    integrated = bool(siblings) and all(g.integrated for g in siblings)
    return {"product": product.replace("-", " "), "memory_mib": memory, "compute_capability": f"{major}.{minor}",
            "runtime": "cuda", "integrated": integrated}


def parse(text: str) -> dict[str, str]:
    """`KEY=VALUE,KEY=VALUE` (or one per line; `KEY: VALUE` as kubectl's YAML prints them)."""
    out: dict[str, str] = {}
    for item in text.replace("\n", ",").split(","):
        item = item.strip()
        if not item or item.startswith("#"):
            continue
        key, sep, value = item.partition("=")
        if not sep:
            key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise PlanInputError(FIELD, f"{item!r} is not KEY=VALUE (e.g. {NV_PRODUCT}=NVIDIA-H100-80GB-HBM3)")
        out[key.strip()] = value.strip().strip('"')
    return out
