"""Launch-flag resolution: the values SGLang 0.5.23 fixes while resolving ServerArgs
(`ServerArgs.resolve_once` -> `arg_groups/pipeline.py`) and checks when the engine starts
(`check_server_args`), for a CUDA Hopper GPU.

Operators pass flags, not resolved values; this module turns the former into the latter,
in the order SGLang's pipeline runs its hooks:

  1. ModelConfig: context_length against the derived one;
  2. CUDA-graph config: prefill graph breakable by default, off for PP > 1, KDA models and
     multimodal models that are not allow-listed (`cuda_graph_hook`);
  3. `handle_gpu_memory_settings`: chunked prefill / decode-graph defaults by GPU capacity,
     then the automatic mem_fraction_static (with the VLM adjustment);
  4. the mamba radix strategy (`auto` -> extra_buffer / no_buffer) and its validations;
  5. ReplaySSM spec-verify checks (forces the SSM dtype to float32 when unset);
  6. the page size default; attention-DP dividing the chunked prefill size;
  7. PP turning overlap off (after the strategy resolved);
  8. speculative defaults (48 running requests, (steps, topk, draft) = (3, 1, 4), NGRAM's 12);
  9. `--mamba-ssm-dtype` exported as SGLANG_MAMBA_SSM_DTYPE;
 10. `check_server_args` at engine start;
 11. model construction: `make_layers` asserts num_hidden_layers >= pp_size (checked
     first, before any other rule: see `check_pp_layers`).

The PD role, DCP and wide-EP rules these steps call live in their own modules:
`disaggregation.py` (radix off and extra slots on a decode node, graph roles, a decode
node's activation tokens, no VLM adjustment there, PP + MTP only on a prefill node),
`dcp.py` (dcp_size dividing tp_size, heads per rank, the breakable prefill graph off,
Kimi-K3's Hopper refusal) and `wide_ep.py` (DeepEP's ep_size, its 2 GiB and 1 GiB
reserves and aligned prefill buckets, two-batch overlap, HiCache's checks).

Flags SGLang refuses become `rejections` (the plan is then not startable), in the order
SGLang would raise them, with SGLang's exception class and wording. Three input errors stay
PlanInputErrors: attn_dp_size not dividing tp_size; pp_size > 1 for a model class that
asserts pp_size == 1 (Qwen3-Next, Falcon-H1, LFM2; SGLang fails at model construction);
and pp_size above the model's layer count (SGLang's `make_layers` asserts
num_hidden_layers >= pp_size when it builds the model), checked before everything else so
that no plan ever has more stages than layers.

The machine is the request's catalog GPU (a CUDA Hopper part when none is named): what
depends on it (the attention backend and the page it forces, the prefill CUDA graph off
CUDA, aiter's mem_fraction_static factor, the HIP page default) is platform.py's, asked at
small call sites here.
Conformance: tests/conformance/test_launch_resolution.py runs SGLang's own resolution on
generated flag sets and compares every value below. Pure: no torch, no sglang.
"""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.schemas.releases import DEFAULT_RELEASE
from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service.solver import (
    dcp,
    dflash,
    disaggregation,
    int8_checkpoint,
    platform,
    wide_ep,
)
from mambasizer.service.solver.checkpoint_quant import launch_quant_failure, resolve_kv_auto
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.platform import HOPPER, Platform
from mambasizer.service.solver.releases import launch_rules as rules
from mambasizer.service.solver.specs import MXFP8_SCALE_BLOCK as MXFP8_BLOCK

DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9
SPEC_DEFAULT_MAX_RUNNING_REQUESTS = 48
# (num_steps, eagle_topk, num_draft_tokens) `_auto_choose_speculative_params` picks for
# every hybrid architecture (and for STANDALONE).
SPEC_DEFAULT_PARAMS = (3, 1, 4)
NGRAM_DEFAULT_DRAFT_TOKENS = 12
NGRAM_DEFAULT_MAX_BFS_BREADTH = 10  # --speculative-ngram-max-bfs-breadth: NGRAM's topk
EAGLE_FAMILY = {"EAGLE", "EAGLE3", "NEXTN"}
# arg_groups/choices.py: DETERMINISTIC_ATTENTION_BACKEND_CHOICES, RADIX_SUPPORTED_DETERMINISTIC_ATTENTION_BACKEND.
DETERMINISTIC_ATTENTION_BACKENDS = ("ascend", "fa3", "fa4", "flashinfer", "intel_xpu", "triton")
RADIX_DETERMINISTIC_ATTENTION_BACKENDS = ("ascend", "fa3", "fa4", "triton")
KV_ITEMSIZE = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1, "mxfp8": 1}
FP4_KV = ("nvfp4", "fp4_mx_block16")
# `handle_kv4_compatibility`: the backends an FP4 KV cache may run with (one backend for both phases).
KV4_MHA_BACKENDS = ["triton", "torch_native", "flex_attention", "trtllm_mha"]
KV4_MLA_BACKENDS = ["flashinfer", "trtllm_mla"]
# `handle_nvfp4_prefill_kv_dequant_dtype`: the prefill backend of each NVFP4 prefill recipe.
NVFP4_PREFILL_BACKENDS = {"flashinfer": "fp8_e4m3", "trtllm_mha": "nvfp4"}
DEFAULT_MAX_PREFILL_TOKENS = 16384
PP_PREFILL_GRAPH_MAX_TOKENS = 8192
FLA_CHUNK_SIZE = 64

# Architectures that go through the mamba radix-cache resolution, and those whose model
# supports the extra_buffer strategy (`overrides._MAMBA_RADIX_CACHE_ARCHS`,
# `_MAMBA_EXTRA_BUFFER_ARCHS`; GraniteMoeHybrid is in the radix branch only when one of
# its `layer_types` is "mamba").
MAMBA_RADIX_CACHE_ARCHS = frozenset({
    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "BailingMoeV2_5ForCausalLM",
    "BailingMoeV3ForCausalLM", "BailingMoeV3VLForConditionalGeneration", "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
    "Qwen3_5ForCausalLM", "Qwen4ExpForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "MiniCPMV4_7ForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3", "FalconH1ForCausalLM", "JetNemotronForCausalLM",
    "JetVLMForConditionalGeneration", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "ZayaForCausalLM",
    "Glm5NextForConditionalGeneration",
})
MAMBA_EXTRA_BUFFER_ARCHS = frozenset({
    "KimiLinearForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM", "Qwen3NextForCausalLM", "Qwen4ExpForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
    "MiniCPMV4_7ForConditionalGeneration", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM",
    "Glm5NextForConditionalGeneration", "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM",
    "NemotronH_Omni_Reasoning_V3", "KimiK3ForConditionalGeneration", "InklingForConditionalGeneration",
    "InklingForConditionalGenerationMTP",
})
# Multimodal architectures allowed to keep the breakable prefill CUDA graph.
MULTIMODAL_BREAKABLE_GRAPH_ARCHS = frozenset({
    "MiniMaxM3SparseForConditionalGeneration", "Cohere2VisionForConditionalGeneration",
    "Glm5NextForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
    "PaddleOCRVLForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
    "MuseGlimmerForConditionalGeneration", "MuseSparkForConditionalGeneration",
    "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration", "MiniMaxM3SparseForCausalLM",
})
# Vision-tower (num_hidden_layers, hidden_size) the multimodal fraction adjustment reads,
# per vision config class: the attribute names and the class defaults. Qwen3.5's vision
# config names its depth `depth`, so `num_hidden_layers` falls back to 24 (SIZING_SPEC §8.7).
_VISION_TOWER = {
    "kimi_k3": (("vt_num_hidden_layers", 27), ("vt_hidden_size", 1024)),
    "qwen3_5": (("num_hidden_layers", 24), ("hidden_size", 1152)),
}


class Rejection(NamedTuple):
    exception: str
    message: str


class Launch(NamedTuple):
    tp_size: int
    pp_size: int
    attn_dp_size: int
    attn_tp_size: int
    page_size: int
    kv_cache_dtype: str
    kv_itemsize: int
    mem_fraction_static: float | None
    mamba_full_memory_ratio: float
    strategy: str
    extra_buffer: bool
    extra_buffer_lazy: bool
    disable_radix_cache: bool
    disable_overlap_schedule: bool
    max_running_requests: int | None
    user_set_max_running_requests: bool
    max_mamba_cache_size: int | None
    max_total_tokens: int | None
    speculative_algorithm: str | None
    num_draft_tokens: int | None
    replayssm_spec: bool
    replayssm_cache_len: int
    context_len: int
    conv_dtype: str
    ssm_dtype: str
    draft_kv_layers: int
    prices_draft_kv: bool
    skip_decode_lock: bool
    pp_max_micro_batch_size: int | None
    rejections: tuple[Rejection, ...] = ()
    warnings: tuple[str, ...] = ()
    # Resolved values that do not feed the sizing directly (reported, and conformance-tested).
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    chunked_prefill_size: int | None = None
    decode_cuda_graph_max_bs: int | None = None
    prefill_cuda_graph: bool = True
    attention_backend: str = ""  # the (decode) attention backend SGLang resolves
    platform: str = HOPPER.name  # the catalog part whose resolution applied
    # SGLANG_MAMBA_SSM_DTYPE as SGLang leaves it after resolution (None: unset).
    env_mamba_ssm_dtype: str | None = None
    kv_cache_dtype_reason: str = ""  # why kv_cache_dtype (auto: what the checkpoint declares)
    draft_kv_layers_reason: str = ""  # where draft_kv_layers came from (or that it is zero unpriced)
    # Disaggregation / DCP / wide EP (disaggregation.py, dcp.py, wide_ep.py).
    disaggregation_mode: str = "null"
    decode_extra_slots: int = 0  # disaggregation_decode_extra_slots (decode role)
    decode_extra_slots_given: bool = False  # --disaggregation-decode-extra-slots was passed
    reserves_spec_state: bool = True  # False on a prefill node (_pd_prefill_skips_mamba_spec_state)
    dcp_size: int = 1
    moe_a2a_backend: str = "none"
    ep_size: int = 1
    enable_two_batch_overlap: bool = False
    enable_symm_mem: bool = False
    enable_hierarchical_cache: bool = False
    # The int8 mamba checkpoint pool (int8_checkpoint.py): on, and the slots asked for (None: 2K).
    int8_checkpoint: bool = False
    int8_checkpoint_size: int | None = None
    linear_attn_decode_backend: str = "triton"
    # DFLASH / DSPARK: the draft's own KV bytes per token, added to the target's cell (dflash.py).
    dflash_draft_cell: int = 0

    @property
    def rejected(self) -> bool:
        return bool(self.rejections)


def _block_scaled_kv_refusal(kv_cache_dtype: str, backend: str, layout: ModelLayout, plat: Platform) -> tuple[str, str] | None:
    """SGLang's refusals of the block-scaled KV caches on this GPU: MXFP8 off Blackwell, NVFP4
    off SM100 / SM120, FP4 off CUDA, and fp4_mx_block16 with a backend that cannot read it."""
    if kv_cache_dtype == "mxfp8" and not plat.is_blackwell:
        return "ValueError", ("--kv-cache-dtype mxfp8 requires an SM100+ (Blackwell) GPU for the block-scaled operands used "
                              "by the FA4 MXFP8 attention path.")
    if kv_cache_dtype not in FP4_KV:
        return None
    if not plat.is_cuda:
        return "RuntimeError", "KV4 is not tested on non-CUDA platforms."
    if kv_cache_dtype == "nvfp4" and not (plat.is_sm100 or plat.capability[0] == 12):
        return "RuntimeError", ("--kv-cache-dtype=nvfp4 requires Blackwell SM100 or SM120. Use --kv-cache-dtype=fp4_mx_block16 "
                                "for the block-size-16 FP4 recipe.")
    if kv_cache_dtype == "fp4_mx_block16":
        mla = layout.kv.kind == "mla"
        allowed = KV4_MLA_BACKENDS if mla else KV4_MHA_BACKENDS
        if backend not in allowed:
            return "AssertionError", (f"KV4 {'MLA' if mla else 'MHA'} expects attention_backend to be one of {allowed}, "
                                      f"but got {backend}")
    return None


def _kv_dtype(args: ServerArgs, layout: ModelLayout) -> tuple[str, str]:
    """(the KV pool's dtype, why): `auto` as configure_kv_cache_dtype resolves it (the
    checkpoint's declared FP8 KV, else the model dtype)."""
    if args.kv_cache_dtype == "auto":
        if layout.kv_auto is not None:
            return layout.kv_auto
        return resolve_kv_auto(layout.hf_config, layout.hf_text_config, layout.model_dtype)
    given = {"bf16": "bfloat16", "fp16": "float16"}.get(args.kv_cache_dtype, args.kv_cache_dtype)
    return given, f"given: --kv-cache-dtype {args.kv_cache_dtype}"


# The breakable prefill graph's capture sizes (`generate_prefill_cuda_graph_batch_sizes`):
# (start, last, step) segments; the last one runs on to the limit.
_PREFILL_GRAPH_SEGMENTS = ((4, 32, 4), (48, 256, 16), (288, 512, 32), (576, 1024, 64), (1280, 4096, 256))
_PREFILL_GRAPH_TAIL = (4608, 512)
_PREFILL_GRAPH_FIXED_COUNT = sum((last - start) // step + 1 for start, last, step in _PREFILL_GRAPH_SEGMENTS)


def prefill_graph_size_count(limit: int) -> int:
    """How many token counts the breakable prefill graph captures up to `limit`, in closed
    form: SGLang lists them (`range(4608, limit + 1, 512)` for the tail), and a client's
    `cuda_graph_max_bs_prefill` may be 2^40, so the list is never built here."""
    tail_start, tail_step = _PREFILL_GRAPH_TAIL
    if limit >= tail_start:  # every fixed segment whole (the usual case): no loop
        return _PREFILL_GRAPH_FIXED_COUNT + (limit - tail_start) // tail_step + 1
    count = 0
    for start, last, step in _PREFILL_GRAPH_SEGMENTS:
        top = min(last, limit)
        if top >= start:
            count += (top - start) // step + 1
    return count


def _capacity_defaults(gpu_mib: float | None, tp: int, release: str = DEFAULT_RELEASE) -> tuple[int, int]:
    """(chunked_prefill_size, decode CUDA-graph max batch size) by GPU capacity."""
    if gpu_mib is None:
        return 4096, 160
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        chunk, small_tp, big_tp = rules.launch_profile(release).small_gpu_defaults
        return chunk, small_tp if tp < 4 else big_tp
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def uses_kda(layout: ModelLayout) -> bool:
    return layout.linear_kind == "kda"


def _vision_tower(layout: ModelLayout) -> tuple[int, int] | None:
    """(layers, hidden) of the vision tower as SGLang's config classes expose them, or None
    when the model carries no vision config."""
    wrapper = layout.hf_config or {}
    model_type = str(wrapper.get("model_type", ""))
    names = _VISION_TOWER.get("kimi_k3" if model_type == "kimi_k3" else "qwen3_5" if model_type.startswith("qwen3_5") else "")
    if names is None:
        return None
    vc = wrapper.get("vision_config")
    vc = vc if isinstance(vc, dict) else {}
    (layers_key, layers_default), (hidden_key, hidden_default) = names
    layers = vc.get(layers_key, layers_default)
    hidden = vc.get(hidden_key, hidden_default)
    return layers, hidden


def adjust_mem_fraction_for_vlm(mfs: float, layout: ModelLayout) -> float:
    """`memory_hook.adjust_mem_fraction_for_vlm` (no post-capture sizing)."""
    tower = _vision_tower(layout)
    if tower is None:
        return mfs
    layers, hidden = tower
    ratio = layers * hidden**2 / (24 * 1024**2)
    factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return mfs * (0.95 * factor)


class _Graphs(NamedTuple):
    decode_on: bool
    prefill_on: bool
    chunked: int
    decode_max_bs: int
    prefill_sizes: int


def _cuda_graphs(layout: ModelLayout, args: ServerArgs, gpu_mib: float | None, release: str = DEFAULT_RELEASE, plat: Platform = HOPPER) -> _Graphs:
    """`handle_cuda_graph_config` + the graph half of `handle_gpu_memory_settings`, with
    the prefill graph and the decode max_bs rules of `release` (releases/launch_rules.py)."""
    lp = rules.launch_profile(release)
    decode_on = not (args.disable_cuda_graph or args.disable_decode_cuda_graph)
    if lp.piecewise_ignores_disable_cuda_graph:
        # 0.5.10-0.5.13: only --disable-piecewise-cuda-graph turns PCG off, not --disable-cuda-graph.
        prefill_locked = args.disable_prefill_cuda_graph
    else:
        prefill_locked = args.disable_cuda_graph or args.disable_prefill_cuda_graph
    prefill_on = not prefill_locked and platform.prefill_graph_default_on(plat)
    # From 0.5.20 on the release adds no rule of its own (None): skip building the question.
    by_release = None if lp.prefill_follows_default else lp.prefill_graph_on(
        arch=layout.architecture, family=layout.family, mla=layout.kv.kind == "mla", kda=uses_kda(layout),
        multimodal=layout.is_multimodal, multimodal_allowed=layout.architecture in MULTIMODAL_BREAKABLE_GRAPH_ARCHS,
        speculative=args.speculative_algorithm is not None, attn_dp=args.attn_dp_size, pp=args.pp_size,
    )
    if by_release is not None:
        prefill_on = prefill_on and by_release
    elif prefill_on and (
        args.pp_size > 1
        or uses_kda(layout)
        or (layout.is_multimodal and layout.architecture not in MULTIMODAL_BREAKABLE_GRAPH_ARCHS)
        or args.dcp_size > 1
        or args.enable_two_batch_overlap
    ):
        prefill_on = False
    # DeepEP aligns the breakable graph's buckets before the memory settings fill max_bs in.
    deepep_aligned = prefill_on and args.moe_a2a_backend == wide_ep.DEEPEP
    decode_on, prefill_on = disaggregation.graph_roles(args.disaggregation_mode, decode_on, prefill_on)
    chunked, max_bs = _capacity_defaults(gpu_mib, args.tp_size, release)
    if args.chunked_prefill_size is not None:
        chunked = args.chunked_prefill_size
    if args.cuda_graph_max_bs_decode is not None:
        max_bs = args.cuda_graph_max_bs_decode
    elif (lp.decode_max_bs_follows_mrr and args.max_running_requests is not None
          and max_bs > args.max_running_requests):
        max_bs = args.max_running_requests
    if args.cuda_graph_max_bs_prefill is not None:
        prefill_max = args.cuda_graph_max_bs_prefill
    elif deepep_aligned:
        prefill_max = wide_ep.DEEPEP_DEFAULT_PREFILL_MAX_BS
    else:
        prefill_max = chunked if layout.kv.kind != "mla" else min(8192, chunked)
        if args.pp_size > 1 and prefill_on and prefill_max > PP_PREFILL_GRAPH_MAX_TOKENS:
            prefill_max = PP_PREFILL_GRAPH_MAX_TOKENS
        if args.max_total_tokens is not None:
            prefill_max = min(prefill_max, args.max_total_tokens)
        if lp.prefill_max_capped_by_context and args.context_length is not None:
            prefill_max = min(prefill_max, args.context_length)
    sizes = prefill_graph_size_count(prefill_max)
    if not lp.prefill_list_has_576 and prefill_max >= 576:
        sizes -= 1
    if deepep_aligned:
        sizes = wide_ep.aligned_prefill_graph_count(prefill_max, sizes)
    return _Graphs(decode_on, prefill_on, chunked, max_bs, sizes)


class ActivationReserve(NamedTuple):
    """What `memory_hook.handle_gpu_memory_settings` keeps outside mem_fraction_static for a
    launch (MiB): `estimate` (512 of metadata + 1.5 per activation token + tp * pp / 8 GiB of
    parallel slack + the CUDA-graph buffers), `floor` (10 GiB on GPUs over 60 GiB, else 0) and
    `extra` (added on top of the floor: the pre-0.5.14 speculative reserve, DeepEP buffers)."""

    estimate: float
    floor: float
    extra: float

    @property
    def total(self) -> float:
        """The automatic rule's reserve: (gpu - total) / gpu is its mem_fraction_static."""
        return max(self.estimate, self.floor) + self.extra

    @property
    def needed(self) -> float:
        """SGLang's own estimate of the activations and graph buffers, without the floor."""
        return self.estimate + self.extra


def activation_reserve(
    layout: ModelLayout, args: ServerArgs, gpu_mib: float | None, graphs: _Graphs | None = None, release: str = DEFAULT_RELEASE,
    plat: Platform = HOPPER,
) -> ActivationReserve:
    """The reserve of `memory_hook.handle_gpu_memory_settings` (SIZING_SPEC §2.1.1, §8.1), with
    `release`'s constants (releases/launch_rules.py)."""
    g = graphs or _cuda_graphs(layout, args, gpu_mib, release, plat)
    lp = rules.launch_profile(release)
    tp, pp, dp = args.tp_size, args.pp_size, args.attn_dp_size
    mode = args.disaggregation_mode
    if mode == disaggregation.DECODE:
        activation_tokens = disaggregation.decode_activation_tokens(args.max_running_requests, g.decode_max_bs, args.speculative_num_draft_tokens)
    elif g.chunked > 0:
        activation_tokens = max(g.chunked, 2048)
    else:
        activation_tokens = max(args.max_prefill_tokens, 2048)
    reserved: float = 512
    reserved += activation_tokens * 1.5
    reserved += tp * pp / 8 * 1024
    graph = 0.0
    if g.decode_on or not lp.decode_term_needs_graph:
        graph += g.decode_max_bs * 2
    if dp > 1 and mode != disaggregation.PREFILL:
        graph += g.decode_max_bs * dp * 3
        if g.decode_max_bs > 300:
            graph += g.decode_max_bs * dp * 1.5
    if g.prefill_on:
        graph += g.prefill_sizes * 8 if layout.kv.kind != "mla" else 1.5 * 1024
        graph += wide_ep.bcg_deepep_reserve_mb(args.moe_a2a_backend, True)
    reserved += graph
    floor = 10 * 1024 if gpu_mib is not None and gpu_mib > 60 * 1024 else 0
    extra: float = lp.spec_reserve_mb(args.speculative_algorithm)
    extra += wide_ep.deepep_a2a_reserve_mb(args.moe_a2a_backend, g.decode_on)  # on top of the floor
    return ActivationReserve(reserved, floor, extra)


def auto_mem_fraction_static(
    layout: ModelLayout, args: ServerArgs, gpu_mib: float | None, graphs: _Graphs | None = None, release: str = DEFAULT_RELEASE,
) -> float:
    """`memory_hook.handle_gpu_memory_settings` for a CUDA Hopper GPU (SIZING_SPEC §2.1.1, §8.1),
    with `release`'s constants (releases/launch_rules.py)."""
    g = graphs or _cuda_graphs(layout, args, gpu_mib, release)
    reserved = activation_reserve(layout, args, gpu_mib, g, release).total
    mfs = round((gpu_mib - reserved) / gpu_mib, 3) if gpu_mib is not None else rules.launch_profile(release).fallback_mem_fraction
    if layout.is_multimodal and args.disaggregation_mode != disaggregation.DECODE:
        mfs = adjust_mem_fraction_for_vlm(mfs, layout)
    return mfs


def _in_radix_branch(layout: ModelLayout, release: str = DEFAULT_RELEASE) -> bool:
    lp = rules.launch_profile(release)
    if layout.architecture == "GraniteMoeHybridForCausalLM":
        if not lp.granite_in_radix_branch:
            return False
        # Only with a mamba layer among the config's (normalised) layer_types.
        return bool(layout.mamba_layer_ids)
    return layout.architecture in MAMBA_RADIX_CACHE_ARCHS and lp.radix_arch_before_0_5_19(layout.architecture)


def supports_extra_buffer(layout: ModelLayout, release: str = DEFAULT_RELEASE, linear_attn_backend: str = "triton") -> bool:
    """`supports_mamba_cache_extra_buffer`: the architecture, and (0.5.23) the base
    linear-attention backend being triton (the per-mode overrides do not count)."""
    lp = rules.launch_profile(release)
    if not lp.is_default:
        return layout.architecture in lp.extra_buffer_archs
    return layout.architecture in MAMBA_EXTRA_BUFFER_ARCHS and linear_attn_backend == "triton"


def mamba_chunk_size(layout: ModelLayout) -> int:
    """The model's mamba chunk size as `overrides.mamba_cache_chunk_size` reads it off the
    (top-level) HF config: the config class default, else FLA's 64."""
    cfg = layout.hf_config or {}
    if cfg.get("mamba_chunk_size") is not None:
        return int(cfg["mamba_chunk_size"])
    if layout.family == "nemotron_h":
        return int(cfg.get("chunk_size") or 256)
    if layout.family in ("falcon_h1", "granitemoehybrid"):
        return 256
    return FLA_CHUNK_SIZE


def check_pp_layers(layout: ModelLayout, pp: int) -> None:
    """THE bound of pp_size against the model: at most one stage per layer. SGLang's
    `make_layers` asserts num_hidden_layers >= pp_size when it builds the model; a launch
    it refuses earlier for another reason (NGRAM with PP) never gets there, but its plan
    would still be one stage per rank, so the bound is checked first, on every path
    (plan, compare, sweep points, recommend candidates), before any stage is built."""
    if pp > max(layout.num_hidden_layers, 1):
        raise PlanInputError(
            "server_args.pp_size",
            f"is {pp} but the model has num_hidden_layers={layout.num_hidden_layers}: SGLang 0.5.23 asserts "
            f"num_hidden_layers >= pp_size when it builds the model; use pp_size {layout.num_hidden_layers} or less",
        )


def resolve(
    layout: ModelLayout, args: ServerArgs, env: Env, gpu_memory_mib: int | None, draft_layers: int | None, needs_mfs: bool,
    *, release: str = DEFAULT_RELEASE, plat: Platform = HOPPER, draft: dflash.DraftGeometry | None = None,
) -> Launch:
    """Resolve the flags as SGLang `release` does (a base release or post-release) on `plat`.
    `draft`: the draft's config as DFLASH / DSPARK read it (service/solver/dflash.py)."""
    lp = rules.launch_profile(release)  # every release rule, read once per release
    release = lp.release
    if args.speculative_algorithm in dflash.DFLASH_FAMILY:
        dflash.check_release(args.speculative_algorithm, release)
    rejections: list[Rejection] = []
    warnings: list[str] = []

    def reject(exception: str, message: str) -> None:
        rejections.append(Rejection(exception, message))

    tp, pp, dp = args.tp_size, args.pp_size, args.attn_dp_size
    if tp % dp != 0:
        # SGLang asserts tp_size % attn_dp_size == 0 while resolving data parallelism.
        raise PlanInputError("server_args.attn_dp_size", f"must divide tp_size={tp} (attention TP = tp_size // attn_dp_size)")
    attn_tp = tp // dp
    dcp.check(tp, attn_tp, args.dcp_size)
    mode = args.disaggregation_mode
    # handle_pd_disaggregation runs before every hook below.
    disable_radix = disaggregation.radix_disabled(mode, args.disable_radix_cache, args.disaggregation_decode_enable_radix_cache)
    extra_slots = disaggregation.decode_extra_slots(mode, args.disaggregation_decode_extra_slots, args.max_running_requests, dp)
    if pp > 1 and not layout.pp_supported:
        raise PlanInputError(
            "server_args.pp_size",
            f"{layout.family} does not support pipeline parallelism in SGLang 0.5.23 (the model asserts pp_size == 1); use pp_size 1",
            allowed=["1"],
        )
    check_pp_layers(layout, pp)
    # The backend, and the page / strategy a model override sets with it (platform.py).
    choice = platform.default_backend(layout, args, plat) if args.attention_backend is None else platform.BackendChoice(args.attention_backend, None)
    # The backend `handle_deterministic_inference` sees: the user's, a model override's, else its
    # own fallback, which replaces the generic default. Kimi-K3's override sets the prefill and
    # decode backends only, so deterministic inference still sees the backend unset there.
    det_backend: str | None = args.attention_backend
    if args.enable_deterministic_inference and det_backend is None:
        override = platform.model_override(layout, args, plat)
        if override is not None and not platform.override_splits_backends(layout, override):
            det_backend = override.backend
        else:
            fallback = platform.deterministic_backend(plat)
            det_backend = fallback
            if override is None:
                choice = platform.BackendChoice(fallback, None)
    backend = choice.backend
    kv_dtype, kv_reason = _kv_dtype(args, layout)
    if backend == "fa3" and kv_dtype == "fp8_e5m2":
        backend = "triton"  # FA3 only takes fp8_e4m3: SGLang switches to triton (no sizing effect)

    # 1. ModelConfig (built at the first model lookup, before any hook decides anything).
    context_len = layout.derived_context_len
    if args.context_length is not None:
        if args.context_length > context_len and not env.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN:
            reject(
                "ValueError",
                f"Warning: User-specified context_length ({args.context_length}) is greater than the derived context_length ({context_len}). "
                "This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in the model's config. "
                "To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
            )
        else:
            if args.context_length > context_len:
                warnings.append(f"context_length {args.context_length} is above the derived {context_len} (allowed by SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN)")
            context_len = args.context_length

    # Kimi-K3's DCP override (model-specific adjustments), in SGLang's words.
    refused = dcp.kimi_k3_rejection(layout.architecture, args.dcp_size, args.attention_backend, plat.is_sm100)
    if refused is not None:
        reject(*refused)

    # 2-3. CUDA graphs and the GPU memory settings.
    graphs = _cuda_graphs(layout, args, gpu_memory_mib, release, plat)
    mfs = args.mem_fraction_static
    if mfs is None and needs_mfs:
        if gpu_memory_mib is None:
            raise PlanInputError(
                "budget.gpu_memory_mib",
                "is needed to derive SGLang's automatic mem_fraction_static; give it, or set server_args.mem_fraction_static",
            )
        mfs = auto_mem_fraction_static(layout, args, gpu_memory_mib, graphs, release)
    if mfs is not None:
        mfs = platform.aiter_mem_fraction(mfs, backend, context_len, args.mem_fraction_static is not None, env)

    # 4. Model-specific adjustments: the LFM2 attention check, then the mamba radix
    #    strategy, with the page size as the user gave it (None: unset).
    # The Nemotron-H override that trips over a quant recipe kept only in hf_quant_config.json
    # arrived with the model-override declarations (0.5.19).
    quant_failure = launch_quant_failure(layout.architecture, layout.hf_config, layout.hf_text_config) if lp.checks_quant_recipe else None
    if quant_failure:
        reject("AttributeError", quant_failure)
    lfm2_triton = layout.family == "lfm2" and args.attention_backend == "triton"
    if lfm2_triton and not lp.lfm2_triton_after_radix:
        reject("AssertionError", f"{layout.architecture} does not support triton attention backend, as the first layer might not be an attention layer")
    nemotron_triton = lp.refuses_triton_for(layout.architecture, args.attention_backend)
    if nemotron_triton and lp.nemotron_h_triton_before_radix:
        reject("AssertionError", rules.NEMOTRON_H_TRITON_ERROR)
    raw_page = args.page_size
    if choice.page_size is not None and (raw_page is None or choice.replaces_page):
        raw_page = choice.page_size
    disable_overlap = args.disable_overlap_schedule
    strategy = choice.strategy or args.mamba_radix_cache_strategy
    if not lp.auto_strategy_resolves and strategy == "auto":
        strategy = "no_buffer"  # <=0.5.13: auto is no_buffer for every model
    if lp.legacy_radix_era:  # <=0.5.13: per model class (releases/launch_rules.py)
        legacy = rules.legacy_radix(
            release, arch=layout.architecture, strategy=strategy, page=raw_page, disable_overlap=disable_overlap,
            disable_radix=disable_radix, speculative=args.speculative_algorithm is not None,
            num_draft=args.speculative_num_draft_tokens, track_interval=args.mamba_track_interval, chunk=mamba_chunk_size(layout),
        )
        raw_page, disable_overlap, disable_radix = legacy.page, legacy.disable_overlap, legacy.disable_radix
        if legacy.rejection:
            reject(*legacy.rejection)
    elif _in_radix_branch(layout, release) and not disable_radix:
        wants_overlap = not disable_overlap
        wants_paging = raw_page is not None and raw_page > 1
        if strategy == "auto":
            if (wants_overlap or wants_paging) and supports_extra_buffer(layout, release, args.linear_attn_backend):
                strategy = "extra_buffer"
            else:
                strategy = "no_buffer"
                disable_overlap = True
        if strategy in ("extra_buffer", "extra_buffer_lazy"):
            if not supports_extra_buffer(layout, release, args.linear_attn_backend):
                reject("AssertionError", f"extra_buffer is not supported for {layout.architecture}; use no_buffer.")
            elif args.speculative_num_draft_tokens is not None and args.mamba_track_interval < args.speculative_num_draft_tokens:
                reject("AssertionError", f"--mamba-track-interval ({args.mamba_track_interval}) must be >= --speculative-num-draft-tokens ({args.speculative_num_draft_tokens}) with the extra_buffer strategy")
            elif raw_page is not None and args.mamba_track_interval % raw_page != 0:
                reject("AssertionError", f"--mamba-track-interval ({args.mamba_track_interval}) must be a multiple of --page-size ({raw_page}) with the extra_buffer strategy")
            elif raw_page is not None:
                chunk = mamba_chunk_size(layout)
                if max(chunk, raw_page) % min(chunk, raw_page) != 0:
                    reject("AssertionError", rules.chunk_page_message(release, chunk, raw_page))
        else:  # no_buffer
            if raw_page not in (1, None):
                reject("AssertionError", "no_buffer only supports page_size=1.")
            elif not disable_overlap:
                reject("AssertionError", "no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.")
            elif backend == "trtllm_mha":
                reject("AssertionError", "no_buffer do not support trtllm_mha attention backend.")
    if nemotron_triton and not lp.nemotron_h_triton_before_radix:
        reject("AssertionError", rules.NEMOTRON_H_TRITON_ERROR)
    if lfm2_triton and lp.lfm2_triton_after_radix:
        reject("AssertionError", f"{layout.architecture} does not support triton attention backend, as the first layer might not be an attention layer")
    # handle_deterministic_inference (after the strategy resolved, before the extra buffer is read).
    if args.enable_deterministic_inference and det_backend is not None:
        if det_backend not in DETERMINISTIC_ATTENTION_BACKENDS:
            reject("ValueError", f"Currently only {list(DETERMINISTIC_ATTENTION_BACKENDS)} attention backends are supported for "
                   f"deterministic inference, but you explicitly specified '{det_backend}'.")
        elif det_backend not in RADIX_DETERMINISTIC_ATTENTION_BACKENDS:
            disable_radix = True
    # handle_nvfp4_prefill_kv_dequant_dtype: the prefill recipe of an NVFP4 KV cache.
    if args.kv_cache_dtype == "nvfp4":
        # The backend set by then: the user's, or a model override's (Kimi-K3's is its prefill backend).
        explicit: str | None = args.attention_backend
        if explicit is None:
            override = platform.model_override(layout, args, plat)
            explicit = override.backend if override is not None else None
        if explicit is not None and explicit not in NVFP4_PREFILL_BACKENDS:
            reject("ValueError", f"NVFP4 prefill supports an FP8 E4M3 workspace or native NVFP4, but backend {explicit!r} provides neither.")
    # handle_attention_backend_compatibility: TensorRT-LLM MLA's KV dtypes (the flag as given).
    if backend == "trtllm_mla" and args.kv_cache_dtype not in ("fp8_e4m3", "bf16", "auto") and release == DEFAULT_RELEASE:
        reject("ValueError", "TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, bf16, or auto.")
    # handle_mamba_backend, then handle_int8_mamba_checkpoint (mamba_hook.py).
    if args.mamba_max_states_per_path == 0 or args.mamba_max_states_per_path < -1:
        reject("ValueError", "--mamba-max-states-per-path must be -1 (unlimited) or a positive integer, got "
               f"{args.mamba_max_states_per_path}.")
    if args.enable_int8_mamba_checkpoint and args.enable_hierarchical_cache:
        reject("ValueError", int8_checkpoint.HICACHE_REFUSAL)
    # <=0.5.13's extra buffer is the strategy alone; 0.5.14 also needs the radix cache on.
    radix_gate = not disable_radix or lp.legacy_radix_era
    extra_buffer = radix_gate and strategy in ("extra_buffer", "extra_buffer_lazy")
    lazy = radix_gate and strategy == "extra_buffer_lazy"

    # 5. The linear-attention backend hook: its kernel checks, then ReplaySSM's.
    mamba_ssm_dtype = args.mamba_ssm_dtype
    linear = platform.linear_attn_backends(args, plat)
    decode_linear = linear.decode
    refused = linear.rejection
    if linear.warning:
        warnings.append(linear.warning)
    if refused is not None:
        reject(*refused)
    elif args.enable_linear_replayssm and decode_linear not in ("triton", "helion"):
        reject("ValueError", "--enable-linear-replayssm requires Triton, or Helion for KDA, as the linear-attn decode backend; "
               f"got --linear-attn-decode-backend={decode_linear!r}.")
    elif args.enable_linear_replayssm and extra_buffer:
        reject(*rules.replayssm_extra_buffer_refusal(release, args.mamba_radix_cache_strategy, strategy))
    if args.enable_linear_replayssm_spec and refused is None:
        if args.speculative_eagle_topk not in (None, 1):
            reject(
                "ValueError",
                "--enable-linear-replayssm-spec requires a linear draft chain (--speculative-eagle-topk in {None, 1}); the chunked "
                "verify kernel uses a strictly-lower causal mask and is invalid for EAGLE tree verify. Got "
                f"--speculative-eagle-topk={args.speculative_eagle_topk!r}.",
            )
        elif decode_linear not in ("triton", "flashinfer"):
            reject("ValueError", "--enable-linear-replayssm-spec requires the triton or flashinfer linear-attn decode backend, "
                   f"got --linear-attn-decode-backend={decode_linear!r}.")
        elif args.enable_linear_replayssm:
            reject(
                "ValueError",
                "--enable-linear-replayssm-spec and --enable-linear-replayssm are mutually exclusive: they share the ring storage "
                "but drive it with incompatible cursor protocols (per-decode-forward vs per-verify-commit advance).",
            )
        elif mamba_ssm_dtype is None:
            mamba_ssm_dtype = "float32"

    refused = wide_ep.hicache_dcp_rejection(args.enable_hierarchical_cache, args.dcp_size, args.speculative_algorithm, layout.kv.kind == "mla")
    if refused is not None:
        reject(*refused)

    # handle_kv4_compatibility, handle_mxfp8_kv_cache_compatibility (after the linear-attention hook).
    kv_refusal = _block_scaled_kv_refusal(args.kv_cache_dtype, backend, layout, plat)
    if kv_refusal is not None:
        reject(*kv_refusal)
    if args.kv_cache_dtype == "mxfp8" and layout.kv.kind != "mla" and layout.kv.head_dim % MXFP8_BLOCK != 0 and kv_refusal is None:
        # MHATokenToKVPoolMXFP8._create_buffers, when the pools are built.
        reject("ValueError", f"MXFP8 KV cache requires head_dim divisible by {MXFP8_BLOCK}, got {layout.kv.head_dim}.")

    # 6. Page size default; attention DP divides the chunked prefill size.
    page = raw_page if raw_page is not None else platform.default_page(plat, env)
    page = platform.constrained_page(backend, page) or page
    dcp_decode = dcp.kimi_k3_dcp_decode(layout.architecture, args.dcp_size, args.attention_backend)
    if dcp_decode is not None:  # the decode backend Kimi-K3's DCP override sets constrains the page too
        page = platform.constrained_page(dcp_decode, page) or page
    chunked = graphs.chunked
    if dp > 1:
        chunked = chunked // dp

    # 7. PP turns overlap off, after the strategy resolved (SIZING_SPEC §2.1.2 ordering trap).
    if pp > 1:
        disable_overlap = True

    # 8. Speculative decoding.
    spec = args.speculative_algorithm
    mrr = args.max_running_requests
    steps, topk, num_draft = args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens
    resolved_spec = "EAGLE" if spec == "NEXTN" else spec
    refused = disaggregation.decode_radix_spec_rejection(mode, args.disaggregation_decode_enable_radix_cache, spec)
    if refused is not None:
        reject(*refused)
    if spec in EAGLE_FAMILY or spec == "STANDALONE":
        if spec == "STANDALONE" and dp > 1:
            reject("ValueError", "Currently standalone speculative decoding does not support dp attention.")
        else:
            if lp.eagle_disables_overlap(args.speculative_eagle_topk):
                disable_overlap = True
            if mrr is None:
                mrr = SPEC_DEFAULT_MAX_RUNNING_REQUESTS
            if steps is None and (topk is not None or num_draft is not None):
                reject("AssertionError", "--speculative-eagle-topk / --speculative-num-draft-tokens need --speculative-num-steps (SGLang asserts both are unset when it picks the defaults)")
            else:
                if steps is None:
                    steps, topk, num_draft = SPEC_DEFAULT_PARAMS
                if topk is None:
                    reject("TypeError", "'>' not supported between instances of 'NoneType' and 'int' (SGLang compares --speculative-eagle-topk, unset, when only --speculative-num-steps is given)")
                elif topk == 1 and num_draft != steps + 1:
                    num_draft = steps + 1
                if topk is not None and topk > 1 and page > 1 and backend not in platform.PAGE_TREE_SPEC_BACKENDS:
                    reject("ValueError", f"speculative_eagle_topk > 1 with page_size > 1 is only supported on {platform.PAGE_TREE_SPEC_BACKENDS}; "
                           f"got attention_backend={backend!r}. Use page_size == 1 or one of those backends.")
    elif spec in dflash.DFLASH_FAMILY:
        got = dflash.resolve(
            spec, pp=pp, draft=draft, num_draft_tokens=num_draft, max_running_requests=mrr,
            dflash_block_size=args.speculative_dflash_block_size, dspark_block_size=args.speculative_dspark_block_size,
        )
        if isinstance(got, dflash.Resolved):
            num_draft, steps, topk, mrr = got
        else:
            reject(*got)
    elif spec == "NGRAM":
        if mrr is None:
            mrr = SPEC_DEFAULT_MAX_RUNNING_REQUESTS
        topk = NGRAM_DEFAULT_MAX_BFS_BREADTH
        if num_draft is None:
            num_draft = NGRAM_DEFAULT_DRAFT_TOKENS
        if steps is None and not lp.ngram_disables_overlap:
            steps = num_draft // topk  # <=0.5.13 leaves the steps unset and turns overlap off
        if lp.ngram_disables_overlap:
            disable_overlap = True
        if topk > 1 and page > 1 and backend != "flashinfer":
            reject("ValueError", f"speculative_eagle_topk({topk}) > 1 with page_size({page}) > 1 is unstable and produces incorrect results for paged attention backends. This combination is only supported for the 'flashinfer' backend.")
        elif dp > 1:
            reject("ValueError", "Currently ngram speculative decoding does not support dp attention.")
    prices_draft = spec in EAGLE_FAMILY or spec == "STANDALONE"
    draft_kv_layers = draft_layers if draft_layers is not None else layout.num_nextn_predict_layers
    draft_reason = ""
    if prices_draft:
        if draft_layers is not None:
            draft_reason = f"draft_model.num_layers: {draft_layers} draft KV layer(s) priced"
        elif layout.num_nextn_predict_layers:
            draft_reason = f"the checkpoint's MTP: num_nextn_predict_layers={layout.num_nextn_predict_layers} draft KV layer(s) priced"
        else:
            # SGLang prices the separate draft's own layers; without its config nothing says how many.
            one = layout.kv.cell_bytes(1, KV_ITEMSIZE.get(kv_dtype, 1), attn_tp, mxfp8=kv_dtype == "mxfp8")
            draft_reason = (f"no draft_model and no num_nextn_predict_layers in the config: the draft's KV is priced at zero; "
                            f"each draft layer adds {one:,} bytes per token to every stage's KV cell")
            warnings.append(
                f"mambasizer: {spec} without draft_model: the draft model's KV cache is priced at zero, so the KV "
                f"tokens are overstated; each draft layer costs {one:,} bytes per token. Give draft_model.num_layers "
                "(the draft checkpoint's num_hidden_layers) to price it as SGLang does"
            )

    dflash_cell = 0
    if spec in dflash.DFLASH_FAMILY and draft is not None and not rejections:
        if backend == "trtllm_mha":
            raise PlanInputError("server_args.attention_backend", f"{spec} with trtllm_mha: SGLang picks the draft's attention "
                                 "backend from its layer types (fa4 or the fallback), which is not modelled; use another backend")
        # The draft runs the target's attention backend (`_resolve_dflash_draft_attention_backend`).
        dflash_cell = dflash.draft_cell_bytes(draft, kv_cache_dtype=args.kv_cache_dtype, draft_attention_backend=backend,
                                              attn_tp=attn_tp, attn_dcp=args.dcp_size)

    # handle_cache_compatibility (after the speculative hook): HiCache needs the radix cache.
    refused = wide_ep.hicache_rejections(args.enable_hierarchical_cache, disable_radix)
    if refused is not None:
        reject(*refused)

    # 9. --mamba-ssm-dtype is exported as SGLANG_MAMBA_SSM_DTYPE (beats the config's value).
    env_ssm = mamba_ssm_dtype or lp.ssm_dtype_flag_default or env.SGLANG_MAMBA_SSM_DTYPE
    # 0.5.8 reads the SSM dtype from the flag only (its default is exported), never the config.
    ssm_dtype = env_ssm or layout.config_ssm_dtype or "float32"
    conv_dtype = env.SGLANG_MAMBA_CONV_DTYPE or "bfloat16"

    # 10. check_server_args at engine start.
    if pp > 1 and resolved_spec is not None:
        if lp.pp_refuses_speculative:
            reject("AssertionError", lp.pp_speculative_refusal)
        elif resolved_spec != "EAGLE":
            reject("AssertionError", "Pipeline parallelism currently only supports EAGLE (non-multi-layer) speculative decoding")
        elif not disaggregation.allows_pp_with_spec(mode):  # SGLANG_ENABLE_PP_SPEC (not modelled) is off
            reject("AssertionError", "PP + speculative decoding (MTP) is only supported on prefill nodes (disaggregation-mode=prefill)")
    if chunked > 0 and chunked % page != 0:
        reject("AssertionError", "chunked_prefill_size must be divisible by page_size")
    refused = wide_ep.tbo_rejection(args.enable_two_batch_overlap, args.moe_a2a_backend, dp)
    if refused is not None:
        reject(*refused)

    if args.kv_cache_dtype in FP4_KV and not rejections:
        # SGLang would start it: its FP4 cell is not modelled (refused only once every check passed).
        raise PlanInputError(
            "server_args.kv_cache_dtype",
            f"{args.kv_cache_dtype} KV on {plat.name} with attention backend {backend}: SGLang 0.5.23 starts it, but its "
            "FP4 cell (packed data, block scales per backend layout, the dequant workspace) is not modelled here; "
            "use fp8_e4m3 or mxfp8",
        )
    # Positional, in Launch's field order (_LAUNCH_FIELDS below holds it at import): binding
    # 51 keywords cost as much as the rest of this function's bookkeeping.
    return Launch(
        tp, pp, dp, attn_tp, page,  # tp_size, pp_size, attn_dp_size, attn_tp_size, page_size
        kv_dtype, KV_ITEMSIZE.get(kv_dtype, 1), mfs,  # kv_cache_dtype, kv_itemsize, mem_fraction_static
        # mamba_full_memory_ratio
        args.mamba_full_memory_ratio if args.mamba_full_memory_ratio is not None else DEFAULT_MAMBA_FULL_MEMORY_RATIO,
        strategy, extra_buffer, lazy,  # strategy, extra_buffer, extra_buffer_lazy
        disable_radix, disable_overlap,  # disable_radix_cache, disable_overlap_schedule
        mrr, args.max_running_requests is not None,  # max_running_requests, user_set_max_running_requests
        args.max_mamba_cache_size, args.max_total_tokens,  # max_mamba_cache_size, max_total_tokens
        spec, num_draft,  # speculative_algorithm, num_draft_tokens
        args.enable_linear_replayssm_spec, args.linear_replayssm_cache_len,  # replayssm_spec, replayssm_cache_len
        context_len, conv_dtype, ssm_dtype,  # context_len, conv_dtype, ssm_dtype
        draft_kv_layers if prices_draft else 0, prices_draft,  # draft_kv_layers, prices_draft_kv
        env.SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK,  # skip_decode_lock
        args.pp_max_micro_batch_size,  # pp_max_micro_batch_size
        tuple(rejections), tuple(warnings),  # rejections, warnings
        steps, topk, chunked,  # speculative_num_steps, speculative_eagle_topk, chunked_prefill_size
        graphs.decode_max_bs, graphs.prefill_on,  # decode_cuda_graph_max_bs, prefill_cuda_graph
        backend, plat.name, env_ssm,  # attention_backend, platform, env_mamba_ssm_dtype
        kv_reason, draft_reason,  # kv_cache_dtype_reason, draft_kv_layers_reason
        mode, extra_slots,  # disaggregation_mode, decode_extra_slots
        args.disaggregation_decode_extra_slots is not None,  # decode_extra_slots_given
        not disaggregation.skips_spec_state(mode),  # reserves_spec_state
        args.dcp_size, args.moe_a2a_backend,  # dcp_size, moe_a2a_backend
        wide_ep.ep_size(args.moe_a2a_backend, tp, args.ep_size),  # ep_size
        args.enable_two_batch_overlap, args.enable_symm_mem,  # enable_two_batch_overlap, enable_symm_mem
        args.enable_hierarchical_cache,  # enable_hierarchical_cache
        int8_checkpoint=args.enable_int8_mamba_checkpoint, int8_checkpoint_size=args.int8_mamba_ckpt_size,
        linear_attn_decode_backend=decode_linear, dflash_draft_cell=dflash_cell,
    )


# The order resolve() passes Launch's fields in. A field added, removed or moved in Launch
# fails here, at import, until resolve()'s return is updated with it (never a silent shift).
_LAUNCH_FIELDS = (
    "tp_size", "pp_size", "attn_dp_size", "attn_tp_size", "page_size", "kv_cache_dtype", "kv_itemsize",
    "mem_fraction_static", "mamba_full_memory_ratio", "strategy", "extra_buffer", "extra_buffer_lazy",
    "disable_radix_cache", "disable_overlap_schedule", "max_running_requests", "user_set_max_running_requests",
    "max_mamba_cache_size", "max_total_tokens", "speculative_algorithm", "num_draft_tokens", "replayssm_spec",
    "replayssm_cache_len", "context_len", "conv_dtype", "ssm_dtype", "draft_kv_layers", "prices_draft_kv",
    "skip_decode_lock", "pp_max_micro_batch_size", "rejections", "warnings", "speculative_num_steps",
    "speculative_eagle_topk", "chunked_prefill_size", "decode_cuda_graph_max_bs", "prefill_cuda_graph",
    "attention_backend", "platform", "env_mamba_ssm_dtype", "kv_cache_dtype_reason", "draft_kv_layers_reason",
    "disaggregation_mode", "decode_extra_slots", "decode_extra_slots_given", "reserves_spec_state", "dcp_size",
    "moe_a2a_backend", "ep_size", "enable_two_batch_overlap", "enable_symm_mem", "enable_hierarchical_cache",
    "int8_checkpoint", "int8_checkpoint_size", "linear_attn_decode_backend", "dflash_draft_cell",
)
if Launch._fields != _LAUNCH_FIELDS:
    raise ImportError(f"Launch's fields changed: update resolve()'s positional return and _LAUNCH_FIELDS ({Launch._fields})")
