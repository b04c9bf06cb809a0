"""`POST /v1/check-log` and `mambasizer check-log --json`: a start-up log compared with the plan.

The answer's shape is fixed so other tools can rely on it:
`{"sglang_version", "gpu", "ranks": [{"rank": "TP0", "figures": {NAME: {"logged", "predicted", "cause"}}}]}`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_LOG_CHARS = 1 << 20  # 1 MiB, as the body limit

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
]


class CheckLogRequest(BaseModel):
    """The JSON form of the request (the other is the log itself as `text/plain`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    log: str = Field(max_length=MAX_LOG_CHARS, description="The SGLang start-up log, as printed.")
    hf_config: dict[str, Any] | None = Field(
        None, description="The model's config.json, when the log's model_path matches no shipped preset."
    )
    sglang_args: Annotated[list[Annotated[str, Field(max_length=4096)]], Field(max_length=512)] | None = Field(
        None,
        description="The SGLang launch arguments, for a log cut without its server_args record; they win over the record.",
    )


class FigureCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    logged: int | float = Field(description="The value exactly as the log prints it (GB figures: SGLang's 2-decimal GB, bytes / 2**30).")
    predicted: int | float | None = Field(description="What SGLang 0.5.23 prints for the plan (formatted the same way); null when the plan cannot predict it.")
    cause: str | None = Field(description="Why the figure differs or is not predicted; null when it matches.")


class RankCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: str = Field(description="The rank prefix as SGLang prints it (`TP0`, `PP1 TP0`, `DP0 TP1`); `TP0` for an unprefixed log.")
    figures: dict[FigureName, FigureCheck]


class CheckLogResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sglang_version: str | None = Field(description="The SGLang version where the log prints it.")
    gpu: str | None = Field(description="The GPU where the log prints it.")
    ranks: list[RankCheck]
