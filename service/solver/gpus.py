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

from mambasizer.schemas.request import DeviceDescription
from mambasizer.service.solver.errors import PlanInputError

GPU_FIELD = "budget.gpu"

Runtime = Literal["cuda", "hip"]


class Gpu(NamedTuple):
    """A device as SGLang's probes read it. A catalog part is one of these with a name and a
    public source; a device a request describes (budget.gpu as an object) is one too."""

    name: str  # the catalog key a request uses ("" for a described, uncatalogued device)
    product: str  # what nvidia-smi / rocminfo print as the name (torch.cuda.get_device_name)
    memory_mib: int | None  # what SGLang's capacity probe returns; None: no public figure confirmed
    architecture: str  # hopper, blackwell, blackwell-rtx, ampere, ada, cdna3, cdna4, rdna3, rdna3.5
    source: str  # the public text showing `memory_mib` (or why none is confirmed)
    capability: tuple[int, int] = (9, 0)  # torch.cuda.get_device_capability()
    runtime: Runtime = "cuda"  # torch.version.cuda vs torch.version.hip
    integrated: bool = False  # torch.cuda.get_device_properties().is_integrated
    gcn_arch: str | None = None  # props.gcnArchName on ROCm (SGLang's is_gfx95_supported reads it)

    @property
    def confirmed(self) -> bool:
        return self.memory_mib is not None

    @property
    def device_class(self) -> str:
        """The class SGLang's resolution branches on: `sm120`, `gfx942`, ..."""
        return self.gcn_arch or f"sm{self.capability[0]}{self.capability[1]}"


_NVSMI = "public nvidia-smi output quoted verbatim in repository files (search the exact text {!r}); no URL found"
_UNCONFIRMED = "unconfirmed: no public {} of this part was found; give budget.gpu_memory_mib ({})"
_NV_PROBE = "nvidia-smi --query-gpu=memory.total"
_ROC_PROBE = "rocminfo Pool 1 Size KB / 1024"


def _nv_unconfirmed(note: str = "") -> str:
    return _UNCONFIRMED.format("nvidia-smi memory.total", _NV_PROBE) + (f"; {note}" if note else "")


def _roc_unconfirmed(note: str = "") -> str:
    return _UNCONFIRMED.format("rocminfo Pool 1 size", _ROC_PROBE) + (f"; {note}" if note else "")


CATALOG: dict[str, Gpu] = {
    g.name: g
    for g in (
        # Hopper (SM90): the resolution every figure of this project was first proven on.
        Gpu("h100", "NVIDIA H100 80GB HBM3", 81559, "hopper",
            "https://github.com/sgl-project/sglang/issues/7478 (nvidia-smi: 1MiB / 81559MiB)"),
        Gpu("h100-pcie", "NVIDIA H100 PCIe", None, "hopper", _nv_unconfirmed("the SXM part prints 81559")),
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
        Gpu("gh200-144gb", "NVIDIA GH200 144G HBM3e", None, "hopper", _nv_unconfirmed()),
        # Blackwell datacenter (SM100 / SM103).
        Gpu("b200", "NVIDIA B200", 183359, "blackwell",
            "https://github.com/NVIDIA/TensorRT-LLM/issues/10278 (nvidia-smi: 166593MiB / 183359MiB)", (10, 0)),
        Gpu("gb200", "NVIDIA GB200", 189471, "blackwell", _NVSMI.format("NVIDIA GB200 ... 0MiB / 189471MiB"), (10, 0)),
        Gpu("b300", "NVIDIA B300 SXM6 AC", 275040, "blackwell",
            _NVSMI.format("NVIDIA B300 SXM6 AC ... 0MiB / 275040MiB"), (10, 3)),
        Gpu("gb300", "NVIDIA GB300", 284208, "blackwell", _NVSMI.format("0MiB / 284208MiB"), (10, 3)),
        # Blackwell RTX (SM120 / SM121): no trtllm / SM100 paths. GB10 (DGX Spark) is SM121
        # and integrated: nvidia-smi prints [N/A] for its memory, so SGLang's capacity probe
        # falls back to torch.cuda.mem_get_info's total (`_cuda_mem_fallback`), which it logs.
        Gpu("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "blackwell-rtx",
            _NVSMI.format("RTX PRO 6000 Blackwell ... 0MiB /  97887MiB") + " (600 W and 300 W boards both)", (12, 0)),
        Gpu("rtx-5090", "NVIDIA GeForce RTX 5090", 32607, "blackwell-rtx",
            "https://github.com/noonghunna/club-3090/issues/617 (nvidia-smi: 492MiB / 32607MiB)", (12, 0)),
        Gpu("gb10", "NVIDIA GB10", 124610, "blackwell-rtx",
            "SGLang's own fallback line `Reported total GPU memory per device (MiB): [124610]` in public repository "
            "logs (SGLang 0.5.15.post1); 122570 and 124546 also seen (the figure varies with the OS image): give "
            "budget.gpu_memory_mib from your log's line. nvidia-smi prints [N/A]: "
            "https://github.com/unslothai/unsloth/pull/10703", (12, 1), integrated=True),
        # Ampere (SM80 / SM86) / Ada (SM89).
        Gpu("a100-80gb", "NVIDIA A100-SXM4-80GB", 81920, "ampere",
            "https://github.com/modal-labs/modal-client/pull/2797 (A100 80GB: 81920MiB); "
            "https://github.com/allenai/PeerRead/issues/40 (nvidia-smi: 0MiB / 81920MiB)", (8, 0)),
        Gpu("a100-40gb", "NVIDIA A100-SXM4-40GB", 40960, "ampere",
            "https://github.com/modal-labs/modal-client/pull/2797 (A100 40GB: 40960MiB; a list of figures)", (8, 0)),
        Gpu("a800", "NVIDIA A800-SXM4-80GB", 81920, "ampere",
            "https://github.com/dexmal/dexbotic/issues/41 (nvidia-smi: 34447MiB / 81920MiB)", (8, 0)),
        Gpu("rtx-3090", "NVIDIA GeForce RTX 3090", 24576, "ampere",
            "https://github.com/noonghunna/club-3090/issues/390 (nvidia-smi: 15005MiB / 24576MiB)", (8, 6)),
        Gpu("a10", "NVIDIA A10", 23028, "ampere",
            "https://github.com/modal-labs/modal-client/pull/2797 (A10: 23028MiB; a list of figures)", (8, 6)),
        Gpu("rtx-a6000", "NVIDIA RTX A6000", None, "ampere", _nv_unconfirmed(), (8, 6)),
        Gpu("l40s", "NVIDIA L40S", 46068, "ada", "https://github.com/modal-labs/modal-client/pull/2797 (L40S: 46068MiB)", (8, 9)),
        Gpu("l40", "NVIDIA L40", 46068, "ada", _NVSMI.format("NVIDIA L40 ... / 46068MiB"), (8, 9)),
        Gpu("l20", "NVIDIA L20", 49140, "ada",
            _NVSMI.format("NVIDIA L20 ... 29030MiB / 49140MiB") + "; 46068 with ECC on (another file)", (8, 9)),
        Gpu("l4", "NVIDIA L4", None, "ada", _nv_unconfirmed(), (8, 9)),
        Gpu("rtx-4090", "NVIDIA GeForce RTX 4090", 24564, "ada",
            "https://github.com/RLinf/RLinf/issues/255 (nvidia-smi: 507MiB / 24564MiB)", (8, 9)),
        Gpu("rtx-6000-ada", "NVIDIA RTX 6000 Ada Generation", None, "ada",
            _nv_unconfirmed("a public test fixture shows 49140 (46068 with ECC on), no nvidia-smi capture"), (8, 9)),
        # AMD Instinct (ROCm): the figure is rocminfo's Pool 1 Size (KB) / 1024.
        Gpu("mi300x", "AMD Instinct MI300X", 196592, "cdna3",
            "https://github.com/ROCm/rocm-examples/issues/187 (rocminfo Pool 1: 201310208(0xbffc000) KB = 196592 MiB; "
            "rocm-smi's VRAM Total 206141652992 B is the same figure, https://github.com/ROCm/legacy-rocm-build/issues/4750)",
            (9, 4), "hip", gcn_arch="gfx942"),
        Gpu("mi325x", "AMD Instinct MI325X", None, "cdna3",
            _roc_unconfirmed("one abridged rocminfo in public issue text shows Pool 1 268419072 KB (262128 MiB), no citable page"),
            (9, 4), "hip", gcn_arch="gfx942"),
        # MI300A: the APU (unified HBM shared with the CPUs); torch reports is_integrated, so
        # SGLang reads free memory from psutil.
        Gpu("mi300a", "AMD Instinct MI300A", None, "cdna3",
            _roc_unconfirmed("https://github.com/ROCm/legacy-rocm-build/issues/4273 shows its GPU agent's pools 2 and 3 at "
                             "98648060 KB (96336 MiB); Pool 1 is not shown"),
            (9, 4), "hip", integrated=True, gcn_arch="gfx942"),
        Gpu("mi355x", "AMD Instinct MI355X", 294896, "cdna4",
            "https://github.com/ROCm/legacy-rocm-build/issues/5891 (an MI355x cluster's rocminfo: Pool 1 "
            "301973504(0x11ffc000) KB = 294896 MiB)", (9, 5), "hip", gcn_arch="gfx950"),
        Gpu("mi350x", "AMD Instinct MI350X", None, "cdna4",
            _roc_unconfirmed("same 288 GB HBM3E as MI355X, whose Pool 1 is 294896 MiB"), (9, 5), "hip", gcn_arch="gfx950"),
        # AMD Radeon (RDNA3 / RDNA3.5): SGLang picks aiter on every HIP device; whether aiter's
        # kernels run on these is not sizing's question.
        Gpu("radeon-pro-w7900", "AMD Radeon PRO W7900", None, "rdna3", _roc_unconfirmed(), (11, 0), "hip", gcn_arch="gfx1100"),
        Gpu("rx-7900-xtx", "AMD Radeon RX 7900 XTX", None, "rdna3", _roc_unconfirmed(), (11, 0), "hip", gcn_arch="gfx1100"),
        Gpu("strix-halo", "AMD Radeon 8060S Graphics", None, "rdna3.5",
            _roc_unconfirmed("the GPU pool depends on the BIOS carve-out and ROCm release (15.5, 62.2 and 120 GB seen: "
                             "https://github.com/ROCm/legacy-rocm-build/issues/5444, /issues/5595); an APU: free memory is "
                             "the host's"), (11, 5), "hip", integrated=True, gcn_arch="gfx1151"),
    )
}

# The capability classes SGLang 0.5.23's resolution is conformance-tested on (each has a
# catalog part): a described device outside them is refused (budget.gpu).
CLASSES = ("sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm120", "sm121", "gfx942", "gfx950", "gfx1100", "gfx1151")

# The part a request that names none is planned on: Hopper, as before the catalog grew.
DEFAULT_GPU = "h200"

# Spellings people use for the same part.
ALIASES = {
    "h100-80gb": "h100", "h100-sxm": "h100", "h100nvl": "h100-nvl", "h200-141gb": "h200", "h200-sxm": "h200",
    "h20-96gb": "h20", "h800-80gb": "h800", "gh200-96gb": "gh200", "gh200-480gb": "gh200", "h100-pcie-80gb": "h100-pcie",
    "b200-sxm": "b200", "b300-sxm": "b300", "rtx-pro-6000-blackwell": "rtx-pro-6000", "rtxpro6000": "rtx-pro-6000",
    "a100": "a100-80gb", "a100-sxm4-80gb": "a100-80gb", "a100-sxm": "a100-80gb", "a100-sxm4-40gb": "a100-40gb",
    "a800-80gb": "a800", "a800-sxm4-80gb": "a800", "geforce-rtx-3090": "rtx-3090", "geforce-rtx-4090": "rtx-4090",
    "geforce-rtx-5090": "rtx-5090", "dgx-spark": "gb10", "rtx-6000-ada-generation": "rtx-6000-ada",
    "amd-instinct-mi300x": "mi300x", "amd-instinct-mi325x": "mi325x", "amd-instinct-mi355x": "mi355x",
    "amd-instinct-mi300a": "mi300a", "amd-instinct-mi350x": "mi350x", "radeon-8060s": "strix-halo",
    "ryzen-ai-max": "strix-halo", "w7900": "radeon-pro-w7900", "7900-xtx": "rx-7900-xtx",
}

# Known parts SGLang runs on that the catalog does not hold: refused by name with advice.
NOT_MODELLED: dict[str, str] = {
    "v100": "Volta (SM 7.0)", "v100-sxm2": "Volta (SM 7.0)", "t4": "Turing (SM 7.5)", "rtx-2080-ti": "Turing (SM 7.5)",
    "mi250x": "AMD CDNA2 (gfx90a)", "mi210": "AMD CDNA2 (gfx90a)",
}


def canonical_name(name: str) -> str:
    """`name` as the catalog spells it: lower case, dashes, no `NVIDIA ` prefix, aliases resolved."""
    k = name.strip().lower().replace("_", "-").replace(" ", "-")
    if k.startswith("nvidia-"):
        k = k[len("nvidia-"):]
    return ALIASES.get(k, k)


DESCRIPTION_FIELDS = ("product", "memory_mib", "compute_capability", "runtime", "integrated")


def _capability(text: str, runtime: str) -> tuple[tuple[int, int], str | None] | None:
    """(torch capability, gfx arch) from `12.1` / `9.4` / `gfx942`; None when unreadable.
    ROCm's torch reports a gfx arch gfxMMms as capability (MM, m)."""
    t = text.strip().lower()
    if t.startswith("gfx"):
        digits = t[3:]
        if runtime != "hip" or len(digits) < 3:
            return None
        return (int(digits[:-2]), int(digits[-2], 16)), t
    major, _, minor = t.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return None
    cap = (int(major), int(minor))
    if runtime == "hip":  # the gfx arch the catalog knows for this capability
        arch = next((g.gcn_arch for g in CATALOG.values() if g.runtime == "hip" and g.capability == cap), None)
        return (cap, arch) if arch is not None else None
    return cap, None


def describe(d: DeviceDescription) -> Gpu:
    """The device a `budget.gpu` object describes (schemas.request.DeviceDescription): every
    field given, and its capability a class whose SGLang resolution is conformance-tested.
    A description whose probes are a catalog part's is that part (its name and source)."""
    missing = [f for f in DESCRIPTION_FIELDS if getattr(d, f, None) is None]
    if missing:
        raise PlanInputError(
            GPU_FIELD,
            f"describes a device without {', '.join(missing)}: give all of {', '.join(DESCRIPTION_FIELDS)} "
            "(e.g. {\"product\": \"NVIDIA GB10\", \"memory_mib\": 124610, \"compute_capability\": \"12.1\", \"runtime\": \"cuda\", "
            "\"integrated\": true}), or name a catalog part (GET /v1/gpus)",
            list(DESCRIPTION_FIELDS),
        )
    assert d.product is not None and d.memory_mib is not None and d.runtime is not None and d.compute_capability is not None
    product, memory_mib, runtime, integrated, text = d.product, d.memory_mib, d.runtime, bool(d.integrated), d.compute_capability
    parsed = _capability(text, runtime)
    cls = (parsed[1] or f"sm{parsed[0][0]}{parsed[0][1]}") if parsed is not None else None
    if parsed is None or cls not in CLASSES:
        raise PlanInputError(
            f"{GPU_FIELD}.compute_capability",
            f"{text!r} on {runtime} is not a device class whose SGLang 0.5.23 resolution mambasizer reproduces; "
            f"known classes: {', '.join(CLASSES)} (CUDA as `major.minor`, ROCm as its gfx arch)",
            list(CLASSES),
        )
    cap, arch = parsed
    twin = next((g for g in CATALOG.values() if _same_name(g.product, product) and g.capability == cap and g.runtime == runtime
                 and g.integrated == integrated), None)
    if twin is not None:
        return twin._replace(memory_mib=memory_mib, source=f"as described (budget.gpu); catalog: {twin.source}")
    family = next(g.architecture for g in CATALOG.values() if g.device_class == cls)
    return Gpu(f"described:{product}", product, memory_mib, family, "as described (budget.gpu)", cap, runtime, integrated, arch)


def _same_name(a: str, b: str) -> bool:
    """Device names compared with spaces, dashes and case folded (GFD writes `NVIDIA-H100-80GB-HBM3`)."""
    norm = lambda x: x.strip().lower().replace("-", " ").replace("_", " ").split()  # noqa: E731
    return norm(a) == norm(b)


def lookup(name: str | DeviceDescription) -> Gpu:
    """The catalog entry for `name`, or the device a description (budget.gpu as an object)
    gives; a PlanInputError naming budget.gpu and listing the catalog otherwise."""
    if not isinstance(name, str):
        return describe(name)
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
            f"{name!r} is {arch}: a device class whose SGLang 0.5.23 resolution mambasizer does not reproduce "
            f"(known classes: {', '.join(CLASSES)}; GET /v1/gpus lists their parts).",
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
