"""RecommendRequest / RecommendResponse: the launch settings that reach a target.

`POST /v1/recommend` and `mambasizer recommend FILE` take the same JSON. Every list the search
walks is bounded (at most 16 values per knob, 64 GPU counts, 16 GPU kinds, which share one
search's bounds), so no number a client sends makes the search larger than a fixed grid; the
figures of a target only enter comparisons and bisections (logarithmic in their size).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from mambasizer.schemas.plan import Out, Plan
from mambasizer.schemas.releases import DEFAULT_RELEASE
from mambasizer.schemas.request import (
    MAX_CONTEXT,
    MAX_PARALLEL,
    MAX_SGLANG_ARG_CHARS,
    MAX_SGLANG_ARGS,
    MAX_TOKENS,
    Budget,
    DraftModel,
    Env,
    KVCacheDType,
    ModelSpec,
    ServerArgs,
    SglangVersion,
    SpecAlgorithm,
    Strict,
    StrictInt,
)

MAX_KNOB_VALUES = 16
MAX_GPU_COUNTS = 64
MAX_LIMIT = 100
# GPU kinds one request compares: they share one search's bounds (MAX_GRID settings, MAX_PLANS
# plans), so the list only divides that work; 16 holds every confirmed catalog part.
MAX_GPU_KINDS = 16
MAX_PRICE = 1_000_000.0  # per GPU-hour

Parallel = Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL)]
SsmDType = Literal["float32", "bfloat16", "float16"]
Objective = Literal["fewest_gpus", "most_requests", "most_tokens", "cheapest"]
GpuName = Annotated[str, Field(min_length=1, max_length=64)]
Price = Annotated[float, Field(gt=0, le=MAX_PRICE, allow_inf_nan=False)]


# A searched knob: 1-16 values (the grid is their product, so its size is bounded).
Knob = Field(min_length=1, max_length=MAX_KNOB_VALUES)
ParallelKnob = Annotated[list[Parallel], Knob]
KVKnob = Annotated[list[KVCacheDType], Knob]
SsmKnob = Annotated[list[SsmDType], Knob]
SpecKnob = Annotated[list[SpecAlgorithm | None], Knob]


class Target(Strict):
    """What the deployment must reach (each optional). Requests and tokens are per replica,
    summed over attention-DP workers."""

    running_requests: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        None, description="SGLang's max_running_requests (x attention DP) must reach it."
    )
    context_length: Annotated[StrictInt, Field(ge=1, le=MAX_CONTEXT)] | None = Field(
        None, description="The served context (`--context-length`); one full request must fit: max_total_num_tokens >= it."
    )
    tokens_per_request: Annotated[StrictInt, Field(ge=1, le=MAX_CONTEXT)] | None = Field(
        None, description="Average live tokens per request: max_total_num_tokens >= running_requests x tokens_per_request."
    )


class Search(Strict):
    """What the search may vary. A knob left out (null) keeps the base value (`server_args` /
    `sglang_args`, else SGLang's default); a knob the base fixes cannot also be searched."""

    tp_size: ParallelKnob | None = Field(None, description="Tensor-parallel sizes to try.")
    pp_size: ParallelKnob | None = Field(None, description="Pipeline-parallel sizes to try.")
    attn_dp_size: ParallelKnob | None = Field(None, description="Attention data-parallel sizes to try (each must divide tp_size).")
    ep_size: ParallelKnob | None = Field(
        None, description="Expert-parallel sizes to try (`--ep-size`; each must divide tp_size, else counted under refused). "
        "They change the weights per GPU only when planned from the GPU alone (`gpu`).",
    )
    kv_cache_dtype: KVKnob | None = Field(None, description="KV cache dtypes to try (`--kv-cache-dtype`).")
    mamba_ssm_dtype: SsmKnob | None = Field(None, description="Mamba SSM state dtypes to try (`--mamba-ssm-dtype`).")
    speculative: SpecKnob | None = Field(None, description="Speculative algorithms to try (null in the list: none); null keeps the base.")
    pp_partition: bool = Field(True, description="Choose SGLANG_PP_LAYER_PARTITION (the exact optimum over contiguous partitions).")
    mamba_cache: bool = Field(True, description="Choose --max-mamba-cache-size: the least that meets running_requests, or the balance with tokens_per_request.")
    mem_fraction_static: bool = Field(
        False, description="Also try the largest --mem-fraction-static that keeps SGLang's pre-capture activation reserve "
        "(the post-capture floor), when the automatic value misses the target.",
    )


class RecommendRequest(Strict):
    model: ModelSpec
    gpu: GpuName | Annotated[list[GpuName], Field(min_length=1, max_length=MAX_GPU_KINDS)] | None = Field(
        None, description='A catalog GPU (`GET /v1/gpus`), or a list of them to compare (e.g. ["h200", "b200", "mi300x"]; '
        'two spellings of one part count once): every candidate is planned from its GPU alone (budget {"gpu": ...}). '
        "Every part needs a confirmed capacity (`confirmed: true`).",
    )
    gpu_prices: Annotated[dict[GpuName, Price], Field(min_length=1, max_length=MAX_GPU_KINDS)] | None = Field(
        None, description="Price per GPU-hour of each requested GPU (any currency, the same for all; keys among `gpu`, "
        "or budget.gpu): each candidate then states its cost per hour. `cheapest` needs a price for every requested GPU.",
    )
    budget: Budget | None = Field(
        None, description="Instead of `gpu`: any PlanRequest budget form. A measured one is taken as holding for every layout searched.",
    )
    gpus: Annotated[list[Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL * MAX_PARALLEL)]], Field(min_length=1, max_length=MAX_GPU_COUNTS)] | None = Field(
        None, description="GPU counts per replica (tp_size x pp_size) the answer may use; all products of the searched sizes when absent.",
    )
    target: Target = Target()
    objective: Objective = Field(
        "fewest_gpus", description="fewest_gpus (then, across GPU kinds, the lower cost when priced, then the most KV tokens), "
        "most_requests, most_tokens, or cheapest (the lowest cost per hour of a replica: GPUs per replica x its price, "
        "then the fewest GPUs, then the most KV tokens). Full ties go to the GPU listed first in `gpu`.",
    )
    search: Search = Search()
    server_args: ServerArgs = ServerArgs()
    sglang_args: Annotated[list[Annotated[str, Field(max_length=MAX_SGLANG_ARG_CHARS)]], Field(max_length=MAX_SGLANG_ARGS)] | None = Field(
        None, description="SGLang launch arguments as the base, in place of server_args.",
    )
    env: Env = Env()
    draft_model: DraftModel | None = None
    sglang_version: SglangVersion = Field(
        default=DEFAULT_RELEASE,
        description="The SGLang release whose start-up rules every searched setting is planned under (as PlanRequest.sglang_version).",
    )
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = 10

    @model_validator(mode="after")
    def _one_budget(self) -> RecommendRequest:
        if (self.gpu is None) == (self.budget is None):
            raise ValueError('give exactly one of gpu (e.g. "h200") or budget')
        return self


class TargetCheck(Out):
    required: int
    achieved: int
    margin: int = Field(description="achieved - required (negative: missed by that much).")
    met: bool


class Candidate(Out):
    gpu: str | None = Field(description="The GPU kind this candidate is planned on (catalog name); null for a budget that names none.")
    cost_per_hour: float | None = Field(
        description="One replica's price per hour: GPUs per replica x gpu_prices[gpu] (replicas are not modelled); null when unpriced.",
    )
    gpus: int = Field(description="GPUs per replica (tp_size x pp_size).")
    tp_size: int
    pp_size: int
    attn_dp_size: int
    sglang_args: list[str] = Field(description="Launch flags, ready to paste after `python -m sglang.launch_server --model-path ...`.")
    env: dict[str, str] = Field(description="Environment variables to set (SGLANG_PP_LAYER_PARTITION, ...).")
    meets_target: bool
    targets: dict[str, TargetCheck] = Field(description=(
        "Each target given, with what the plan reaches, in what it is checked on: tokens_per_request as KV tokens over "
        "all workers (x running_requests), context_length as one worker's KV tokens."))
    max_running_requests: int = Field(description="SGLang's max_running_requests x attention DP.")
    max_total_num_tokens: int = Field(description="KV tokens per attention-DP worker x attention DP.")
    max_mamba_cache_size: int
    binding_limit: str | None
    plan: Plan = Field(description="The plan of exactly these flags, as POST /v1/plan answers it.")


class RecommendResponse(Out):
    objective: Objective
    candidates: list[Candidate] = Field(description="Best first: one per parallel layout and dtype choice.")
    pareto: list[Candidate] = Field(
        description="The Pareto front over (fewest GPUs, most requests, most tokens; and the lowest cost when priced) of every "
        "startable setting searched, across every GPU kind.",
    )
    searched: int = Field(description="Plans run (over every GPU kind).")
    refused: dict[str, int] = Field(description="Settings SGLang would refuse, counted by its reason (the plan's error kind, or the input field it rejects), over every GPU kind.")
    why: str
    warnings: list[str] = Field(default_factory=list)
