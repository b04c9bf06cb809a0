"""The start-up sizing rules of every SGLang release from 0.5.8 on, as data: one frozen
`SizingProfile` per accounting epoch, read by the one pipeline (plan.py, mamba.py,
requests.py, kv.py, budget.py). Nothing here computes; each field names the switch and the
releases it holds for. Source: each release's own code (`sglang/srt/model_executor/
model_runner_kv_cache_mixin.py` up to 0.5.15, `model_executor/pool_configurator.py` from
0.5.11, `mem_cache/kv_cache_configurator.py` from 0.5.16), summarised in the research note
SGLANG_RELEASES.md §3-§4 (copied into this docstring's references, not read at run time).

Launch resolution (the radix strategy, mem_fraction_static, flag names) is not here: it is
service/solver/releases/launch_rules.py's. The pipeline takes resolved values from Launch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from mambasizer.service.solver.releases.registry import (
    DEFAULT_RELEASE,
    at_least,
    base_release,
    epoch_of,
)

MambaBranches = Literal["two_way_512", "three_way"]
SpecIntermediate = Literal["upfront", "per_branch", "per_branch_padded"]
RatioRule = Literal["spec", "overlap"]
MaxNumReqsRule = Literal["pool_then_runner", "clamp_estimated", "tokens_half", "tokens_half_guarded"]
EagleCell = Literal["none", "int_scaled", "add_int"]


@dataclass(frozen=True)
class SizingProfile:
    release: str  # the base release these rules are read from
    epoch: str  # E1..E14
    # §4.2 The mamba pool size. "two_way_512" (0.5.8): `disable_radix_cache or K given` ->
    # K = explicit, else --max-running-requests, else 512; otherwise the ratio. "three_way"
    # (0.5.9+): explicit K // dp; radix off and mrr set -> mrr // dp; else the ratio.
    mamba_branches: MambaBranches
    # Where the speculative intermediate is charged: "upfront" (<= 0.5.12: P * (mrr // dp) * D
    # before the branches, uncapped); "per_branch" (0.5.13-0.5.16: capped_reqs = min(mrr //
    # dp, K // S) per branch, the ratio branch solves K jointly); "per_branch_padded" (0.5.17+:
    # the same with the padding row, (capped + 1) * D).
    spec_intermediate: SpecIntermediate
    # 0.5.17+: every PP rank charges the largest stage's share of the mamba layers; before,
    # the whole model's per-request state (the over-charge `accounting: whole-model` keeps).
    pp_scale: bool
    # 0.5.17+: the budget counts the pool's padding slot (K + 1 rows); the pool always had it.
    padding_slot: bool
    # §4.3 S: "spec" (<= 0.5.9: extra_buffer adds 1 with spec, else 2) / "overlap" (0.5.10+:
    # adds 2 with the overlap schedule, else 1).
    ratio_rule: RatioRule
    # 0.5.17+: SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK drops the base ratio to 2 (no_buffer adds 1 back).
    skip_decode_lock_env: bool
    # §4.6 max_running_requests per dp worker.
    #  pool_then_runner (<= 0.5.9): pool = mrr (raw) or the estimate from the *profiled*
    #    tokens, min K // S (and mrr // dp under spec + DP-attention); then the model runner's
    #    min(final_tokens // 2 if mrr unset else mrr // dp, pool).
    #  clamp_estimated (0.5.10-0.5.13): mrr set -> min(mrr // dp, estimated in [2048, 4096]).
    #  tokens_half (0.5.14-0.5.22): mrr set -> min(mrr // dp, tokens // 2).
    #  tokens_half_guarded (0.5.23): as tokens_half with max(1, mrr // dp).
    max_num_reqs_rule: MaxNumReqsRule
    # 0.5.13+: RuntimeError when K <= 0 or max_num_reqs <= 0 (before: a pool serving nothing).
    checks_empty_state_cache: bool
    # 0.5.17+: the "capped ... by the mamba state cache" warning.
    warns_mamba_cap: bool
    # 0.5.14+: ValueError when the rest after the mamba split is <= 0 (before: the token
    # count floors to <= 0 and "Not enough memory" is raised).
    checks_rest_after_split: bool
    # 0.5.18+: multimodal models reserve SGLANG_VLM_CACHE_SIZE_MB (+ the feature pool) first.
    multimodal_reservation: bool
    # 0.5.17+: a PP stage with no full-attention layer gets int64-max tokens (<= 0.5.16
    # divides by its zero cell: ZeroDivisionError).
    zero_cell_stage: bool
    # EAGLE / STANDALONE draft KV in the cell: "none" (<= 0.5.13), "int_scaled" (0.5.14-
    # 0.5.21: int(cell * (1 + d / n))), "add_int" (0.5.22+: cell + int(cell * d / n)).
    eagle_cell: EagleCell
    # 0.5.14-0.5.19 price the draft only when --speculative-draft-model-path is set.
    eagle_cell_needs_draft_path: bool
    # 0.5.20+: the GDN ReplaySSM ring is a fixed request-lifetime charge; the pipeline sizes
    # --enable-linear-replayssm-spec only from 0.5.20 on (0.5.17-0.5.19 had a per-slot ring
    # of another formula, 0.5.16 none in the budget).
    replayssm_sized: bool
    # 0.5.23: max(1, mrr // dp) guards in the split (from-mrr branch, capped_reqs, replay slots).
    guards_min_one: bool
    # Model classes the release can load through its mamba path (§4.8, from each release's
    # `sglang/srt/models`): architectures[0] outside it is refused with the release named.
    architectures: frozenset[str]


# First release of each model class the pipeline sizes (grep of `class X(` in srt/models).
_ARCH_FIRST: dict[str, str] = {
    "Qwen3NextForCausalLM": "0.5.8", "KimiLinearForCausalLM": "0.5.8", "NemotronHForCausalLM": "0.5.8",
    "NemotronH_Nano_VL_V2": "0.5.8", "FalconH1ForCausalLM": "0.5.8",
    "Qwen3_5ForConditionalGeneration": "0.5.9", "Qwen3_5MoeForConditionalGeneration": "0.5.9",
    "Qwen3_5ForCausalLM": "0.5.9", "Qwen3_5MoeForCausalLM": "0.5.9",
    "GraniteMoeHybridForCausalLM": "0.5.9", "Lfm2ForCausalLM": "0.5.9", "Lfm2MoeForCausalLM": "0.5.9",
    "Lfm2VlForConditionalGeneration": "0.5.10",
    "KimiK3ForConditionalGeneration": "0.5.17",
}


def architecture_first_release(arch: str) -> str | None:
    return _ARCH_FIRST.get(arch)


_LATEST = SizingProfile(
    release="0.5.23", epoch="E14", mamba_branches="three_way", spec_intermediate="per_branch_padded",
    pp_scale=True, padding_slot=True, ratio_rule="overlap", skip_decode_lock_env=True,
    max_num_reqs_rule="tokens_half_guarded", checks_empty_state_cache=True, checks_rest_after_split=True, warns_mamba_cap=True,
    multimodal_reservation=True, zero_cell_stage=True, eagle_cell="add_int", eagle_cell_needs_draft_path=False,
    replayssm_sized=True, guards_min_one=True, architectures=frozenset(_ARCH_FIRST),
)


@cache
def sizing_profile(version: str = DEFAULT_RELEASE) -> SizingProfile:
    """The sizing rules of `version` (a release or post-release; raises ValueError otherwise)."""
    v = base_release(version)

    def since(first: str) -> bool:
        return at_least(v, first)

    if since("0.5.23"):
        rule: MaxNumReqsRule = "tokens_half_guarded"
    elif since("0.5.14"):
        rule = "tokens_half"
    elif since("0.5.10"):
        rule = "clamp_estimated"
    else:
        rule = "pool_then_runner"
    spec: SpecIntermediate = "per_branch_padded" if since("0.5.17") else ("per_branch" if since("0.5.13") else "upfront")
    eagle: EagleCell = "add_int" if since("0.5.22") else ("int_scaled" if since("0.5.14") else "none")
    return replace(
        _LATEST,
        release=v, epoch=epoch_of(v),
        mamba_branches="three_way" if since("0.5.9") else "two_way_512",
        spec_intermediate=spec,
        pp_scale=since("0.5.17"), padding_slot=since("0.5.17"),
        ratio_rule="overlap" if since("0.5.10") else "spec",
        skip_decode_lock_env=since("0.5.17"),
        max_num_reqs_rule=rule,
        checks_empty_state_cache=since("0.5.13"), checks_rest_after_split=since("0.5.14"), warns_mamba_cap=since("0.5.17"),
        multimodal_reservation=since("0.5.18"), zero_cell_stage=since("0.5.17"),
        eagle_cell=eagle, eagle_cell_needs_draft_path=since("0.5.14") and not since("0.5.20"),
        replayssm_sized=since("0.5.20"), guards_min_one=since("0.5.23"),
        architectures=frozenset(a for a, first in _ARCH_FIRST.items() if since(first)),
    )


def reference_of(version: str) -> str:
    """The plan's `reference`: the release whose rules were applied ('sglang==0.5.15.post1')."""
    base_release(version)  # validates
    return f"sglang=={version}"


def release_label(reference: str) -> str:
    """What every text names a plan's release by: its `reference` 'sglang==0.5.18' -> 'SGLang 0.5.18'."""
    return "SGLang " + reference.removeprefix("sglang==")


def accounting_label(accounting: str, reference: str) -> str:
    """A plan's accounting as its header names it: the request's default ("sglang-0.5.23",
    the enum value kept for the wire) is the planned release's own accounting, named as that
    release ('sglang-0.5.18'; what /v1/plan/compare calls it in release mode); "whole-model"
    stays as it is."""
    if accounting == "whole-model":
        return accounting
    return "sglang-" + reference.removeprefix("sglang==")
