"""The GPU catalog: every part SGLang 0.5.23 runs the hybrid models on, with its capacity as
SGLang's own probe reads it (`utils/common.py:get_device_memory_capacity`, MiB) and the
platform facts SGLang's resolution branches on (`utils/common.py` probes read by
`runtime_context.get_platform()`):

* CUDA parts: `nvidia-smi --query-gpu=memory.total` (`get_nvgpu_memory_capacity`);
* ROCm parts: `rocminfo`'s "Pool 1" Size in KB, divided by 1024 (`get_amdgpu_memory_capacity`),
  not rocm-smi's VRAM total;
* the compute capability `torch.cuda.get_device_capability()` returns (SM major decides
  `is_hopper_with_cuda_12_3` / `is_sm100_supported` / `is_sm120_supported` /
  `is_blackwell_supported`; on ROCm it is the gfx version, 9.4 for gfx942, 9.5 for gfx950);
* `torch.version.hip` set (`is_hip`) or `torch.version.cuda` (`is_cuda`);
* `props.is_integrated` (a unified-memory part: SGLang reads free memory from psutil).

Every confirmed capacity comes with the public text that shows it. A part whose figure no
public source confirms has `memory_mib=None`: it is listed (GET /v1/gpus, `confirmed: false`)
and accepted only as `budget.gpu` together with `budget.gpu_memory_mib` (the caller's own
reading of the probe). The Blackwell parts assume a CUDA >= 12.8 build (SGLang's SM100 /
SM120 probes require it; 0.5.23's wheels are built for CUDA 12.9 / 13).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from mambasizer.service.solver.errors import PlanInputError

GPU_FIELD = "budget.gpu"

Runtime = Literal["cuda", "hip"]


class Gpu(NamedTuple):
    name: str  # the catalog key a request uses
    product: str  # what nvidia-smi / rocminfo print as the name
    memory_mib: int | None  # what SGLang's capacity probe returns; None: no public figure confirmed
    architecture: str  # hopper, blackwell, blackwell-rtx, ampere, ada, cdna3, cdna4
    source: str  # the public text showing `memory_mib` (or why none is confirmed)
    capability: tuple[int, int] = (9, 0)  # torch.cuda.get_device_capability()
    runtime: Runtime = "cuda"  # torch.version.cuda vs torch.version.hip
    integrated: bool = False  # torch.cuda.get_device_properties().is_integrated

    @property
    def confirmed(self) -> bool:
        return self.memory_mib is not None


_NVSMI = "public nvidia-smi output quoted verbatim in repository files (search the exact text {!r}); no URL found"

CATALOG: dict[str, Gpu] = {
    g.name: g
    for g in (
        # Hopper (SM90): the resolution every figure of this project was first proven on.
        Gpu("h100", "NVIDIA H100 80GB HBM3", 81559, "hopper",
            "https://github.com/sgl-project/sglang/issues/7478 (nvidia-smi: 1MiB / 81559MiB)"),
        Gpu("h100-nvl", "NVIDIA H100 NVL", 95830, "hopper",
            "https://github.com/NVIDIA/gpu-admin-tools/issues/4 (nvidia-smi: 0MiB / 95830MiB)"),
        Gpu("h200", "NVIDIA H200", 143771, "hopper",
            "https://github.com/sgl-project/sglang/issues/3196 (nvidia-smi: 124585MiB / 143771MiB)"),
        Gpu("h20", "NVIDIA H20", 97871, "hopper", _NVSMI.format("NVIDIA H20 ... 4MiB /  97871MiB")),
        Gpu("h800", "NVIDIA H800", 81559, "hopper",
            _NVSMI.format("NVIDIA H800 ... 81559MiB") + "; one file shows an H800 at 143771MiB, not explained"),
        # GH200 480GB: the Grace Hopper superchip with 96 GB HBM3, a discrete GPU to SGLang
        # (props.is_integrated is not set; GB10 is the integrated part).
        Gpu("gh200", "NVIDIA GH200 480GB", 97871, "hopper", _NVSMI.format("NVIDIA GH200 480GB ... 1MiB / 97871MiB")),
        Gpu("gh200-144gb", "NVIDIA GH200 144G HBM3e", None, "hopper",
            "unconfirmed: no public nvidia-smi memory.total of the 144 GB GH200 was found; give budget.gpu_memory_mib"),
        # Blackwell datacenter (SM100 / SM103).
        Gpu("b200", "NVIDIA B200", 183359, "blackwell",
            "https://github.com/NVIDIA/TensorRT-LLM/issues/10278 (nvidia-smi: 166593MiB / 183359MiB)", (10, 0)),
        Gpu("gb200", "NVIDIA GB200", 189471, "blackwell", _NVSMI.format("NVIDIA GB200 ... 0MiB / 189471MiB"), (10, 0)),
        Gpu("b300", "NVIDIA B300 SXM6 AC", 275040, "blackwell",
            _NVSMI.format("NVIDIA B300 SXM6 AC ... 0MiB / 275040MiB"), (10, 3)),
        Gpu("gb300", "NVIDIA GB300", 284208, "blackwell", _NVSMI.format("0MiB / 284208MiB"), (10, 3)),
        # Blackwell RTX (SM120): no trtllm / SM100 paths.
        Gpu("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "blackwell-rtx",
            _NVSMI.format("RTX PRO 6000 Blackwell ... 0MiB /  97887MiB") + " (600 W and 300 W boards both)", (12, 0)),
        # Ampere / Ada.
        Gpu("a100-80gb", "NVIDIA A100-SXM4-80GB", 81920, "ampere",
            "https://github.com/modal-labs/modal-client/pull/2797 (A100 80GB: 81920MiB); "
            "https://github.com/allenai/PeerRead/issues/40 (nvidia-smi: 0MiB / 81920MiB)", (8, 0)),
        Gpu("l40s", "NVIDIA L40S", 46068, "ada", "https://github.com/modal-labs/modal-client/pull/2797 (L40S: 46068MiB)", (8, 9)),
        # AMD Instinct (ROCm): the figure is rocminfo's Pool 1 Size (KB) / 1024.
        Gpu("mi300x", "AMD Instinct MI300X", 196592, "cdna3",
            "https://github.com/ROCm/rocm-examples/issues/187 (rocminfo Pool 1: 201310208(0xbffc000) KB = 196592 MiB; "
            "rocm-smi's VRAM Total 206141652992 B is the same figure, https://github.com/ROCm/legacy-rocm-build/issues/4750)",
            (9, 4), "hip"),
        Gpu("mi325x", "AMD Instinct MI325X", None, "cdna3",
            "unconfirmed: one abridged rocminfo in public issue text shows Pool 1 268419072 KB (262128 MiB); no "
            "citable page; give budget.gpu_memory_mib (rocminfo Pool 1 Size / 1024)", (9, 4), "hip"),
        Gpu("mi355x", "AMD Instinct MI355X", None, "cdna4",
            "unconfirmed: public clinfo / rocminfo-shim files show a gfx950 device at 301973504 KB (294896 MiB), device "
            "name not shown; give budget.gpu_memory_mib (rocminfo Pool 1 Size / 1024)", (9, 5), "hip"),
    )
}

# The part a request that names none is planned on: Hopper, as before the catalog grew.
DEFAULT_GPU = "h200"

# Spellings people use for the same part.
ALIASES = {
    "h100-80gb": "h100", "h100-sxm": "h100", "h100nvl": "h100-nvl", "h200-141gb": "h200", "h200-sxm": "h200",
    "h20-96gb": "h20", "h800-80gb": "h800", "gh200-96gb": "gh200", "gh200-480gb": "gh200",
    "b200-sxm": "b200", "b300-sxm": "b300", "rtx-pro-6000-blackwell": "rtx-pro-6000", "rtxpro6000": "rtx-pro-6000",
    "a100": "a100-80gb", "a100-sxm4-80gb": "a100-80gb", "a100-sxm": "a100-80gb",
    "amd-instinct-mi300x": "mi300x", "amd-instinct-mi325x": "mi325x", "amd-instinct-mi355x": "mi355x",
}

# Known parts SGLang runs on that the catalog does not hold (their resolution or memory
# probe differs in ways not modelled: unified memory, other capacities): refused by name.
NOT_MODELLED = {
    "gb10": "Blackwell (unified memory: SGLang reads free memory from psutil)", "rtx-5090": "Blackwell RTX",
    "mi350x": "AMD CDNA4", "a800": "Ampere", "a100-40gb": "Ampere (40 GB)", "rtx-4090": "Ada", "rtx-3090": "Ampere",
}


def canonical_name(name: str) -> str:
    """`name` as the catalog spells it: lower case, dashes, no `NVIDIA ` prefix, aliases resolved."""
    k = name.strip().lower().replace("_", "-").replace(" ", "-")
    if k.startswith("nvidia-"):
        k = k[len("nvidia-"):]
    return ALIASES.get(k, k)


def lookup(name: str) -> Gpu:
    """The catalog entry for `name`, or a PlanInputError naming budget.gpu and listing the catalog."""
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
            f"{name!r} is {arch}: not in the catalog (GET /v1/gpus). Name the catalog part of the same architecture "
            "and give its capacity as budget.gpu_memory_mib.",
            names,
        )
    raise PlanInputError(GPU_FIELD, f"unknown GPU {name!r}; use one of the catalog's names (GET /v1/gpus)", names)


def from_device_name(printed: str) -> Gpu | None:
    """The catalog part a device name denotes, as a log prints it (`NVIDIA B200`, `AMD
    Instinct MI300X`) or as a request spells it; None when it is none of them."""
    key = canonical_name(printed)
    for gpu in CATALOG.values():
        if key == gpu.name or printed.strip().lower() == gpu.product.lower():
            return gpu
    return None


def by_capacity(memory_mib: int) -> Gpu | None:
    """The first catalog part with exactly this capacity, if any (several parts can share one:
    H100 and H800; H20 and GH200)."""
    for gpu in CATALOG.values():
        if gpu.memory_mib == memory_mib:
            return gpu
    return None
