"""check-log's second comparison: the memory figures estimated before a boot.

The first comparison (mambasizer.service.startlog.compare) plans with the free memory the log measured, so its
pool sizes are exact given that memory. This one predicts the three figures that comparison
takes as input, the way `budget: {"gpu": ...}` does (mambasizer.service.solver.gpu_budget):

    weight_mem_usage_gb       = this stage's target weights (largest TP rank; weights.py, exact
                                parameter bytes) + the calibrated load residue. The log
                                reader keeps a rank's first 'Load weight end' line: the
                                target's, printed before MTP layers or a draft model load.
    avail_mem_before_load_gb  = GPU capacity - the calibrated CUDA/NCCL residents   (needs the GPU)
    avail_mem_after_load_gb   = before - weight_mem_usage                            (per rank)

SGLang prints the first as (free before - free after) / 2**30 and the other two as one
rank's own probe (not the world MIN) / 2**30, each with two decimals (model_runner.load_model).
Parameter bytes are exact; the residents and what the load leaves besides the parameters
(allocator rounding, rotary caches) are calibrated, so each figure is an estimate with a
stated error, and a logged value within it counts as a match (exit 0 on a healthy boot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mambasizer.service.solver import gpus
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.gpu_budget import (
    GIB,
    LOAD_RESIDENT_GIB,
    MIB,
    load_bytes,
    resident_before_load_bytes,
)

ESTIMATED = ("avail_mem_before_load_gb", "avail_mem_after_load_gb", "weight_mem_usage_gb")
GPU_FIELD = "gpu"

# The stated errors. Weights: the real logs land within 3% of parameter bytes + residue
# (tests/conformance/test_weights_bootlogs.py); never less than two print roundings.
WEIGHTS_ERROR = 0.03
MIN_ERROR_GB = 0.02
# The calibrated pre-load residents are checked within 1 GiB of public logs
# (tests/solver/test_gpu_budget.py, tests/data/fpre_calibration.json).
RESIDENTS_ERROR_GB = 1.0

_WEIGHTS_BASIS = (
    "weights estimated: exact parameter bytes of this stage's largest TP rank (SGLang's parameter shapes) "
    f"+ {LOAD_RESIDENT_GIB} GiB calibrated load residue; the load's allocator overhead is not modelled"
)
_TARGET_ONLY = " (the target model's: its line comes before the MTP / draft weights load)"
_RESIDENTS_BASIS = "free memory estimated: GPU capacity {cap} MiB ({gpu}) - {res:.2f} GiB calibrated CUDA/NCCL residents"


@dataclass
class Estimate:
    """What is known to estimate the three figures, and why a part is not."""

    gpu: gpus.Gpu | None = None
    gpu_cause: str | None = None  # why avail_mem_* are not estimated
    stage_weights: tuple[int, ...] | None = None  # per stage, its largest TP rank
    weights_cause: str | None = None  # why nothing is estimated
    world_size: int | None = None  # tp_size * pp_size (the NCCL residents), once the request is known
    speculative: bool = False  # the MTP layers / draft model load after the logged target line


MAX_CAPACITY_MIB = 1 << 22  # 4 TiB: no GPU comes near it


_ARCH_LABEL = {"blackwell": "Blackwell", "blackwell-rtx": "Blackwell RTX", "ampere": "Ampere", "ada": "Ada", "cdna3": "AMD CDNA3", "cdna4": "AMD CDNA4"}


def _hopper_only(gpu: gpus.Gpu, name: str) -> tuple[gpus.Gpu | None, str | None]:
    """The log check estimates avail_mem from the calibrated residents, which are Hopper's."""
    if gpu.architecture == "hopper" and gpu.memory_mib is None:
        return None, (f"GPU {name!r}: a Hopper part whose capacity is not in the catalog (no public figure confirms it); give its "
                      "total memory in MiB (nvidia-smi's memory.total) as `--gpu` (JSON `gpu`)")
    if gpu.architecture != "hopper":
        arch = _ARCH_LABEL.get(gpu.architecture, gpu.architecture)
        return None, f"GPU {name!r} is {arch}: its platform is not modelled here (the calibrated residents are Hopper's)"
    return gpu, None


def gpu_named(name: str) -> tuple[gpus.Gpu | None, str | None]:
    """A caller's GPU: a catalog name, or its total memory in MiB as nvidia-smi prints it
    (`81559`, `81559MiB`): the catalog part, or one of that capacity sized with Hopper's
    residents; (None, cause) for a known part whose platform is not modelled;
    PlanInputError (field `gpu`) for anything else."""
    digits = name.strip().lower().removesuffix("mib").strip()
    if digits.isdigit():
        capacity = int(digits[:12]) if len(digits) <= 12 else MAX_CAPACITY_MIB + 1  # no int() of a huge string
        if not 1024 <= capacity <= MAX_CAPACITY_MIB:
            raise PlanInputError(GPU_FIELD, f"a capacity of {digits[:20]}{'...' if len(digits) > 20 else ''} MiB is not a GPU's: give nvidia-smi's memory.total (e.g. 81559) or a catalog name")
        known = gpus.by_capacity(capacity)
        if known is not None and known.architecture == "hopper":
            return known, None
        return gpus.Gpu(f"{capacity}MiB", "", capacity, "hopper (assumed)", ""), None
    key = gpus.canonical_name(name)
    if key in gpus.CATALOG:
        return _hopper_only(gpus.CATALOG[key], name)
    if key in gpus.NOT_MODELLED:
        return None, f"GPU {name!r} is {gpus.NOT_MODELLED[key]}: its platform is not modelled (the calibrated residents are Hopper's)"
    raise PlanInputError(
        GPU_FIELD,
        f"unknown GPU {name!r}: give one of {', '.join(sorted(gpus.CATALOG))} (GET /v1/gpus), or its total memory in MiB (nvidia-smi's memory.total)",
        sorted(gpus.CATALOG),
    )


def gpu_from_log(printed: str | None) -> tuple[gpus.Gpu | None, str | None]:
    """The log's GPU line (`NVIDIA H200`, `NVIDIA H100 80GB`): the catalog part, or why not."""
    if printed is None:
        return None, "the log prints no GPU name: give the GPU (`--gpu NAME` or its MiB, JSON `gpu`) to estimate it"
    key = gpus.canonical_name(printed)
    gpu = gpus.from_device_name(printed)
    if gpu is not None:
        return _hopper_only(gpu, printed)
    if key in gpus.NOT_MODELLED or not any(h in printed.upper() for h in ("H100", "H200", "H800", "H20", "GH200")):
        return None, f"GPU {printed}: its platform is not modelled (the calibrated residents are Hopper's)"
    return None, (
        f"GPU {printed}: a Hopper part whose capacity is not in the catalog; give its total memory in MiB "
        "(nvidia-smi's memory.total) as `--gpu` (JSON `gpu`)"
    )


def prepare(
    request: dict | None, no_plan: str | None, gpu: str | None, log_gpu: str | None, platform_cause: str | None,
    weights_cause: str | None = None,
) -> Estimate:
    """The weights per stage (for the rebuilt request) and the GPU, or the causes.
    `weights_cause`: why the logged checkpoint's weights are not the model's (checklog)."""
    est = Estimate()
    if gpu is not None:
        est.gpu, est.gpu_cause = gpu_named(gpu)  # the caller's GPU wins over the log's line
    else:
        est.gpu, est.gpu_cause = gpu_from_log(log_gpu)
    if est.gpu is not None and platform_cause:
        est.gpu, est.gpu_cause = None, platform_cause
    if request is None:
        est.weights_cause = f"cannot plan: {no_plan}"
        return est
    args = request.get("server_args", {})
    est.world_size = int(args.get("tp_size", 1)) * int(args.get("pp_size", 1))
    if weights_cause is not None:
        est.weights_cause = weights_cause
        return est
    from mambasizer.service.planner import model_layout, parse_request
    from mambasizer.service.solver.launch import resolve
    from mambasizer.service.solver.plan import stage_split
    from mambasizer.service.solver.weights import stage_weight_bytes

    try:
        req = parse_request(request)
        layout = model_layout(req)
        # The weights do not depend on mem_fraction_static: it need not be resolvable here.
        launch = resolve(layout, req.server_args, req.env, gpu_memory_mib=est.gpu.memory_mib if est.gpu else None,
                         draft_layers=req.draft_model.num_layers if req.draft_model else None, needs_mfs=False)
        # The target model alone: its 'Load weight end' line (the one the log reader keeps)
        # is printed before the MTP layers or a draft model load in their own worker.
        est.stage_weights = stage_weight_bytes(
            layout, tp_size=launch.tp_size, pp_size=launch.pp_size, ep_size=req.server_args.ep_size,
            stages=stage_split(req, layout, launch.pp_size), load_nextn=False, draft_num_layers=None,
        )
        est.speculative = launch.speculative_algorithm is not None
    except (PlanInputError, ValueError) as exc:
        where = f"{exc.field}: {exc.message}" if isinstance(exc, PlanInputError) else str(exc)
        est.weights_cause = f"weights cannot be computed: {where}"
    return est


def _gb(nbytes: float) -> float:
    return float(f"{nbytes / GIB:.2f}")


def predict(name: str, stage_index: int, est: Estimate) -> tuple[float | None, float | None, str]:
    """(predicted GB as SGLang prints it, its stated error in GB, basis or why not)."""
    if est.world_size is None:
        return None, None, est.weights_cause or "the run's parallelism is not known"
    gpu_basis, before = None, 0
    if est.gpu is not None and est.gpu.memory_mib is not None:  # _hopper_only never lets an unconfirmed part through
        resident = resident_before_load_bytes(est.world_size)
        before = est.gpu.memory_mib * MIB - resident
        gpu_basis = _RESIDENTS_BASIS.format(cap=est.gpu.memory_mib, gpu=est.gpu.name, res=resident / GIB)
        if est.gpu.name not in gpus.CATALOG:
            gpu_basis += " (not a catalog GPU: Hopper's residents assumed)"
    if name != "weight_mem_usage_gb" and gpu_basis is None:
        return None, None, f"not estimated: {est.gpu_cause}"
    if name == "avail_mem_before_load_gb":  # the GPU and the world size alone
        return _gb(before), RESIDENTS_ERROR_GB, str(gpu_basis)
    if est.stage_weights is None:
        return None, None, est.weights_cause or "weights cannot be computed"
    if stage_index >= len(est.stage_weights):
        return None, None, f"rank is on pipeline stage {stage_index}; the plan has {len(est.stage_weights)}"
    usage = load_bytes(est.stage_weights[stage_index])
    usage_error = max(WEIGHTS_ERROR * usage / GIB, MIN_ERROR_GB)
    weights_basis = _WEIGHTS_BASIS + (_TARGET_ONLY if est.speculative else "")
    if name == "weight_mem_usage_gb":
        return _gb(usage), round(usage_error, 2), weights_basis
    if before - usage < 0:
        return None, None, f"the weights ({usage / GIB:.2f} GiB) exceed the estimated free memory ({before / GIB:.2f} GiB): SGLang would not load them"
    return _gb(before - usage), round(RESIDENTS_ERROR_GB + usage_error, 2), f"{gpu_basis}; {weights_basis}"


def check(name: str, stage_index: int, logged: Any, est: Estimate, difference_cause: str) -> dict:
    """The estimated figure beside the logged one: {logged, predicted, error_gb, match, cause}."""
    predicted, error, basis = predict(name, stage_index, est)
    if predicted is None:
        return {"logged": logged, "predicted": None, "error_gb": None, "match": None, "cause": basis}
    diff = float(f"{float(logged) - predicted:.2f}")
    match = abs(diff) <= (error or 0.0) + 1e-9
    if match:
        cause = f"within the estimate's stated error (±{error:.2f} GB): {basis}"
    else:
        cause = f"outside the estimate's stated error (±{error:.2f} GB): {basis}; {difference_cause}"
    return {"logged": logged, "predicted": predicted, "error_gb": error, "match": match, "cause": cause}
