"""RecommendDisaggregatedRequest / RecommendDisaggregatedResponse: the prefill and decode
settings, and the replicas of each, that reach a disaggregated deployment's targets.

`POST /v1/recommend/disaggregated` takes and answers these. Each side's search is a fixed,
bounded grid (at most 16 values per knob, at most MAX_SIDE_GRID settings per side); the
targets' figures only enter comparisons, the mamba-cache bisection (logarithmic) and one
division per setting (the replicas), so no number a client sends makes the search larger.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from mambasizer.schemas.disaggregated import PairSummary
from mambasizer.schemas.plan import Out, Plan
from mambasizer.schemas.recommend import KVKnob, ParallelKnob, SpecKnob, SsmKnob, TargetCheck
from mambasizer.schemas.releases import DEFAULT_RELEASE
from mambasizer.schemas.request import (
    MAX_CONTEXT,
    MAX_TOKENS,
    Budget,
    DraftModel,
    Env,
    ModelSpec,
    ServerArgs,
    SglangVersion,
    Strict,
    StrictInt,
)

MAX_SIDE_GRID = 64  # settings (tp x pp x dp x dcp x ep x a2a x dtypes x speculative) one side searches
MAX_ALTERNATIVES = 20

A2AKnob = Annotated[list[Literal["none", "deepep"]], Field(min_length=1, max_length=2)]
Count = Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)]


class SideSearch(Strict):
    """What one side's search may vary; a knob left out (null) takes the role's default list
    (decode: tp 1/2/4/8, attention DP and DCP dividing it, pp 1; prefill: tp 1/2/4/8 x pp
    1/2/4/8), or the side's `server_args` value when it fixes the knob."""

    tp_size: ParallelKnob | None = Field(None, description="Tensor-parallel sizes to try.")
    pp_size: ParallelKnob | None = Field(None, description="Pipeline-parallel sizes to try (with speculative decoding: the prefill side only).")
    attn_dp_size: ParallelKnob | None = Field(None, description="Attention data-parallel sizes to try (each must divide tp_size; others are skipped).")
    dcp_size: ParallelKnob | None = Field(
        None, description="Decode context parallel sizes to try (`--dcp-size`): each must divide tp_size and fit the attention TP (others are skipped).",
    )
    ep_size: ParallelKnob | None = Field(None, description="Expert-parallel sizes to try (MoE models; DeepEP sets ep_size = tp_size itself).")
    moe_a2a_backend: A2AKnob | None = Field(None, description="MoE all-to-all backends to try (`--moe-a2a-backend`; deepep: MoE models only).")
    kv_cache_dtype: KVKnob | None = Field(None, description="KV cache dtypes to try.")
    mamba_ssm_dtype: SsmKnob | None = Field(None, description="Mamba SSM state dtypes to try.")
    speculative: SpecKnob | None = Field(None, description="Speculative algorithms to try (null in the list: none).")


class DecodeSide(Strict):
    """The decode side's target: requests running at once over all decode replicas, and the
    average live tokens each keeps."""

    concurrent_requests: Count = Field(description="Requests the decode side runs at once, over its replicas (the pair's decode_concurrency must reach it).")
    tokens_per_request: Annotated[StrictInt, Field(ge=1, le=MAX_CONTEXT)] | None = Field(
        None, description="Average live tokens per running request: the decode side's logical KV tokens must reach concurrent_requests x it.",
    )
    server_args: ServerArgs = Field(ServerArgs(), description="Fixed decode knobs (disaggregation_mode is decode; a fixed knob is not searched).")
    search: SideSearch = SideSearch()


class PrefillSide(Strict):
    """The prefill side's target: the prefills it holds at once (their KV waits there until the
    decode side takes it), as requests and/or tokens over all prefill replicas."""

    in_flight_requests: Count | None = Field(None, description="Requests the prefill side holds at once, over its replicas (the pair's prefill_in_flight_requests).")
    in_flight_tokens: Count | None = Field(None, description="Prompt tokens the prefill side's KV holds at once, over its replicas (the pair's prefill_kv_tokens).")
    server_args: ServerArgs = Field(ServerArgs(), description="Fixed prefill knobs (disaggregation_mode is prefill; a fixed knob is not searched).")
    search: SideSearch = SideSearch()

    @model_validator(mode="after")
    def _one_target(self) -> PrefillSide:
        if self.in_flight_requests is None and self.in_flight_tokens is None:
            raise ValueError("give in_flight_requests or in_flight_tokens (or both): what the prefill side must hold at once")
        return self


class RecommendDisaggregatedRequest(Strict):
    model: ModelSpec
    gpu: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        None, description='A catalog GPU (`GET /v1/gpus`): both sides are planned from the GPU alone (budget {"gpu": ...}).'
    )
    budget: Budget | None = Field(None, description="Instead of `gpu`: any PlanRequest budget form, taken as holding for every layout searched.")
    context_length: Annotated[StrictInt, Field(ge=1, le=MAX_CONTEXT)] | None = Field(
        None, description="The served context (`--context-length`) on both sides; one full request must fit in one worker's pool on each.",
    )
    prefill: PrefillSide
    decode: DecodeSide
    env: Env = Env()
    draft_model: DraftModel | None = None
    sglang_version: SglangVersion = Field(default=DEFAULT_RELEASE, description="The SGLang release both sides are planned under.")
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_ALTERNATIVES)] = Field(3, description="Settings listed per side in `alternatives` (the chosen one first).")

    @model_validator(mode="after")
    def _one_budget(self) -> RecommendDisaggregatedRequest:
        if (self.gpu is None) == (self.budget is None):
            raise ValueError('give exactly one of gpu (e.g. "h200") or budget')
        return self


class SideChoice(Out):
    role: Literal["prefill", "decode"]
    replicas: int = Field(description="Servers of this role the deployment runs (the least that reaches every target of the side).")
    gpus_per_replica: int = Field(description="tp_size x pp_size.")
    gpus: int = Field(description="replicas x gpus_per_replica.")
    tp_size: int
    pp_size: int
    attn_dp_size: int
    dcp_size: int
    ep_size: int = Field(description="After SGLang's resolution (DeepEP sets it to tp_size).")
    moe_a2a_backend: str
    speculative_algorithm: str | None
    sglang_args: list[str] = Field(description="Launch flags of one replica (with --disaggregation-mode), ready to paste after `python -m sglang.launch_server --model-path ...`.")
    env: dict[str, str]
    requests_per_replica: int = Field(description="max_running_requests x attn_dp_size of one replica.")
    kv_tokens_per_replica: int = Field(description="logical_max_total_num_tokens x attn_dp_size of one replica (request tokens its KV holds).")
    targets: dict[str, TargetCheck] = Field(description=(
        "Each target of the side, over all its replicas, in what it is checked on: tokens_per_request as KV tokens "
        "(x concurrent_requests), context_length as one worker's KV tokens."))
    binding_limit: str | None
    plan: Plan | None = Field(None, description="The chosen setting only: one replica's plan, exactly as POST /v1/plan answers `plan_request`'s side.")


class SearchedSide(Out):
    searched: int = Field(description="Plans run for this side.")
    settings: int = Field(description="Settings of its grid searched.")
    refused: dict[str, int] = Field(description="Settings SGLang would refuse, by its reason (the plan's error kind, or the input field it rejects).")


class RecommendDisaggregatedResponse(Out):
    prefill: SideChoice | None = Field(description="The prefill setting and replicas with the fewest GPUs that reach its targets (null: none does).")
    decode: SideChoice | None = Field(description="The decode setting and replicas with the fewest GPUs that reach its targets (null: none does).")
    gpus: int | None = Field(description="Both sides' GPUs together.")
    pair: PairSummary | None = Field(description="What the pair sustains, as POST /v1/plan computes it for `plan_request`.")
    plan_request: dict | None = Field(description="The POST /v1/plan body of the recommended pair (both sides' launch lines and replicas).")
    alternatives: dict[str, list[SideChoice]] = Field(description="Per side, the best settings of distinct layouts, fewest GPUs first (the chosen one first; no plan).")
    searched: dict[str, SearchedSide]
    why: str
    warnings: list[str] = Field(default_factory=list)
