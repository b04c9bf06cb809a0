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

from mambasizer.service.solver.releases.registry import at_least, release_key

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

# <=0.5.13: Kimi-Linear's radix cache is switched off (`support_mamba_cache=False`).
RADIX_FORCED_OFF_UNTIL = "0.5.13"
RADIX_FORCED_OFF_ARCHS = frozenset({"KimiLinearForCausalLM"})

# <=0.5.13's no_buffer: a page size above 1 is set to 1 (a warning, not an assertion);
# overlap is turned off only without speculative decoding; speculative decoding with the
# radix cache on raises ValueError (0.5.14 made both assertions).
LEGACY_NO_BUFFER_UNTIL = "0.5.13"
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
    out: frozenset[str] = frozenset()
    for first, archs in EXTRA_BUFFER_ARCHS_ADDED:
        if at_least(release, first):
            out = out | archs
    return out


def auto_strategy_resolves(release: str) -> bool:
    return at_least(release, AUTO_STRATEGY_RESOLVES_FROM)


def radix_forced_off(release: str, arch: str) -> bool:
    return _until(release, RADIX_FORCED_OFF_UNTIL) and arch in RADIX_FORCED_OFF_ARCHS


def legacy_no_buffer(release: str) -> bool:
    return _until(release, LEGACY_NO_BUFFER_UNTIL)


def spec_reserve_mb(release: str, algorithm: str | None) -> int:
    if algorithm is None or algorithm == "NGRAM":
        return 0
    standalone, other = _last(SPEC_RESERVE_MB, release)
    return standalone if algorithm == "STANDALONE" else other


def fallback_mem_fraction(release: str) -> float:
    return _last(FALLBACK_MEM_FRACTION, release)


def decode_term_needs_graph(release: str) -> bool:
    return at_least(release, DECODE_TERM_NEEDS_GRAPH_FROM)


def decode_max_bs_follows_mrr(release: str) -> bool:
    return at_least(release, DECODE_MAX_BS_FOLLOWS_MRR_FROM)


def small_gpu_defaults(release: str) -> tuple[int, int, int]:
    return _last(SMALL_GPU_DEFAULTS, release)


def prefill_graph_era(release: str) -> str:
    return _last(PREFILL_GRAPH_ERAS, release)


def granite_in_radix_branch(release: str) -> bool:
    return at_least(release, GRANITE_RADIX_BRANCH_FROM)


def piecewise_ignores_disable_cuda_graph(release: str) -> bool:
    return prefill_graph_era(release) == "piecewise" and _until(release, PIECEWISE_IGNORES_DISABLE_CUDA_GRAPH_UNTIL)


def prefill_list_has_576(release: str) -> bool:
    return at_least(release, PREFILL_LIST_HAS_576_FROM)


def prefill_max_capped_by_context(release: str) -> bool:
    first, last = PREFILL_MAX_CAPPED_BY_CONTEXT
    return at_least(release, first) and _until(release, last)


def pp_refuses_speculative(release: str) -> bool:
    return _until(release, PP_REFUSES_SPECULATIVE_UNTIL)


def ssm_dtype_flag_default(release: str) -> str | None:
    return "float32" if _until(release, SSM_DTYPE_FLAG_DEFAULT_UNTIL) else None


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
    era = prefill_graph_era(release)
    if era == "opt-in":
        return False
    if era == "piecewise":
        if arch in PIECEWISE_DISABLED_ARCHS or attn_dp > 1 or pp > 1 or multimodal:
            return False
        return not (speculative and _until(release, PIECEWISE_OFF_WITH_SPEC_UNTIL))
    if at_least(release, "0.5.20"):
        return None
    # breakable, 0.5.15-0.5.19
    if mla and _until(release, BREAKABLE_MLA_OFF_UNTIL):
        return False
    if family == "nemotron_h" and release in BREAKABLE_NEMOTRON_H_OFF:
        return False
    if attn_dp > 1 and _until(release, BREAKABLE_DP_OFF_UNTIL):
        return False
    if pp > 1 and at_least(release, BREAKABLE_PP_OFF_FROM):
        return False
    if multimodal:
        if arch in QWEN3_5_MULTIMODAL_ARCHS:
            return at_least(release, QWEN3_5_MULTIMODAL_ALLOWED_FROM)
        return multimodal_allowed
    return True
