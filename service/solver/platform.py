"""The device-dependent half of SGLang 0.5.23's flag resolution: what changes when the GPU is
not a CUDA Hopper part. launch.py asks this module at four small call sites (the attention
backend and the page size it forces, the page-size constraints of that backend, the
prefill CUDA graph, the HIP mem_fraction_static factor); everything else resolves the same
on every platform (the capacity brackets of `memory_hook.handle_gpu_memory_settings` read
the capacity, not the architecture).

The facts come from the catalog part (gpus.py): the compute capability and the runtime,
from which SGLang's own `utils/common.py` probes derive `is_hopper_with_cuda_12_3` (SM 9.x,
CUDA >= 12.3), `is_sm100_supported` (SM 10.x, CUDA >= 12.8: B200, GB200, B300, GB300),
`is_sm120_supported` (SM 12.x), `is_blackwell_supported` (SM 10/11/12), `is_hip`
(`torch.version.hip` set) and FlashInfer's presence (a CUDA build ships it; ROCm does not).

Rules, with where SGLang holds them:

* default attention backend (`arg_groups/overrides.py:_attention_backend_default` ->
  `model_override_base.py:get_default_attn_backend`): MHA: FA3 on Hopper without a
  speculative tree; trtllm_mha on SM100 without a tree and unless speculative decoding
  leaves topk unset; aiter on HIP; FlashInfer elsewhere. MLA: FA3 on Hopper, FlashInfer on
  SM100, aiter on HIP only with 16 or 128 KV heads (never for the hybrids' MLA: 1), triton
  elsewhere;
* model overrides, before that default (`arg_groups/model_overrides/`):
  `nemotron_h.py` (Blackwell: with speculative decoding trtllm_mha + page 64 + extra_buffer on
  SM100 when topk is unset or 1, else triton; without, trtllm_mha on SM100), `qwen3_5.py`
  (SM100: triton page 1, or trtllm_mha page 64 when the default would be trtllm_mha and the
  launch is not "radix on, no extra_buffer, no speculative decoding"; this page replaces the
  user's), `falcon_h1.py` (SM100: triton), `lfm2.py` / `granitemoehybrid.py` (SM100:
  FlashInfer), `kimi_k3.py` (SM100/SM103 without DCP: trtllm_mla for prefill and decode; with
  DCP see dcp.py);
* page constraints (`overrides.py:_mla_backend_page_constraints`): trtllm_mla and
  cutedsl_mla take 32 or 64, else 64; trtllm_mha takes 16, 32, 64 or 128, else 64;
* `overrides.py:_page_size_default`: 64 on HIP with SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d;
* `model_executor/cuda_graph_config.py:default_prefill_backend`: the breakable prefill graph
  only on CUDA (so no prefill-graph reserve in the automatic mem_fraction_static off CUDA);
* `attention_hook.py:handle_attention_backend_compatibility`: aiter with context_len > 8192
  multiplies mem_fraction_static by 0.85, an explicit one too unless
  SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set.

Conformance: tests/conformance/test_platform_resolution.py runs SGLang's own resolution with
the device probes answering as each catalog GPU. Pure: no torch, no sglang.
"""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service.solver import gpus
from mambasizer.service.solver.layout import ModelLayout

AITER_CONTEXT_THRESHOLD = 8192
AITER_MEM_FRACTION_FACTOR = 0.85
VECTORIZED_5D_PAGE = 64
TRTLLM_MLA_PAGES = (32, 64)
TRTLLM_MHA_PAGES = (16, 32, 64, 128)
TRTLLM_DEFAULT_PAGE = 64

# Model-override registrations (architectures) of SGLang 0.5.23's model_overrides/.
NEMOTRON_H_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Omni_Reasoning_V3"})
QWEN3_5_OVERRIDE_ARCHS = frozenset({
    "Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
})
FALCON_H1_ARCHS = frozenset({"FalconH1ForCausalLM"})
LFM2_ARCHS = frozenset({"Lfm2ForCausalLM", "Lfm2MoeForCausalLM"})
KIMI_K3_ARCHS = frozenset({"KimiK3ForConditionalGeneration"})


class Platform(NamedTuple):
    """The facts SGLang's resolution reads off the device."""

    name: str  # the catalog part (or "hopper (assumed)")
    architecture: str
    capability: tuple[int, int]
    runtime: gpus.Runtime

    @property
    def is_hip(self) -> bool:
        return self.runtime == "hip"

    @property
    def is_cuda(self) -> bool:
        return self.runtime == "cuda"

    @property
    def is_hopper(self) -> bool:  # is_hopper_with_cuda_12_3
        return self.is_cuda and self.capability[0] == 9

    @property
    def is_sm100(self) -> bool:
        return self.is_cuda and self.capability[0] == 10

    @property
    def device_sm(self) -> int:
        return self.capability[0] * 10 + self.capability[1]

    @property
    def is_blackwell(self) -> bool:
        return self.is_cuda and self.capability[0] in (10, 11, 12)

    @property
    def has_flashinfer(self) -> bool:
        return self.is_cuda


def of_gpu(gpu: gpus.Gpu) -> Platform:
    return Platform(gpu.name, gpu.architecture, gpu.capability, gpu.runtime)


# What a request that names no GPU is resolved on (the project's rules before the catalog grew).
HOPPER = of_gpu(gpus.CATALOG[gpus.DEFAULT_GPU])


def _topk_none_or_one_unpaged(args: ServerArgs) -> bool:
    """`is_no_spec_infer_or_topk_one`, read before the speculative defaults apply."""
    topk = args.speculative_eagle_topk
    return topk is None or (topk == 1 and args.page_size in (None, 1))


def generic_default_backend(layout: ModelLayout, args: ServerArgs, plat: Platform) -> str:
    """`get_default_attn_backend` (no model override)."""
    if layout.kv.kind == "mla":
        if plat.is_hopper:
            return "fa3"
        if plat.is_sm100:
            return "flashinfer"
        if plat.is_hip and kv_heads_per_rank(layout, args.tp_size) in (16, 128):
            return "aiter"  # aiter's MLA kernels take 16 or 128 heads only
        return "triton"
    if plat.is_hopper and _topk_none_or_one_unpaged(args):
        return "fa3"
    if plat.is_sm100 and _topk_none_or_one_unpaged(args) and (args.speculative_algorithm is None or args.speculative_eagle_topk is not None):
        return "trtllm_mha"
    if plat.is_hip:
        return "aiter"
    return "flashinfer" if plat.has_flashinfer else "triton"


# `ModelConfig.get_total_num_kv_heads`: the first of these the text config sets, else its
# num_attention_heads.
_KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups")
PAGE_TREE_SPEC_BACKENDS = ("flashinfer", "fa3", "triton")


def kv_heads_per_rank(layout: ModelLayout, tp_size: int) -> int:
    """`ModelConfig.get_num_kv_heads(tp_size)` (no DCP)."""
    text = layout.hf_text_config or {}
    total = next((text[k] for k in _KV_HEAD_KEYS if text.get(k) is not None), text.get("num_attention_heads") or 1)
    return max(1, int(total) // max(tp_size, 1))


class LinearAttnBackends(NamedTuple):
    decode: str
    verify: str
    prefill: str
    rejection: tuple[str, str] | None  # SGLang's first refusal, (exception, message)
    warning: str | None = None


def linear_attn_backends(args: ServerArgs, plat: Platform) -> LinearAttnBackends:
    """`attention_hook.handle_linear_attn_backend`, up to its ReplaySSM checks: the decode
    backend (FlashInfer's GDN decode on SM100 with a bf16 SSM state asked by --mamba-ssm-dtype
    when none is named; flashkda inherited from the base falls back to triton), the verify
    backend (flashinfer after a flashinfer decode), and the refusals on SM100+."""
    base = args.linear_attn_backend
    decode = args.linear_attn_decode_backend
    if decode is None and base != "helion" and plat.is_sm100 and args.mamba_ssm_dtype == "bfloat16":
        decode = "flashinfer"
    decode = decode or base
    sm100_plus = plat.is_cuda and plat.capability[0] >= 10
    verify = args.linear_attn_verify_backend
    prefill = args.linear_attn_prefill_backend or base

    def out(rejection: tuple[str, str] | None, warning: str | None = None) -> LinearAttnBackends:
        return LinearAttnBackends(decode or base, verify or ("flashinfer" if decode == "flashinfer" else "triton"), prefill, rejection, warning)

    if decode == "flashkda":
        if args.linear_attn_decode_backend == "flashkda":
            message = ("--linear-attn-decode-backend flashkda is not supported: FlashKDA is prefill-only. Use "
                       "--linear-attn-prefill-backend flashkda (decode stays on triton).")
            return out(("ValueError", message))
        decode = "triton"
    if decode == "flashinfer" and args.mamba_ssm_dtype != "bfloat16" and sm100_plus:
        return out(("ValueError", f"--linear-attn-decode-backend flashinfer on SM100+ requires --mamba-ssm-dtype bfloat16, got {args.mamba_ssm_dtype!r}"))
    if verify is None and decode == "flashinfer":
        verify = "flashinfer"
    if verify == "flashinfer" and args.mamba_ssm_dtype != "bfloat16" and sm100_plus:
        return out(("ValueError", f"--linear-attn-verify-backend flashinfer on SM100+ requires --mamba-ssm-dtype bfloat16, got {args.mamba_ssm_dtype!r}"))
    warning = None
    if prefill == "flashinfer" and sm100_plus:
        # SGLang reads torch.version.cuda, which the catalog does not hold.
        warning = ("--linear-attn-prefill-backend flashinfer on SM100+ needs a CUDA 13+ build of SGLang: a CUDA 12 build refuses "
                   "it at launch (ValueError)")
    return out(None, warning)


class BackendChoice(NamedTuple):
    backend: str
    page_size: int | None  # the page a model override sets (None: the user's stays)
    replaces_page: bool = False  # the override's page replaces even a page the user gave
    strategy: str | None = None  # the radix strategy a model override sets when it was auto


def default_backend(layout: ModelLayout, args: ServerArgs, plat: Platform) -> BackendChoice:
    """The attention (decode) backend SGLang picks when `--attention-backend` is unset: the
    model override of the architecture first, then `get_default_attn_backend`."""
    return model_override(layout, args, plat) or BackendChoice(generic_default_backend(layout, args, plat), None)


def deterministic_backend(plat: Platform) -> str:
    """`_deterministic_attention_backend` with no backend set (the hybrids are not DeepSeek
    models): flashinfer on SM100 / SM120, fa3 elsewhere."""
    return "flashinfer" if plat.is_sm100 or (plat.is_cuda and plat.capability[0] == 12) else "fa3"


def override_splits_backends(layout: ModelLayout, choice: BackendChoice) -> bool:
    """Kimi-K3's SM100 override sets --prefill/--decode-attention-backend, not
    --attention-backend (`model_overrides/kimi_k3.py`)."""
    return layout.architecture in KIMI_K3_ARCHS and choice.backend == "trtllm_mla"


def model_override(layout: ModelLayout, args: ServerArgs, plat: Platform) -> BackendChoice | None:
    """The backend a model override of the architecture sets, or None."""
    arch = layout.architecture
    if arch in NEMOTRON_H_ARCHS and plat.is_blackwell:
        if args.speculative_algorithm is not None:
            if plat.is_sm100 and args.speculative_eagle_topk in (None, 1):
                strategy = "extra_buffer" if args.mamba_radix_cache_strategy == "auto" else None
                return BackendChoice("trtllm_mha", TRTLLM_DEFAULT_PAGE if args.page_size is None else None, strategy=strategy)
            return BackendChoice("triton", None)
        if plat.is_sm100:
            return BackendChoice("trtllm_mha", None)
    if arch in QWEN3_5_OVERRIDE_ARCHS and plat.is_sm100:
        plain = not args.disable_radix_cache and args.mamba_radix_cache_strategy not in ("extra_buffer", "extra_buffer_lazy") and args.speculative_algorithm is None
        if generic_default_backend(layout, args, plat) == "trtllm_mha" and not plain:
            return BackendChoice("trtllm_mha", TRTLLM_DEFAULT_PAGE, replaces_page=True)
        return BackendChoice("triton", 1, replaces_page=True)
    if plat.is_sm100:
        if arch in FALCON_H1_ARCHS:
            return BackendChoice("triton", None)
        if arch in LFM2_ARCHS or (arch == "GraniteMoeHybridForCausalLM" and layout.mamba_layer_ids):
            return BackendChoice("flashinfer", None)
        if arch in KIMI_K3_ARCHS and plat.device_sm in (100, 103) and args.dcp_size <= 1 and args.speculative_algorithm != "DSPARK":
            return BackendChoice("trtllm_mla", None)
    return None


def constrained_page(backend: str, page: int | None) -> int | None:
    """`_mla_backend_page_constraints`: the page a TensorRT-LLM backend forces."""
    if backend in ("trtllm_mla", "cutedsl_mla") and page not in TRTLLM_MLA_PAGES:
        return TRTLLM_DEFAULT_PAGE
    if backend == "trtllm_mha" and page not in TRTLLM_MHA_PAGES:
        return TRTLLM_DEFAULT_PAGE
    return page


def default_page(plat: Platform, env: Env) -> int:
    """`_page_size_default` when nothing set the page."""
    if plat.is_hip and env.SGLANG_AITER_KV_CACHE_LAYOUT.lower() == "vectorized_5d":
        return VECTORIZED_5D_PAGE
    return 1


def prefill_graph_default_on(plat: Platform) -> bool:
    """`default_prefill_backend`: BREAKABLE on CUDA, DISABLED elsewhere."""
    return plat.is_cuda


def aiter_mem_fraction(mfs: float, backend: str, context_len: int, explicit: bool, env: Env) -> float:
    """`handle_attention_backend_compatibility`'s aiter workspace factor."""
    if backend != "aiter" or context_len <= AITER_CONTEXT_THRESHOLD:
        return mfs
    if explicit and env.SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION:
        return mfs
    return mfs * AITER_MEM_FRACTION_FACTOR
