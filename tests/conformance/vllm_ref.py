"""Reference oracle for the vLLM engine: one vLLM release's OWN start-up sizing functions, run
on the CPU in a subprocess whose PYTHONPATH starts with that release's unpacked sources
(`vllm_wheels.release_source`) and its light pure-Python dependencies (`vllm_wheels.deps_dir`);
torch (CPU) comes from the venv.

Run as `python vllm_ref.py` with a JSON list of cases on stdin; prints one JSON result per case.

vLLM's own code that runs, per case:
* the model class's `get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config`
  (the real class from `vllm.model_executor.models.<module>`), after the architecture's config
  hook (`MODELS_CONFIG_MAP[arch].verify_and_update_config`, e.g. NemotronH's float32 SSM state);
* `Platform.update_block_size_for_backend` (so `_align_hybrid_block_size`): block size, padding;
* `MambaBase.get_kv_cache_spec` (the layer spec: block size, padded page, cache mode,
  speculative blocks) and `FullAttentionSpec`;
* `get_global_kv_cache_groups` + `get_kv_cache_configs` over one spec dict per PP worker with the
  case's available bytes (grouping, the one-request check and its message, num_blocks, the
  minimum over workers), `generate_scheduler_kv_cache_config` and `get_kv_cache_capacity`
  (the "GPU KV cache size" / "Maximum concurrency" figures; 0.20's old token figure is
  restated from its two-line log function, which also logs);
* NOT run here: the max_num_seqs start-up check (`CompilationConfig.resolve_cudagraph_mode_and_sizes`
  needs the model runner's CUDA-graph resolution); the plan compares max_num_seqs with num_blocks,
  which this oracle does check, and tests/solver/test_vllm_bootlogs.py checks its text against
  the public error reports.

Stood in (device probes and objects that need a GPU or a downloaded checkpoint):
* the device: `VllmConfig(device_config=DeviceConfig(device="cuda"))`, the hybrid KV-cache
  manager left on (`disable_hybrid_kv_cache_manager = False`: on a CPU host vLLM cannot tell the
  platform and turns it off), the layout LBNHC (what `resolve_kv_cache_layout` picks on CUDA);
* the attention backend: `Platform._find_non_ssm_backends` (`_find_non_ssm_backend` before 0.30) returns a FlashAttention-shaped
  stand-in (kernel blocks: multiples of 16, no packing), what SM80-SM120 FlashAttention declares;
* the layers' prefill checkpoint alignment (`get_mamba_prefill_checkpoint_alignment` reads the
  built layers): the case's value (64 for FlashInfer GDN prefill on SM90, 1 for Mamba2), and the
  layer classes' `get_kv_cache_spec` override that adds one checkpoint block (GDN with FlashInfer
  prefill from 0.33, Mamba2 from 0.32) is applied as `replace(spec, num_prefill_checkpoint_blocks=1)`
  because the mixer objects cannot be built without CUDA kernels;
* ModelConfig: a namespace with the attributes read (max_model_len, dtype, KV heads per rank
  `max(1, heads // tp)` as `ModelConfig.get_num_kv_heads` computes, head size, the HF config as
  a transformers config object built from the checkpoint's config.json).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import types
from dataclasses import replace

logging.disable(logging.CRITICAL)

import torch  # noqa: E402
import transformers  # noqa: E402
import vllm  # noqa: E402,F401

MODULES = {
    "Qwen3NextForCausalLM": ("qwen3_next", "Qwen3NextForCausalLM"),
    "NemotronHForCausalLM": ("nemotron_h", "NemotronHForCausalLM"),
    "GraniteMoeHybridForCausalLM": ("granitemoehybrid", "GraniteMoeHybridForCausalLM"),
    "FalconH1ForCausalLM": ("falcon_h1", "FalconH1ForCausalLM"),
    "Lfm2ForCausalLM": ("lfm2", "Lfm2ForCausalLM"),
    # Qwen3.5 / 3.6: the architecture's own config hook runs (MODELS_CONFIG_MAP, the HF
    # mamba_ssm_dtype); the state classmethods are Qwen3-Next's, whose bodies qwen3_5.py repeats
    # (gated_delta_net_state_shape / _dtype over the same hf_text_config fields): qwen3_5.py
    # itself imports torchvision, which has no build for the venv's CPU torch.
    "Qwen3_5ForConditionalGeneration": ("qwen3_next", "Qwen3NextForCausalLM"),
    "Qwen3_5MoeForConditionalGeneration": ("qwen3_next", "Qwen3NextForCausalLM"),
}
DT = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _hf(raw: dict):
    mt = raw.get("model_type")
    try:
        return transformers.AutoConfig.for_model(str(mt), **{k: v for k, v in raw.items() if k != "model_type"})
    except Exception:
        return types.SimpleNamespace(**raw)


def _imports():
    from vllm.config import VllmConfig
    from vllm.config.device import DeviceConfig

    return VllmConfig, DeviceConfig


def run_case(c: dict) -> dict:
    import importlib

    from vllm.model_executor.layers.mamba import abstract as mamba_abstract
    from vllm.model_executor.layers.mamba.abstract import MambaBase
    from vllm.model_executor.models import ModelRegistry
    from vllm.model_executor.models.config import MODELS_CONFIG_MAP
    from vllm.platforms.interface import Platform
    from vllm.v1.attention.backend import MultipleOf
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

    try:
        from vllm.v1.core import kv_cache_planning as planning
    except ImportError:  # before 0.33 the planning functions live in kv_cache_utils
        planning = kv_cache_utils
    VllmConfig, DeviceConfig = _imports()

    module, cls_name = MODULES[c["architecture"]]
    model_cls = getattr(importlib.import_module(f"vllm.model_executor.models.{module}"), cls_name)
    hf = _hf(c["hf_config"])
    tp, pp = c["tp"], c["pp"]
    vc = VllmConfig(device_config=DeviceConfig(device="cuda"))
    vc.scheduler_config.disable_hybrid_kv_cache_manager = False
    with contextlib.suppress(Exception):
        vc.cache_config.kv_cache_layout = "LBNHC"
    vc.parallel_config.tensor_parallel_size = tp
    vc.parallel_config.pipeline_parallel_size = pp
    heads = c["num_kv_heads"]
    mc = types.SimpleNamespace(
        max_model_len=c["max_model_len"], original_max_model_len=c["max_model_len"], supports_kv_cache_grouping=False,
        is_hybrid=True, use_mla=False, dtype=DT[c["model_dtype"]], architecture=c["architecture"],
        get_num_kv_heads=lambda _pc: max(1, heads // tp), get_head_size=lambda: c["head_size"],
        hf_config=hf, hf_text_config=hf, is_attention_free=False, runner_type="generate",
    )
    vc.model_config = mc
    cc = vc.cache_config
    cc.block_size = c["block_size"]
    cc.user_specified_block_size = c["user_block_size"]
    cc.cache_dtype = c["kv_cache_dtype"]
    cc.mamba_cache_dtype = c["mamba_cache_dtype"]
    cc.mamba_ssm_cache_dtype = c["mamba_ssm_cache_dtype"]
    cc.enable_prefix_caching = c["align"]
    cc.mamba_cache_mode = "align" if c["align"] else "none"
    cc.mamba_block_size = cc.block_size if c["align"] else c["max_model_len"]
    cc.num_gpu_blocks_override = c.get("override")
    hook = MODELS_CONFIG_MAP.get(c["architecture"])
    if hook is not None:
        hook.verify_and_update_config(vc)

    class Backend:
        @staticmethod
        def get_supported_kernel_block_sizes():
            return [MultipleOf(16)]

        @staticmethod
        def customize_spec(spec):
            return spec

        @staticmethod
        def get_name():
            return "FLASH_ATTN"

        @staticmethod
        def supports_block_size(_b):
            return True

        @classmethod
        def get_preferred_block_size(cls, default):
            return default

    Platform._find_non_ssm_backends = classmethod(lambda cls, _vc: [Backend])
    Platform._find_non_ssm_backend = classmethod(lambda cls, _vc: Backend)  # before 0.30: one backend
    ModelRegistry.resolve_model_cls = lambda *a, **k: (model_cls, c["architecture"])
    mamba_abstract.get_mamba_prefill_checkpoint_alignment = lambda _vc: c["checkpoint_alignment"]
    Platform.update_block_size_for_backend(vc)
    if c["align"]:
        cc.mamba_block_size = cc.block_size

    shapes = model_cls.get_mamba_state_shape_from_config(vc)
    dtypes = model_cls.get_mamba_state_dtype_from_config(vc)
    raw_page = MambaSpec(shapes=tuple(shapes), dtypes=tuple(dtypes), block_size=-1).page_size_bytes
    stub = types.SimpleNamespace(
        get_state_shape=lambda: shapes, get_state_dtype=lambda: dtypes, state_alignment=1,
        mamba_type=None, is_kv_cache_tp_replicated=False,
    )
    mspec = MambaBase.get_kv_cache_spec(stub, vc)
    if c["checkpoint_block"]:
        mspec = replace(mspec, num_prefill_checkpoint_blocks=1)
    kv_dtype = DT[c["model_dtype"]] if c["kv_cache_dtype"] == "auto" else torch.float8_e4m3fn
    aspec = FullAttentionSpec(block_size=cc.block_size, num_kv_heads=max(1, heads // tp), head_size=c["head_size"], dtype=kv_dtype)

    workers = []
    for stage in c["stages"]:
        spec = {}
        for lid in stage:
            if lid in c["mamba_layers"]:
                spec[f"model.layers.{lid}.mixer"] = mspec
            if lid in c["attention_layers"]:
                spec[f"model.layers.{lid}.self_attn.attn"] = aspec
        workers.append(spec)
    out = {"block_size": cc.block_size, "mamba_page_raw": raw_page, "page": mspec.page_size_bytes,
           "attn_page": aspec.page_size_bytes, "shapes": [list(s) for s in shapes], "dtypes": [str(d) for d in dtypes]}
    try:
        if hasattr(planning, "get_global_kv_cache_groups"):
            groups = planning.get_global_kv_cache_groups(vc, workers)
            configs = planning.get_kv_cache_configs(vc, workers, c["available"], groups)
        else:
            configs = planning.get_kv_cache_configs(vc, workers, c["available"])
    except ValueError as exc:
        out["error"] = str(exc)
        return out
    sched = kv_cache_utils.generate_scheduler_kv_cache_config(configs)
    out["num_blocks"] = sched.num_blocks
    out["groups"] = sorted(len(g.layer_names) for g in configs[0].kv_cache_groups)
    out["num_groups"] = len(sched.kv_cache_groups)
    if hasattr(kv_cache_utils, "get_kv_cache_capacity"):
        out["tokens"], out["concurrency"] = kv_cache_utils.get_kv_cache_capacity(vc, sched)
    else:  # 0.20: the figures exist only inside the logging function; read them off its log
        lines: list[str] = []

        class Recorder:  # stands in for the module's logger: records each message as formatted
            def __getattr__(self, _name):
                return lambda msg, *a, **_k: lines.append(msg % a if a else msg)

        saved, kv_cache_utils.logger = kv_cache_utils.logger, Recorder()
        fn = getattr(kv_cache_utils, "_report_kv_cache_config", None) or kv_cache_utils.report_kv_cache_config
        try:
            fn(vc, sched)
        finally:
            kv_cache_utils.logger = saved
        out["log"] = "\n".join(ln for ln in lines if "KV cache size" in ln or "Maximum concurrency" in ln)
        out["concurrency"] = kv_cache_utils.get_max_concurrency_for_kv_cache_config(vc, sched)
    return out


def main() -> None:
    cases = json.load(sys.stdin)
    for c in cases:
        try:
            res = run_case(c)
        except Exception as exc:  # reported, never hidden: the test fails on it
            import traceback
            res = {"crash": f"{type(exc).__name__}: {exc} | " + traceback.format_exc()[-600:]}
        print(json.dumps(res))


if __name__ == "__main__":
    main()
