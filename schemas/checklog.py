"""`POST /v1/check-log` and `mambasizer check-log --json`: a start-up log compared with the plan.

The answer's shape is fixed so other tools can rely on it:
`{"sglang_version", "release": {...}, "role": {...}, "gpu", "estimate_gpu", "ranks": [{"rank": "TP0", "figures": {NAME: {"logged",
"predicted", "cause"}}, "estimated": {NAME: {"logged", "predicted", "error_gb", "match", "cause"}}}]}`.
`release` is the SGLang release whose plan the log is compared with and how it was told (the request, the
printed version, inferred from the log's text, or assumed); `role` the disaggregation role planned.
A disaggregated pair is `{"prefill": {...}, "decode": {...}}` both ways: each side checked with its role's plan,
plus the pair's summary.
`figures` is the plan run on the free memory the log measured (exact given that memory);
`estimated` is the second comparison: the memory figures predicted before a boot.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mambasizer.schemas.disaggregated import PairSummary
from mambasizer.schemas.request import MAX_SGLANG_ARG_CHARS, MAX_SGLANG_ARGS, SglangVersion

MAX_LOG_CHARS = 1 << 20  # 1 MiB, as the body limit
# The text/plain form: the log itself, read as a stream keeping only the start-up lines, so a
# multi-rank log's size costs time (linear), not memory.
MAX_LOG_BODY_BYTES = 64 << 20
# The JSON form carries the log with a config.json and launch arguments: its log is at most
# half the body limit, so the largest body the schema allows still fits (a longer log: send
# it as text/plain).
MAX_JSON_LOG_CHARS = 1 << 19
# A disaggregated pair's JSON carries two logs, each with its launch arguments: each log is at
# most a quarter of the body limit, less 4 KiB so the largest valid pair still fits.
MAX_PAIR_LOG_CHARS = (1 << 18) - (1 << 12)

FigureName = Literal[
    "avail_mem_before_load_gb",
    "avail_mem_after_load_gb",
    "weight_mem_usage_gb",
    "max_mamba_cache_size",
    "conv_state_gb",
    "ssm_state_gb",
    "intermediate_ssm_state_gb",
    "kv_tokens",
    "max_total_num_tokens",
    "max_running_requests",
    "context_len",
    "available_gpu_mem_gb",
    # SGLang's refusal when the mamba state pool comes out empty: `Computed max_mamba_cache_size=%d
    # (total_rest_memory=%.2f GB, mamba_cache_per_req=%.2f MB)`.
    "computed_max_mamba_cache_size",
    "total_rest_memory_gb",
    "mamba_cache_per_req_mb",
]
EstimatedFigureName = Literal["avail_mem_before_load_gb", "avail_mem_after_load_gb", "weight_mem_usage_gb"]


class CheckLogRequest(BaseModel):
    """The JSON form of the request (the other is the log itself as `text/plain`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    log: str = Field(
        min_length=1,
        max_length=MAX_JSON_LOG_CHARS,
        description=f"The SGLang start-up log, as printed (empty is refused; at most {MAX_JSON_LOG_CHARS} characters in this "
        "form; a longer one as the text/plain body).",
    )
    hf_config: dict[str, Any] | None = Field(
        None, description="The model's config.json, when the log's model_path matches no shipped preset."
    )
    sglang_args: Annotated[list[Annotated[str, Field(max_length=MAX_SGLANG_ARG_CHARS)]], Field(max_length=MAX_SGLANG_ARGS)] | None = Field(
        None,
        description="The SGLang launch arguments, for a log cut without its server_args record; they win over the record.",
    )
    gpu: str | None = Field(
        None,
        max_length=64,
        description="The GPU the log was written on, by catalog name (`h200`, `b200`, `mi355x`, ...; GET /v1/gpus), resolved "
        "exactly as the plan's `budget.gpu` (backend, page size, the HIP mem_fraction_static factor), or its total memory in "
        "MiB as nvidia-smi prints it (`81559`; a capacity outside the catalog is sized with Hopper's calibrated residents), "
        "for the memory estimates; it wins over the log's GPU line. An unknown name is a 422 naming `gpu`.",
    )
    sglang_version: SglangVersion | None = Field(
        None,
        description="The SGLang release that wrote the log, when known: its plan is compared with, whatever the log "
        "prints or its text suggests. Left out, the release is read from the log (the printed version, else the "
        "server_args record's fields and the start-up wordings that changed between releases), and the answer's "
        "`release` says how.",
    )


class CheckLogSide(CheckLogRequest):
    """One side of a disaggregated pair: as the single form, its log at most MAX_PAIR_LOG_CHARS (both fit the body limit)."""

    log: str = Field(
        min_length=1,
        max_length=MAX_PAIR_LOG_CHARS,
        description=f"This side's SGLang start-up log (at most {MAX_PAIR_LOG_CHARS} characters). A log whose "
        "server_args name the other role (or aggregated serving) is a 422 naming `<side>.log`.",
    )


class CheckLogPairRequest(BaseModel):
    """A disaggregated deployment's two logs: each compared with its role's plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefill: CheckLogSide = Field(description="The prefill node's log (`--disaggregation-mode prefill`); planned as prefill when its server_args do not say.")
    decode: CheckLogSide = Field(description="The decode node's log (`--disaggregation-mode decode`); planned as decode when its server_args do not say.")


class FigureCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    logged: int | float = Field(description="The value exactly as the log prints it (GB figures: SGLang's 2-decimal GB, bytes / 2**30).")
    predicted: int | float | None = Field(description="What SGLang 0.5.23 prints for the plan (formatted the same way); null when the plan cannot predict it.")
    cause: str | None = Field(description="Why the figure differs or is not predicted; null when it matches.")


class EstimateCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    logged: int | float = Field(description="The value exactly as the log prints it (SGLang's 2-decimal GB, bytes / 2**30).")
    predicted: float | None = Field(
        description="Estimated before a boot, formatted as SGLang prints it: weights from exact parameter bytes plus a calibrated "
        "load residue; free memory from the GPU's capacity minus calibrated CUDA/NCCL residents. Null when it cannot be estimated."
    )
    error_gb: float | None = Field(description="The estimate's stated error (GB): a logged value within it is a match.")
    match: bool | None = Field(description="|logged - predicted| <= error_gb; null when not estimated.")
    cause: str = Field(description="What the estimate rests on, and why it differs or is not estimated.")


class RankCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: str = Field(description="The rank prefix as SGLang prints it (`TP0`, `PP1 TP0`, `DP0 TP1`); `TP0` for an unprefixed log.")
    figures: dict[FigureName, FigureCheck] = Field(
        description="The plan on the free memory the log measured: pool sizes exact given that memory."
    )
    estimated: dict[EstimatedFigureName, EstimateCheck] = Field(
        default_factory=dict,
        description="The second comparison: the memory figures this rank prints, estimated before a boot (within a stated error).",
    )


class ReleaseRange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    first: str = Field(description="The earliest release the log's text allows.")
    last: str = Field(description="The latest release the log's text allows.")
    same_accounting: bool = Field(description="Every release in the range sizes alike (one accounting epoch): the guess cannot move a figure.")


class ReleaseUsed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sglang_version: str = Field(description="The release whose plan the log is compared with (one of SUPPORTED_RELEASES).")
    source: Literal["request", "printed", "inferred", "assumed default"] = Field(
        description="How it was told: named in the request; printed in the log (a release mambasizer does not carry: the "
        "nearest one, said in `note`); inferred from the log's text (the server_args record's fields, the wordings that "
        "changed between releases); or assumed (0.5.23) when nothing tells."
    )
    how: str = Field(description="The evidence, in words.")
    candidates: ReleaseRange | None = Field(description="The releases the log allows, when the release is inferred or assumed; null when named or printed.")
    note: str | None = Field(description="A guess, a nearest release, or evidence that disagrees with the release used; null when none.")


class RoleUsed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    disaggregation_mode: Literal["null", "prefill", "decode"] = Field(description="The role planned: `null` is aggregated serving.")
    source: str = Field(description="Where it came from: `server_args` (the log's record), `launch arguments`, `the pair's side`, or `default`.")
    dcp_size: int = Field(description="Decode context parallelism planned (`--dcp-size`).")
    moe_a2a_backend: str = Field(description="The MoE all-to-all backend planned (`deepep` reserves its buffer).")
    enable_two_batch_overlap: bool = Field(description="Two-batch overlap planned.")


class CheckLogResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sglang_version: str | None = Field(description="The SGLang version where the log prints it.")
    release: ReleaseUsed = Field(description="The release compared with, and how it was told.")
    role: RoleUsed = Field(description="The disaggregation role (and DCP / DeepEP / TBO) the plan was made for.")
    gpu: str | None = Field(description="The GPU where the log prints it.")
    estimate_gpu: str | None = Field(
        None, description="The catalog GPU the free-memory estimates assume (the request's `gpu`, else the log's GPU line); null when none."
    )
    ranks: list[RankCheck]
    notes: list[str] = Field(
        default_factory=list,
        description="What reading the log skipped: bytes that are not UTF-8 text in lines check-log does not read, counted "
        "(such a byte in a start-up line it reads is a 422 naming `log`); and, when the log's model_path names no shipped "
        "checkpoint exactly but starts with one's name (`.../Qwen3.5-397B-A17B-FP8`), which preset it was taken as.",
    )


class CheckLogPairResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefill: CheckLogResponse = Field(description="The prefill log against the prefill plan.")
    decode: CheckLogResponse = Field(description="The decode log against the decode plan.")
    pair: PairSummary | None = Field(description="What the planned pair sustains (one replica each, on the memory each log measured); null when a side has no plan.")
    notes: list[str] = Field(default_factory=list, description="What differs between the sides (release, model).")
