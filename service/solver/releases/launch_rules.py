"""Launch-flag resolution rules that differ between SGLang releases, as data read by
service/solver/launch.py (one resolver; these tables say where each release departs from
0.5.23). Every entry names the release that introduced it ("from X on") and where the
rule lives in that release's code. Keys are base releases (post-releases resolve as their
base); `at_least(release, X)` reads "release X or later".

Sources: each release's wheel (`~/.cache/mambasizer/sglang-src/<v>/sglang/srt`):
server_args.py (<=0.5.18: `_handle_gpu_memory_settings`, `_handle_piecewise_cuda_graph`,
`_handle_mamba_radix_cache`, `_support_mamba_cache_extra_buffer`), arg_groups/overrides.py
(`_MAMBA_EXTRA_BUFFER_ARCHS`, 0.5.15+), arg_groups/memory_hook.py (0.5.19+),
configs/model_config.py (`piecewise_cuda_graph_disabled_model_archs`, 0.5.10-0.5.14).
Tested against the releases' own resolution by tests/conformance/test_release_launch.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from mambasizer.service.solver.releases.registry import (
    DEFAULT_RELEASE,
    at_least,
    base_release,
    release_key,
)

# ----------------------------------------------------------------------- radix strategy

# `auto` resolves to extra_buffer / no_buffer by overlap, paging and the arch list from
# 0.5.14 on; before, `auto` is always no_buffer (server_args.__post_init__).
AUTO_STRATEGY_RESOLVES_FROM = "0.5.14"

# Architectures whose model supports extra_buffer, by the release that added them
# (0.5.14: `_support_mamba_cache_extra_buffer`; 0.5.15+: overrides._MAMBA_EXTRA_BUFFER_ARCHS).
# <=0.5.13 asserts per model class in `_handle_mamba_radix_cache`; 0.5.14's list stands for it.
EXTRA_BUFFER_ARCHS_ADDED: tuple[tuple[str, frozenset[str]], ...] = (
    ("0.5.8", frozenset({
        "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3NextForCausalLM",
        "InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration", "BailingMoeV2_5ForCausalLM",
        "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    })),
    ("0.5.16", frozenset({"KimiLinearForCausalLM"})),
    ("0.5.17", frozenset({"KimiK3ForConditionalGeneration"})),
    ("0.5.19", frozenset({"BailingMoeV3ForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"})),
    ("0.5.20", frozenset({"Glm5NextForConditionalGeneration", "NemotronH_Omni_Reasoning_V3", "Qwen4ExpForConditionalGeneration"})),
    ("0.5.21", frozenset({
        "BailingMoeV3VLForConditionalGeneration", "InklingForConditionalGeneration", "InklingForConditionalGenerationMTP",
    })),
    ("0.5.23", frozenset({"MiniCPMV4_7ForConditionalGeneration"})),
)

# GraniteMoeHybrid goes through the mamba radix-cache resolution from 0.5.19
# (arg_groups/model_overrides/granitemoehybrid.py); before, its strategy stays as given.
GRANITE_RADIX_BRANCH_FROM = "0.5.19"

# <=0.5.13's no_buffer: a page size above 1 is set to 1 (a warning, not an assertion);
# overlap is turned off only without speculative decoding; speculative decoding with the
# radix cache on raises ValueError (0.5.14 made both assertions).
LEGACY_NO_BUFFER_SPEC_ERROR = (
    "Speculative decoding for {arch} is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer."
    "To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
)

# ----------------------------------------------------------------------- mem_fraction_static

# Added after the 10 GB floor while speculative decoding is on (MB), until 0.5.14 removed it:
# (first release, STANDALONE, other non-NGRAM algorithms).
SPEC_RESERVE_MB: tuple[tuple[str, int, int], ...] = (("0.5.8", 6 * 1024, 2 * 1024), ("0.5.10", 6 * 1024, 4 * 1024), ("0.5.14", 0, 0))
# mem_fraction_static when the GPU capacity is unknown.
FALLBACK_MEM_FRACTION: tuple[tuple[str, float], ...] = (("0.5.8", 0.88), ("0.5.20", 0.95))
# The decode-graph term counts only while the decode graph is on from 0.5.15 (before:
# always `max_bs * 2`).
DECODE_TERM_NEEDS_GRAPH_FROM = "0.5.15"
# A defaulted decode-graph max_bs is clamped to --max-running-requests from 0.5.22 (E13).
DECODE_MAX_BS_FOLLOWS_MRR_FROM = "0.5.22"
# (chunked_prefill_size, decode max_bs tp<4, tp>=4) for GPUs of 20-35 GB; 0.5.20 raised them.
SMALL_GPU_DEFAULTS: tuple[tuple[str, tuple[int, int, int]], ...] = (("0.5.8", (2048, 24, 80)), ("0.5.20", (4096, 48, 160)))

# ----------------------------------------------------------------------- prefill CUDA graph

# Which prefill graph a release has by default:
#   "opt-in": <=0.5.9, piecewise (PCG) only with --enable-piecewise-cuda-graph (not modelled);
#   "piecewise": 0.5.10-0.5.14, PCG on unless a rule of `_handle_piecewise_cuda_graph` fires;
#   "breakable": 0.5.15+, BCG (`cuda_graph_hook`).
PREFILL_GRAPH_ERAS: tuple[tuple[str, str], ...] = (("0.5.8", "opt-in"), ("0.5.10", "piecewise"), ("0.5.15", "breakable"))
# `piecewise_cuda_graph_disabled_model_archs` (0.5.10-0.5.14) for the hybrid archs.
PIECEWISE_DISABLED_ARCHS = frozenset({"Qwen3NextForCausalLM", "BailingMoeV2_5ForCausalLM"})
# 0.5.10-0.5.13: --disable-cuda-graph leaves PCG on (only --disable-piecewise-cuda-graph
# turns it off); 0.5.14's cuda_graph_config turns both off.
PIECEWISE_IGNORES_DISABLE_CUDA_GRAPH_UNTIL = "0.5.13"
# 0.5.10 only: speculative decoding turns PCG off (rule 2, removed in 0.5.11).
PIECEWISE_OFF_WITH_SPEC_UNTIL = "0.5.10"
# The breakable graph's family rules (research note §4.7): MLA attention off in
# 0.5.15-0.5.17 and on from 0.5.18 until 0.5.20's KDA rule; Nemotron-H off in 0.5.17 only;
# DP attention off in 0.5.15-0.5.16; PP > 1 off from 0.5.19; multimodal archs off unless
# allow-listed, Qwen3.5 allow-listed from 0.5.16.
BREAKABLE_MLA_OFF_UNTIL = "0.5.17"
BREAKABLE_KDA_OFF_FROM = "0.5.20"
BREAKABLE_NEMOTRON_H_OFF = ("0.5.17",)
BREAKABLE_DP_OFF_UNTIL = "0.5.16"
BREAKABLE_PP_OFF_FROM = "0.5.19"
QWEN3_5_MULTIMODAL_ALLOWED_FROM = "0.5.16"
QWEN3_5_MULTIMODAL_ARCHS = frozenset({"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})
# The capture list gains 576 at 0.5.9 (matters only with the opt-in PCG of 0.5.9).
PREFILL_LIST_HAS_576_FROM = "0.5.9"
# The prefill graph's max tokens is capped by --context-length in 0.5.13-0.5.16.
PREFILL_MAX_CAPPED_BY_CONTEXT = ("0.5.13", "0.5.16")

# ----------------------------------------------------------------------- start-up checks

# Up to 0.5.20, PP > 1 refuses every speculative algorithm on CUDA (validation_hook /
# check_server_args); 0.5.21 narrowed it to the EAGLE-only / prefill-node rules of 0.5.23.
PP_REFUSES_SPECULATIVE_UNTIL = "0.5.20"
PP_SPECULATIVE_REFUSAL = "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"
# <=0.5.10's check also names mixed chunked prefill (`--enable-mixed-chunk`, in the same assert).
PP_REFUSAL_NAMES_MIXED_CHUNK_UNTIL = "0.5.10"


def pp_speculative_refusal(release: str) -> str:
    return launch_profile(release).pp_speculative_refusal

# ----------------------------------------------------------------------- SSM dtype

# 0.5.8: --mamba-ssm-dtype defaults to "float32" and is always exported; the HF config's
# mamba_ssm_dtype is ignored (0.5.9: default None, read from the config).
SSM_DTYPE_FLAG_DEFAULT_UNTIL = "0.5.8"


def _last(table, release: str):
    value = table[0][1:]
    for entry in table:
        if at_least(release, entry[0]):
            value = entry[1:]
    return value if len(value) > 1 else value[0]


def extra_buffer_archs(release: str) -> frozenset[str]:
    return launch_profile(release).extra_buffer_archs


def auto_strategy_resolves(release: str) -> bool:
    return launch_profile(release).auto_strategy_resolves


def spec_reserve_mb(release: str, algorithm: str | None) -> int:
    return launch_profile(release).spec_reserve_mb(algorithm)


def fallback_mem_fraction(release: str) -> float:
    return launch_profile(release).fallback_mem_fraction


def decode_term_needs_graph(release: str) -> bool:
    return launch_profile(release).decode_term_needs_graph


def decode_max_bs_follows_mrr(release: str) -> bool:
    return launch_profile(release).decode_max_bs_follows_mrr


def small_gpu_defaults(release: str) -> tuple[int, int, int]:
    return launch_profile(release).small_gpu_defaults


def prefill_graph_era(release: str) -> str:
    return launch_profile(release).prefill_graph_era


def granite_in_radix_branch(release: str) -> bool:
    return launch_profile(release).granite_in_radix_branch


def piecewise_ignores_disable_cuda_graph(release: str) -> bool:
    return launch_profile(release).piecewise_ignores_disable_cuda_graph


def prefill_list_has_576(release: str) -> bool:
    return launch_profile(release).prefill_list_has_576


def prefill_max_capped_by_context(release: str) -> bool:
    return launch_profile(release).prefill_max_capped_by_context


def pp_refuses_speculative(release: str) -> bool:
    return launch_profile(release).pp_refuses_speculative


def ssm_dtype_flag_default(release: str) -> str | None:
    return launch_profile(release).ssm_dtype_flag_default


def _until(release: str, last: str) -> bool:
    """True when `release` is `last` or earlier."""
    return release_key(release) <= release_key(last)


def prefill_graph_on(
    release: str, *, arch: str, family: str, mla: bool, kda: bool, multimodal: bool, multimodal_allowed: bool,
    speculative: bool, attn_dp: int, pp: int,
) -> bool | None:
    """Whether `release` captures a prefill CUDA graph for this model and these flags, the
    user's disable flags aside. None: 0.5.23's own rule applies (`multimodal_allowed` is
    0.5.23's allow-list; KDA, PP and multimodal rules)."""
    return launch_profile(release).prefill_graph_on(
        arch=arch, family=family, mla=mla, kda=kda, multimodal=multimodal, multimodal_allowed=multimodal_allowed,
        speculative=speculative, attn_dp=attn_dp, pp=pp,
    )


# ----------------------------------------------------------------------- <=0.5.13 radix cache

# Up to 0.5.13 the radix strategy is handled per model class (server_args
# `_handle_model_specific_adjustments` -> `_handle_mamba_radix_cache(support_mamba_cache=,
# support_mamba_cache_extra_buffer=)`; 0.5.8 inline, with no helper): `auto` is already
# no_buffer, and the per-class flags below decide the rest (`legacy_radix`).
LEGACY_RADIX_UNTIL = "0.5.13"
# The classes that reach the handler, by the release that routed them there. 0.5.8 routes
# only Nemotron-H, Falcon-H1 / Jet and Kimi-Linear (its Qwen3-Next checks sit under the
# Glm4Moe branch, so Qwen3-Next never reaches them). The text-only Qwen3.5 classes come in
# 0.5.19 (`RADIX_ARCHS_FROM_0_5_19`); GraniteMoeHybrid as `granite_in_radix_branch` says.
LEGACY_RADIX_ARCHS_ADDED: tuple[tuple[str, frozenset[str]], ...] = (
    ("0.5.8", frozenset({
        "NemotronHForCausalLM", "FalconH1ForCausalLM", "JetNemotronForCausalLM", "JetVLMForConditionalGeneration",
        "KimiLinearForCausalLM",
    })),
    ("0.5.9", frozenset({
        "Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
        "BailingMoeV2_5ForCausalLM", "Lfm2ForCausalLM",
    })),
    ("0.5.12", frozenset({"InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration"})),
    ("0.5.13", frozenset({"NemotronHPuzzleForCausalLM"})),
)
# `support_mamba_cache=False`: the handler switches the radix cache off and returns.
LEGACY_RADIX_OFF: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("0.5.8", "0.5.13", frozenset({"KimiLinearForCausalLM"})),
    ("0.5.9", "0.5.12", frozenset({"BailingMoeV2_5ForCausalLM"})),
)
# `support_mamba_cache_extra_buffer=True`, by the release that turned it on.
LEGACY_EXTRA_BUFFER_ARCHS_ADDED: tuple[tuple[str, frozenset[str]], ...] = (
    ("0.5.9", frozenset({"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})),
    ("0.5.12", frozenset({"InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration"})),
    ("0.5.13", frozenset({
        "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "FalconH1ForCausalLM", "JetNemotronForCausalLM",
        "JetVLMForConditionalGeneration", "BailingMoeV2_5ForCausalLM",
    })),
)
# Added to the radix branch (and the extra-buffer list) in 0.5.19: before, these classes keep
# the strategy as given (0.5.14-0.5.18: `auto` stays `auto`).
RADIX_ARCHS_FROM_0_5_19 = frozenset({"Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM", "BailingMoeV3ForCausalLM"})
# extra_buffer with --disable-radix-cache raises from 0.5.10 (0.5.13 adds the full stop).
LEGACY_EXTRA_BUFFER_NO_RADIX_FROM = "0.5.10"
LEGACY_EXTRA_BUFFER_NO_RADIX_ERROR = (
    "mamba extra_buffer is not compatible with --disable-radix-cache{stop} "
    "Overlap scheduling is already supported with no_buffer + disable_radix_cache. "
    "Please use --mamba-scheduler-strategy no_buffer instead."
)
# 0.5.13: extra_buffer_lazy refuses speculative decoding (the strategy choice arrived then).
LEGACY_LAZY_SPEC_ERROR = "extra_buffer_lazy is not yet supported with speculative decoding. Use --mamba-scheduler-strategy extra_buffer instead."
# no_buffer with speculative decoding: <=0.5.9 switches the radix cache off; 0.5.10 raises.
LEGACY_SPEC_NO_BUFFER_RAISES_FROM = "0.5.10"
# no_buffer sets a page size above 1 to 1 from 0.5.11 (0.5.10 and before keep it).
LEGACY_NO_BUFFER_PAGE_ONE_FROM = "0.5.11"
# The extra-buffer chunk check: <=0.5.12 against FLA's 64 only, with this wording; 0.5.13-0.5.14
# against the model's chunk size, naming `self.page_size`; 0.5.15+ `page_size`.
LEGACY_FLA_CHUNK_UNTIL = "0.5.12"
LEGACY_FLA_CHUNK = 64
CHUNK_MESSAGE_NAMES_SELF_UNTIL = "0.5.14"

# Nemotron-H asserts a non-triton attention backend until 0.5.18 (its model override, after
# the radix handling); the assertion is gone from 0.5.19's model-override declarations.
NEMOTRON_H_REFUSES_TRITON_UNTIL = "0.5.18"
# 0.5.15-0.5.18 assert it in server_args before the radix handling (moved to overrides.py);
# 0.5.8-0.5.14 after it.
NEMOTRON_H_TRITON_BEFORE_RADIX_FROM = "0.5.15"
NEMOTRON_H_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"})
NEMOTRON_H_TRITON_ERROR = "NemotronHForCausalLM does not support triton attention backend,as the first layer might not be an attention layer"

# 0.5.8's Falcon-H1 / Jet branch turns overlap off with the radix cache on, speculative or not.
SPEC_KEEPS_RADIX_0_5_8 = frozenset({"FalconH1ForCausalLM", "JetNemotronForCausalLM", "JetVLMForConditionalGeneration"})

# EAGLE / EAGLE3 / STANDALONE and the overlap schedule: <=0.5.10 runs spec v1 (the
# SGLANG_ENABLE_SPEC_V2 default is off), which turns overlap off; 0.5.11-0.5.12 (spec v2 on by
# default) turn it off only for --speculative-eagle-topk > 1; 0.5.13 keeps it.
SPEC_V1_OVERLAP_OFF_UNTIL = "0.5.10"
SPEC_V2_TREE_OVERLAP_OFF_UNTIL = "0.5.12"


def eagle_disables_overlap(release: str, topk: int | None) -> bool:
    return launch_profile(release).eagle_disables_overlap(topk)


# NGRAM: <=0.5.13 turns the overlap schedule off and leaves --speculative-num-steps unset;
# 0.5.14 keeps overlap and derives the steps from the draft tokens.
NGRAM_DISABLES_OVERLAP_UNTIL = "0.5.13"


def _added(table, release: str) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for first, archs in table:
        if at_least(release, first):
            out = out | archs
    return out


def legacy_radix_era(release: str) -> bool:
    return launch_profile(release).legacy_radix_era


def radix_arch_before_0_5_19(release: str, arch: str) -> bool:
    """False for the classes that join the radix branch only in 0.5.19."""
    return launch_profile(release).radix_arch_before_0_5_19(arch)


def nemotron_h_refuses_triton(release: str, arch: str, backend: str | None) -> bool:
    return launch_profile(release).refuses_triton_for(arch, backend)


# LFM2's triton refusal follows its radix handling up to 0.5.14 (server_args), precedes it
# from 0.5.15 (the radix resolution moved to overrides.py, after the model checks).
LFM2_TRITON_AFTER_RADIX_UNTIL = "0.5.14"


def lfm2_triton_after_radix(release: str) -> bool:
    return launch_profile(release).lfm2_triton_after_radix


def nemotron_h_triton_before_radix(release: str) -> bool:
    return launch_profile(release).nemotron_h_triton_before_radix


# --enable-linear-replayssm with a (resolved) extra buffer: 0.5.15's refusal names the
# pre-0.5.14 attribute `mamba_scheduler_strategy` and so raises AttributeError instead;
# 0.5.16-0.5.18 print the strategy as given (`auto` when defaulted), 0.5.19+ as resolved.
REPLAYSSM_ATTRIBUTE_ERROR_IN = ("0.5.15",)
REPLAYSSM_NAMES_GIVEN_STRATEGY_UNTIL = "0.5.18"


def replayssm_extra_buffer_refusal(release: str, given: str, resolved: str) -> tuple[str, str]:
    if release in REPLAYSSM_ATTRIBUTE_ERROR_IN:
        return "AttributeError", "'ServerArgs' object has no attribute 'mamba_scheduler_strategy'"
    shown = given if _until(release, REPLAYSSM_NAMES_GIVEN_STRATEGY_UNTIL) else resolved
    return "ValueError", (
        "--enable-linear-replayssm requires --mamba-radix-cache-strategy no_buffer (the default); the extra_buffer ping-pong "
        f"donation path is not yet supported (follow-up). Got --mamba-radix-cache-strategy={shown!r}."
    )


def ngram_disables_overlap(release: str) -> bool:
    return launch_profile(release).ngram_disables_overlap


def chunk_page_message(release: str, chunk: int, page: int) -> str:
    if _until(release, LEGACY_FLA_CHUNK_UNTIL):
        return ("For SSM models with extra buffer, either FLA_CHUNK_SIZE or page_size must be divisible by the other, "
                f"got FLA_CHUNK_SIZE={chunk}, self.page_size={page}")
    name = "self.page_size" if _until(release, CHUNK_MESSAGE_NAMES_SELF_UNTIL) else "page_size"
    return f"For SSM models, either chunk_size or page_size must be divisible by the other, got chunk_size={chunk}, {name}={page}"


class LegacyRadix(NamedTuple):
    page: int | None
    disable_overlap: bool
    disable_radix: bool
    rejection: tuple[str, str] | None


def legacy_radix(
    release: str, *, arch: str, strategy: str, page: int | None, disable_overlap: bool, disable_radix: bool,
    speculative: bool, num_draft: int | None, track_interval: int, chunk: int,
) -> LegacyRadix:
    """<=0.5.13's radix-cache handling of one model class (`strategy`: `auto` already
    no_buffer). Returns the page size, overlap and radix switches it leaves, and its first
    refusal as (exception class, message)."""
    def out(rejection=None):
        return LegacyRadix(page, disable_overlap, disable_radix, rejection)

    if arch not in _added(LEGACY_RADIX_ARCHS_ADDED, release):
        return out()
    if any(at_least(release, first) and _until(release, last) and arch in archs for first, last, archs in LEGACY_RADIX_OFF):
        disable_radix = True
        return out()
    extra = strategy in ("extra_buffer", "extra_buffer_lazy")
    if extra and arch not in _added(LEGACY_EXTRA_BUFFER_ARCHS_ADDED, release):
        return out(("AssertionError", f"mamba extra_buffer is not supported for {arch} model"))
    if extra:
        if disable_radix and at_least(release, LEGACY_EXTRA_BUFFER_NO_RADIX_FROM):
            stop = "." if at_least(release, "0.5.13") else ""
            return out(("ValueError", LEGACY_EXTRA_BUFFER_NO_RADIX_ERROR.format(stop=stop)))
        if num_draft is not None:
            if strategy == "extra_buffer_lazy":
                return out(("AssertionError", LEGACY_LAZY_SPEC_ERROR))
            if track_interval < num_draft:
                return out(("AssertionError", f"mamba_track_interval {track_interval} must be greater than or equal to speculative_num_draft_tokens {num_draft}"))
        if page is not None:
            if track_interval % page != 0:
                return out(("AssertionError", f"mamba_track_interval {track_interval} must be divisible by page_size {page}"))
            if _until(release, LEGACY_FLA_CHUNK_UNTIL):
                chunk = LEGACY_FLA_CHUNK
            if max(chunk, page) % min(chunk, page) != 0:
                return out(("AssertionError", chunk_page_message(release, chunk, page)))
        return out()
    if disable_radix:
        return out()
    if page not in (None, 1) and at_least(release, LEGACY_NO_BUFFER_PAGE_ONE_FROM):
        page = 1
    if not speculative or (_until(release, "0.5.8") and arch in SPEC_KEEPS_RADIX_0_5_8):
        disable_overlap = True
    elif at_least(release, LEGACY_SPEC_NO_BUFFER_RAISES_FROM):
        return out(("ValueError", LEGACY_NO_BUFFER_SPEC_ERROR.format(arch=arch)))
    else:
        disable_radix = True
    return out()


# ----------------------------------------------------------------------- per-release profile


@dataclass(frozen=True, slots=True)
class LaunchProfile:
    """Every launch rule above, read for one release: built once per release string by
    `launch_profile` (the tables are constants, so the answer never changes), so resolving a
    launch reads attributes instead of comparing version strings rule by rule."""

    release: str  # the base release
    is_default: bool  # the release the solver's own 0.5.23 tables describe
    extra_buffer_archs: frozenset[str]
    auto_strategy_resolves: bool
    spec_reserve_mb_by_kind: tuple[int, int]  # (STANDALONE, other non-NGRAM algorithms)
    fallback_mem_fraction: float
    decode_term_needs_graph: bool
    decode_max_bs_follows_mrr: bool
    small_gpu_defaults: tuple[int, int, int]
    prefill_graph_era: str
    granite_in_radix_branch: bool
    piecewise_ignores_disable_cuda_graph: bool
    prefill_list_has_576: bool
    prefill_max_capped_by_context: bool
    pp_refuses_speculative: bool
    pp_speculative_refusal: str
    ssm_dtype_flag_default: str | None
    legacy_radix_era: bool
    radix_archs_joined: bool  # the 0.5.19 classes are in the radix branch
    nemotron_h_refuses_triton: bool  # for a Nemotron-H class with --attention-backend triton
    nemotron_h_triton_before_radix: bool
    lfm2_triton_after_radix: bool
    ngram_disables_overlap: bool
    spec_v1_overlap_off: bool
    spec_v2_tree_overlap_off: bool
    checks_quant_recipe: bool  # 0.5.19+: the Nemotron-H override reads the quant recipe
    # prefill_graph_on's release terms
    prefill_follows_default: bool
    piecewise_off_with_spec: bool
    breakable_mla_off: bool
    breakable_nemotron_h_off: bool
    breakable_dp_off: bool
    breakable_pp_off: bool
    qwen3_5_multimodal_allowed: bool

    def spec_reserve_mb(self, algorithm: str | None) -> int:
        if algorithm is None or algorithm == "NGRAM":
            return 0
        standalone, other = self.spec_reserve_mb_by_kind
        return standalone if algorithm == "STANDALONE" else other

    def eagle_disables_overlap(self, topk: int | None) -> bool:
        if self.spec_v1_overlap_off:
            return True
        return self.spec_v2_tree_overlap_off and topk is not None and topk > 1

    def radix_arch_before_0_5_19(self, arch: str) -> bool:
        return self.radix_archs_joined or arch not in RADIX_ARCHS_FROM_0_5_19

    def refuses_triton_for(self, arch: str, backend: str | None) -> bool:
        return self.nemotron_h_refuses_triton and backend == "triton" and arch in NEMOTRON_H_ARCHS

    def prefill_graph_on(
        self, *, arch: str, family: str, mla: bool, kda: bool, multimodal: bool, multimodal_allowed: bool,
        speculative: bool, attn_dp: int, pp: int,
    ) -> bool | None:
        """See the module-level `prefill_graph_on`."""
        era = self.prefill_graph_era
        if era == "opt-in":
            return False
        if era == "piecewise":
            if arch in PIECEWISE_DISABLED_ARCHS or attn_dp > 1 or pp > 1 or multimodal:
                return False
            return not (speculative and self.piecewise_off_with_spec)
        if self.prefill_follows_default:
            return None
        # breakable, 0.5.15-0.5.19
        if mla and self.breakable_mla_off:
            return False
        if family == "nemotron_h" and self.breakable_nemotron_h_off:
            return False
        if attn_dp > 1 and self.breakable_dp_off:
            return False
        if pp > 1 and self.breakable_pp_off:
            return False
        if multimodal:
            if arch in QWEN3_5_MULTIMODAL_ARCHS:
                return self.qwen3_5_multimodal_allowed
            return multimodal_allowed
        return True


@cache
def launch_profile(release: str = DEFAULT_RELEASE) -> LaunchProfile:
    """The launch rules of `release` (a release or post-release; ValueError otherwise), read
    from the tables once per release string. Bounded: only SUPPORTED_RELEASES get here (an
    unsupported string raises, and functools.cache keeps no exception)."""
    r = base_release(release)
    return LaunchProfile(
        release=r,
        is_default=r == DEFAULT_RELEASE,
        extra_buffer_archs=_added(EXTRA_BUFFER_ARCHS_ADDED, r),
        auto_strategy_resolves=at_least(r, AUTO_STRATEGY_RESOLVES_FROM),
        spec_reserve_mb_by_kind=_last(SPEC_RESERVE_MB, r),
        fallback_mem_fraction=_last(FALLBACK_MEM_FRACTION, r),
        decode_term_needs_graph=at_least(r, DECODE_TERM_NEEDS_GRAPH_FROM),
        decode_max_bs_follows_mrr=at_least(r, DECODE_MAX_BS_FOLLOWS_MRR_FROM),
        small_gpu_defaults=_last(SMALL_GPU_DEFAULTS, r),
        prefill_graph_era=_last(PREFILL_GRAPH_ERAS, r),
        granite_in_radix_branch=at_least(r, GRANITE_RADIX_BRANCH_FROM),
        piecewise_ignores_disable_cuda_graph=(
            _last(PREFILL_GRAPH_ERAS, r) == "piecewise" and _until(r, PIECEWISE_IGNORES_DISABLE_CUDA_GRAPH_UNTIL)
        ),
        prefill_list_has_576=at_least(r, PREFILL_LIST_HAS_576_FROM),
        prefill_max_capped_by_context=(
            at_least(r, PREFILL_MAX_CAPPED_BY_CONTEXT[0]) and _until(r, PREFILL_MAX_CAPPED_BY_CONTEXT[1])
        ),
        pp_refuses_speculative=_until(r, PP_REFUSES_SPECULATIVE_UNTIL),
        pp_speculative_refusal=(
            PP_SPECULATIVE_REFUSAL + ", mixed chunked prefill."
            if _until(r, PP_REFUSAL_NAMES_MIXED_CHUNK_UNTIL) else PP_SPECULATIVE_REFUSAL
        ),
        ssm_dtype_flag_default="float32" if _until(r, SSM_DTYPE_FLAG_DEFAULT_UNTIL) else None,
        legacy_radix_era=_until(r, LEGACY_RADIX_UNTIL),
        radix_archs_joined=at_least(r, "0.5.19"),
        nemotron_h_refuses_triton=_until(r, NEMOTRON_H_REFUSES_TRITON_UNTIL),
        nemotron_h_triton_before_radix=at_least(r, NEMOTRON_H_TRITON_BEFORE_RADIX_FROM),
        lfm2_triton_after_radix=_until(r, LFM2_TRITON_AFTER_RADIX_UNTIL),
        ngram_disables_overlap=_until(r, NGRAM_DISABLES_OVERLAP_UNTIL),
        spec_v1_overlap_off=_until(r, SPEC_V1_OVERLAP_OFF_UNTIL),
        spec_v2_tree_overlap_off=_until(r, SPEC_V2_TREE_OVERLAP_OFF_UNTIL),
        checks_quant_recipe=at_least(r, "0.5.19"),
        prefill_follows_default=at_least(r, "0.5.20"),
        piecewise_off_with_spec=_until(r, PIECEWISE_OFF_WITH_SPEC_UNTIL),
        breakable_mla_off=_until(r, BREAKABLE_MLA_OFF_UNTIL),
        breakable_nemotron_h_off=r in BREAKABLE_NEMOTRON_H_OFF,
        breakable_dp_off=_until(r, BREAKABLE_DP_OFF_UNTIL),
        breakable_pp_off=at_least(r, BREAKABLE_PP_OFF_FROM),
        qwen3_5_multimodal_allowed=at_least(r, QWEN3_5_MULTIMODAL_ALLOWED_FROM),
    )
