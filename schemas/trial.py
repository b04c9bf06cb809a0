"""Trial: allocate what SGLang 0.5.23 allocates for a plan's stages, and measure it.

A trial answers "does the plan hold on real memory?": per PP stage and per pool, the bytes
the plan predicts (`predicted`, from the same tensor manifest the plan sums) beside the
bytes the allocator really took (`measured`). Every figure is labelled with where it came
from: `predicted` is computed, `measured` is observed on `device`.

`status`:
* `ok`: every selected stage allocated in full;
* `oom`: a stage ran out of device memory (`stages[].oom` says which pool, by how much);
  all memory was released;
* `rejected`: the trial did not allocate (the plan cannot start, the stage list is out of
  range, a CPU trial larger than the machine's free memory, no such device);
* `unavailable`: no answer from a worker (down, busy, slower than the timeout).

`POST /v1/plan` answers a trial it did not run (trials disabled on the server, the
client's trial credential missing or wrong, a failure on the server's side) with a
TrialRefusal: `{"status": "rejected", "reason": ...}`; the plan beside it is unaffected.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import MAX_GIB, MAX_PARALLEL, PlanRequest, StrictInt

TrialStatus = Literal["ok", "oom", "unavailable", "rejected"]
StageStatus = Literal["ok", "oom", "cancelled"]
Pool = Literal[
    "conv_state", "ssm_state", "intermediate_state", "replayssm_ring", "kv_pool", "req_to_token", "side_tables",
    "int8_checkpoint",
]
MAX_TIMEOUT_S = 3600.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- request


class TrialOptions(_Strict):
    """How to run a trial. `{}` runs every stage on the worker's own device with the
    request's budget."""

    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="`auto`: the worker's device (CUDA when it has one, else CPU)."
    )
    stages: Annotated[list[Annotated[StrictInt, Field(ge=0, lt=MAX_PARALLEL)]], Field(min_length=1, max_length=MAX_PARALLEL)] | None = Field(
        None,
        description="PP ranks to allocate, one after the other (freed in between: a real deployment "
        "has one stage per GPU). null: every stage.",
    )
    budget: Literal["request", "device"] = Field(
        "request",
        description="`request`: size with the request's budget. `device` (CUDA only): measure this GPU's "
        "free memory before and after holding `hold_weights_gib`, and size with those figures the way "
        "SGLang's profiler does (`free_gib_before_load`, `free_gib_after_load`, `gpu_memory_mib`).",
    )
    hold_weights_gib: Annotated[float, Field(ge=0, le=MAX_GIB, allow_inf_nan=False)] | None = Field(
        None, description="Hold a placeholder of this many GiB (the rank's weights) while the pools are allocated."
    )
    timeout_s: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)] = Field(
        120.0, description="Wall-clock limit, queueing included. A trial past it is cancelled and its memory released."
    )

    @model_validator(mode="after")
    def _unique_stages(self) -> TrialOptions:
        if self.stages is not None and len(set(self.stages)) != len(self.stages):
            raise ValueError("stages lists a pp rank more than once")
        return self


class TrialCall(_Strict):
    """The body of the worker's `POST /v1/trial`."""

    request: PlanRequest
    trial: TrialOptions = TrialOptions()


# --------------------------------------------------------------------------- result


class PoolBytes(_Strict):
    conv_state_bytes: int = 0
    ssm_state_bytes: int = 0
    intermediate_state_bytes: int = 0
    replayssm_ring_bytes: int = 0
    kv_pool_bytes: int = 0
    req_to_token_bytes: int = 0
    side_tables_bytes: int = Field(0, description="Small index tables: the mamba slot free list, request -> slot maps, ReplaySSM cursors.")
    int8_checkpoint_bytes: int = Field(0, description="--enable-int8-mamba-checkpoint: the int8 checkpoint pool and its slot list, allocated after the split and never charged.")


class MeasuredPoolBytes(_Strict):
    """Like PoolBytes; null for a pool the trial did not get to (after an OOM)."""

    conv_state_bytes: int | None = None
    ssm_state_bytes: int | None = None
    intermediate_state_bytes: int | None = None
    replayssm_ring_bytes: int | None = None
    kv_pool_bytes: int | None = None
    req_to_token_bytes: int | None = None
    side_tables_bytes: int | None = None
    int8_checkpoint_bytes: int | None = None


class PoolLine(_Strict):
    pool: Pool
    tensors: int
    predicted_bytes: int
    measured_bytes: int | None = Field(description="CUDA: torch.cuda.memory_allocated() growth; CPU: the tensors' storage bytes.")
    difference_bytes: int | None = Field(description="measured - predicted.")
    budgeted_bytes: int = Field(description="The part of predicted that SGLang's sizing charges.")
    reserved_delta_bytes: int | None = Field(None, description="CUDA: torch.cuda.memory_reserved() growth (allocator segments).")
    device_free_drop_bytes: int | None = Field(None, description="CUDA: drop of torch.cuda.mem_get_info() free bytes.")
    rss_delta_bytes: int | None = Field(None, description="CPU: process resident-set growth with every page touched (moves with whatever else the process frees meanwhile).")
    resident_bytes: int | None = Field(None, description="CPU: bytes of the pool's own pages in memory right after each tensor was allocated (mincore); null where the OS cannot say.")


class UnbudgetedLine(_Strict):
    """Allocated by SGLang, never charged by its sizing (SIZING_SPEC §4.3)."""

    pool: Pool
    name: str
    shape: list[int] | None = Field(None, description="The tensor's shape; null for a part of a tensor (the KV padding page).")
    dtype: str | None = None
    predicted_bytes: int
    measured_bytes: int | None
    why: str


class OOMInfo(_Strict):
    pool: Pool
    tensor: str
    requested_bytes: int = Field(description="The allocation that failed.")
    remaining_bytes: int = Field(description="That allocation plus everything the stage still had to allocate.")
    free_bytes: int | None = Field(description="What the device reported free when it failed.")
    shortfall_bytes: int | None = Field(description="remaining - free: how much more memory the stage needed.")
    message: str


class StageTrial(_Strict):
    pp_rank: int
    status: StageStatus
    device: str
    would_start: bool = Field(description="SGLang's sizing passes and every pool of this stage was allocated.")
    predicted: PoolBytes
    measured: MeasuredPoolBytes
    difference: MeasuredPoolBytes
    pools: list[PoolLine]
    unbudgeted: list[UnbudgetedLine]
    oom: OOMInfo | None = None
    peak_bytes: int = Field(description="Bytes held at the stage's peak (allocator view).")
    leaked_bytes: int = Field(description="Bytes still held after the stage was released (0 when clean).")
    free_after_pools_bytes: int | None = Field(None, description="CUDA: free device memory with every pool allocated: what is left for activations and CUDA graphs.")
    elapsed_s: float


class TrialBudget(_Strict):
    source: Literal["request", "device"]
    device_total_bytes: int | None = None
    free_before_load_bytes: int | None = None
    free_after_load_bytes: int | None = None
    held_weights_bytes: int = 0
    free_gib_before_load: float | None = None
    free_gib_after_load: float | None = None
    gpu_memory_mib: int | None = None


class TrialRefusal(_Strict):
    """The API's answer to a trial it did not run; the plan beside it is unaffected."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "rejected",
                    "reason": "trials are disabled on this server; the plan above is unaffected "
                    "(an operator enables them with --enable-trials or MAMBASIZER_TRIALS_ENABLED=true)",
                },
                {
                    "status": "rejected",
                    "reason": "this server requires a trial credential: send Authorization: Bearer <trial token>; "
                    "the plan above is unaffected",
                },
            ]
        }
    )

    status: Literal["rejected", "unavailable"] = Field(
        description="`rejected`: this server refused the trial (trials disabled, credential missing or wrong); "
        "`unavailable`: it could not complete one (a failure on its side, or the client went away)."
    )
    # `reason`, as in TrialResult: every answer under `trial` says why in the same field.
    reason: str | None = Field(None, description="Why, in the client's terms (the same field as TrialResult.reason).")


class TrialResult(_Strict):
    status: TrialStatus
    reason: str | None = None
    device: str | None = None
    would_start: bool | None = Field(None, description="Every selected stage would start (null when nothing was allocated).")
    stages: list[StageTrial] = Field(default_factory=list)
    budget: TrialBudget | None = None
    plan: Plan | None = Field(None, description="The plan re-derived from the device's own budget (budget=device only).")
    baseline_restored: bool | None = Field(None, description="The device's allocated bytes are back at their pre-trial value.")
    elapsed_s: float = 0.0
