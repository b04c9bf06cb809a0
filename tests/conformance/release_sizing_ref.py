"""Reference oracle for older releases: one SGLang release's OWN start-up sizing methods, run
on the CPU in a subprocess whose PYTHONPATH starts with `release_source(version)`.

Run as `python release_sizing_ref.py <version>` with a JSON list of cases on stdin; prints one
JSON result per case (K, S, tokens, max_running_requests, or the exception SGLang raised).

Only the sizing modules are loaded from the release's files, under their own names:
`model_executor/model_runner_kv_cache_mixin.py` (every release up to 0.5.15) and
`model_executor/pool_configurator.py` (0.5.11+). Every other `sglang.*` module they import is a
stand-in (a module whose attributes are inert classes), and the release's methods run on a
stand-in ModelRunner holding the resolved launch values. One shim per code era:

* <= 0.5.9 (`init_memory_pool`): the mixin's own init_memory_pool runs until it builds the
  request pool; the pool's constructor records `size` (the release's max_num_reqs) and stops
  it. The model runner's following clamp, `max_running_requests = min(tokens // 2 if mrr is
  None else mrr // dp, pool)` (model_runner.py, in the middle of ModelRunner.initialize), is
  restated here in one line: it cannot run without the whole runner.
* 0.5.10 (`_resolve_memory_pool_config`), 0.5.11-0.5.15 (the same entry, which calls
  `DefaultPoolConfigurator` through the release's `create_memory_pool_configurator`).

Stood in: `get_available_gpu_memory` (returns the case's free GiB after the load), the world
group (world_size 1), the PP all-reduce (two passes: each stage's capacity recorded, then the
MIN returned), and the per-layer KV cell (`get_cell_size_per_token` / `_compute_cell_size`
return layers * the case's per-layer bytes; the release's own code picks the stage's layers).
`mamba_cache_per_req` is the case's value: its body is byte-identical in all 21 releases and
the 0.5.23 suite checks ours against SGLang's. No SGLang code is copied.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
import types
from pathlib import Path

logging.disable(logging.CRITICAL)


class _Inert:
    """Any stand-in class: constructible with anything. An instance used as a condition
    raises: a stand-in must never decide a branch of the code under test."""

    def __init__(self, *args, **kwargs):
        pass

    def __bool__(self):
        raise AssertionError(f"a stand-in {type(self).__name__} decided a branch: stand in for it explicitly")


class _StandInModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (_Inert,), {})
        setattr(self, name, value)
        return value


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Every `sglang.*` module not loaded from the release's files is a stand-in."""

    def find_spec(self, name, path, target=None):
        if name == "sglang" or name.startswith("sglang."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _StandInModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def _load_file(root: Path, rel: str):
    name = "sglang." + rel[:-3].replace("/", ".")
    spec = importlib.util.spec_from_file_location(name, root / "sglang" / rel)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    for key in list(vars(mod)):
        if key.startswith("_is_") and not callable(getattr(mod, key)):
            setattr(mod, key, False)  # module-level platform probes (_is_npu = is_npu()): CUDA
    return mod


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".post")[0].split("."))


class _World:
    world_size = 1
    cpu_group = None


class _Spec:
    """SpeculativeAlgorithm stand-in: the cases use NGRAM (no draft KV priced into the cell)."""

    def __init__(self, on: bool):
        self.on = on

    def is_none(self):
        return not self.on

    def is_ngram(self):
        return self.on

    def __getattr__(self, name):
        if name.startswith("is_"):
            return lambda: False
        raise AttributeError(name)


class _PoolBuilt(Exception):
    def __init__(self, size):
        self.size = size


class _ServerArgs(types.SimpleNamespace):
    def enable_mamba_extra_buffer(self):
        return self.strategy in ("extra_buffer", "extra_buffer_lazy") and not self.disable_radix_cache

    def enable_mamba_extra_buffer_lazy(self):
        return self.strategy == "extra_buffer_lazy" and not self.disable_radix_cache


def main() -> None:
    version = sys.argv[1]
    root = Path(os.environ["RELEASE_SOURCE"])
    import torch

    sys.meta_path.insert(0, _StandInFinder())
    key = _key(version)
    # The configurator first: the mixin imports its MemoryPoolConfig (whose own check raises
    # "Not enough memory").
    pool_mod = _load_file(root, "srt/model_executor/pool_configurator.py") if key >= (0, 5, 11) else None
    if key >= (0, 5, 16):
        if (root / "sglang/srt/mem_cache/allocation_sizing.py").exists():
            _load_file(root, "srt/mem_cache/allocation_sizing.py")  # get_mamba_tracking_slots (0.5.22+)
        mixin_mod = _load_file(root, "srt/mem_cache/kv_cache_configurator.py")
        era = "kv_cache_configurator"
    else:
        mixin_mod = _load_file(root, "srt/model_executor/model_runner_kv_cache_mixin.py")
        era = "init_memory_pool" if key < (0, 5, 10) else ("mixin" if key < (0, 5, 11) else "mixin+pool_configurator")

    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        try:
            out.append(_run_case(case, mixin_mod, pool_mod, era, torch))
        except _Unsupported as exc:
            out.append({"unsupported": str(exc)})
        except Exception as exc:  # what SGLang raised, compared with the plan's error
            import traceback
            out.append({"exception": type(exc).__name__, "message": str(exc)[:300], "where": traceback.format_exc()[-600:]})
    json.dump({"era": era, "results": out}, sys.stdout)


class _Unsupported(Exception):
    pass


def _run_case(case, mixin_mod, pool_mod, era, torch):
    stages = case["stages"]  # [[start, end], ...]
    pp = len(stages)
    captured: dict = {}
    recorded: list[int] = []

    def all_reduce(tensor, op=None, group=None):
        if captured.get("min") is None:
            recorded.append(int(tensor.item()))
        else:
            tensor.fill_(captured["min"])

    results = []
    for pass_ in ((0, 1) if pp > 1 else (1,)):
        if pass_ == 1 and pp > 1:
            captured["min"] = min(recorded)
        results = []
        for start, end in stages:
            results.append(_run_stage(case, mixin_mod, pool_mod, era, torch, start, end, pp, all_reduce))
    return results[0]


class _Env:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


# `envs`: the defaults of the variables the sizing reads (unset in the deployment).
_ENV_DEFAULTS = {"SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": False, "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING": False,
                 "SGLANG_VLM_CACHE_SIZE_MB": 100, "SGLANG_MM_FEATURE_CACHE_MB": 1024}


class _Envs:
    def __getattr__(self, name):
        if name not in _ENV_DEFAULTS:
            raise AttributeError(f"envs.{name} is read: give its default in _ENV_DEFAULTS")
        return _Env(_ENV_DEFAULTS[name])


class _Bag(_ServerArgs):
    """The resolved launch values every runtime-context getter (get_schedule(), get_memory(),
    get_spec(), get_exec(), get_parallel(), ...) and ServerArgs answer from; a read of a name
    not set raises AttributeError, so a new read in a release cannot get a silent default."""

    def override(self, _name, **values):  # get_context().override("mamba_pool.x", k=v)
        for k, v in values.items():
            setattr(self, k, v)


def _context(case, sa, pp, rank):
    off = {"enable_linear_replayssm": False, "enable_linear_replayssm_spec": False, "linear_replayssm_cache_len": 16,
           "enable_mamba_extra_buffer": sa.enable_mamba_extra_buffer(),
           "enable_mamba_extra_buffer_lazy": sa.enable_mamba_extra_buffer_lazy()}
    bag = _Bag(
        **vars(sa), mamba=_Bag(**off), features=_Bag(enable_memory_saver=False),
        kernel=_Bag(dsa_prefill_backend=None, dsa_decode_backend=None, attention_backend="fa3"),
        world_group=_World(), graph=_Bag(cuda_graph_config=_Bag(prefill=_Bag(full_prefill_max_req=None, backend=None))),
        speculative_algorithm="NGRAM" if case["num_draft_tokens"] is not None else None,
        speculative_eagle_topk=None, speculative_num_steps=None, speculative_draft_kv_cache_dtype=None,
        speculative_draft_attention_backend=None, max_speculative_num_draft_tokens=None,
        enable_hisparse=False, prefill_only_disable_kv_cache=False, enable_page_major_kv_layout=False,
        enable_pdmux=False, enable_unified_memory=False, disaggregation_decode_extra_slots=0,
        attn_dcp_size=1, dcp_enabled=False, mm_feature_transport=None, qsa_indexer_dtype=None, kv_cache_dtype="auto",
        enable_hierarchical_cache=False, prefill_max_requests=None, pp_size=pp, pp_rank=rank,
        attn_tp_size=1, attn_dp_size=case["attn_dp"], tp_size=1, launch_world_size=pp,
    )
    return bag


def _run_stage(case, mixin_mod, pool_mod, era, torch, start, end, pp, all_reduce):
    if era == "kv_cache_configurator":
        return _run_configurator_stage(case, mixin_mod, pool_mod, torch, start, end, pp, all_reduce)
    cell_per_layer = case["cell_per_layer"]
    sa = _ServerArgs(
        max_running_requests=case["max_running_requests"], max_total_tokens=case["max_total_tokens"],
        max_mamba_cache_size=case["max_mamba_cache_size"], disable_radix_cache=case["disable_radix_cache"],
        strategy=case["strategy"], disable_overlap_schedule=case["disable_overlap_schedule"],
        mamba_full_memory_ratio=case["mamba_full_memory_ratio"], page_size=case["page_size"],
        speculative_num_draft_tokens=case["num_draft_tokens"], enable_dp_attention=case["attn_dp"] > 1,
        dp_size=case["attn_dp"], mem_fraction_static=case["mem_fraction_static"],
        disaggregation_mode="null", enable_memory_saver=False, draft_runner_cache_size=None, max_num_reqs=None,
    )
    params = types.SimpleNamespace(mamba_cache_per_req=case["per_req"], layers=case["mamba_layer_ids"])
    mambaish = types.SimpleNamespace(full_attention_layer_ids=case["full_attention_layer_ids"], mamba2_cache_params=params)
    Mixin = mixin_mod.ModelRunnerKVCacheMixin

    class Runner(Mixin):
        pass

    r = Runner()
    r.server_args = sa
    r.mambaish_config = mambaish
    r.model_config = types.SimpleNamespace(context_len=case["context_len"], num_hidden_layers=case["num_hidden_layers"],
                                           hf_config=types.SimpleNamespace(architectures=[case.get("architecture", "Qwen3NextForCausalLM")]))
    r.spec_algorithm = _Spec(case["num_draft_tokens"] is not None)
    r.dp_size = case["attn_dp"]
    r.pp_size = pp
    r.start_layer, r.end_layer = start, end
    r.mem_fraction_static = case["mem_fraction_static"]
    r.is_draft_worker = False
    r.is_hybrid_swa = False
    r.req_to_token_pool = None
    r.device, r.gpu_id = "cuda", 0
    r.kv_cache_dtype = torch.bfloat16
    r.get_cell_size_per_token = lambda num_layers: num_layers * cell_per_layer

    free_after = case["free_gib_after_load"]
    mixin_mod.get_available_gpu_memory = lambda *a, **k: free_after
    mixin_mod.get_world_group = lambda: _World()
    saved = torch.distributed.all_reduce
    torch.distributed.all_reduce = all_reduce
    try:
        if era == "init_memory_pool":

            def capture(*args, size=None, **kwargs):
                raise _PoolBuilt(size)

            mixin_mod.HybridReqToTokenPool = capture
            try:
                r.init_memory_pool(case["free_gib_before_load"])
            except _PoolBuilt as built:
                pool = built.size
            else:
                raise AssertionError("init_memory_pool returned without building the request pool")
            tokens = r.max_total_num_tokens
            mrr = sa.max_running_requests
            # model_runner.py, restated: the clamp after init_memory_pool.
            n = min(tokens // 2 if mrr is None else mrr // (sa.dp_size if sa.enable_dp_attention else 1), pool)
            ratio = None
        else:
            if pool_mod is not None:
                pool_mod.get_attention_tp_size = lambda: 1
                pool_mod.is_deepseek_v4 = lambda hf: False
                pool_mod.DefaultPoolConfigurator._compute_cell_size = lambda self, mr, num_layers: num_layers * cell_per_layer
            config = r._resolve_memory_pool_config(case["free_gib_before_load"])
            tokens, n = config.max_total_num_tokens, config.max_running_requests
            ratio = r._calculate_mamba_ratio()
    finally:
        torch.distributed.all_reduce = saved
    return {"max_mamba_cache_size": sa.max_mamba_cache_size, "max_total_num_tokens": tokens,
            "max_running_requests": n, "mamba_ratio": ratio}


def _run_configurator_stage(case, kvc_mod, pool_mod, torch, start, end, pp, all_reduce):
    """0.5.16+: KVCacheConfigurator's own `_resolve_memory_pool_config` on a configurator
    built without its __post_init__ (which derives the hybrid configs from a ModelConfig),
    the hybrid configs and the runtime context given instead."""
    cell_per_layer = case["cell_per_layer"]
    rank = [s[0] for s in case["stages"]].index(start)
    sa = _ServerArgs(
        max_running_requests=case["max_running_requests"], max_total_tokens=case["max_total_tokens"],
        max_mamba_cache_size=case["max_mamba_cache_size"], disable_radix_cache=case["disable_radix_cache"],
        strategy=case["strategy"], disable_overlap_schedule=case["disable_overlap_schedule"],
        mamba_full_memory_ratio=case["mamba_full_memory_ratio"], page_size=case["page_size"],
        speculative_num_draft_tokens=case["num_draft_tokens"], mem_fraction_static=case["mem_fraction_static"],
        disaggregation_mode="null", enable_dp_attention=case["attn_dp"] > 1, dp_size=case["attn_dp"],
    )
    ctx = _context(case, sa, pp, rank)
    for name in ("get_schedule", "get_memory", "get_spec", "get_exec", "get_parallel", "get_disagg", "get_mm", "get_model"):
        setattr(kvc_mod, name, lambda ctx=ctx: ctx)
        setattr(pool_mod, name, lambda ctx=ctx: ctx)
    kvc_mod.get_context = lambda: ctx
    # runtime_context's derived getters (0.5.18+), answered from the resolved values.
    kvc_mod.configured_pp_size = lambda: pp
    kvc_mod.mamba_extra_buffer_enabled = sa.enable_mamba_extra_buffer
    kvc_mod.mamba_extra_buffer_lazy_enabled = sa.enable_mamba_extra_buffer_lazy
    kvc_mod.get_available_gpu_memory = lambda *a, **k: case["free_gib_after_load"]
    kvc_mod.get_world_group = lambda: _World()
    kvc_mod.get_pp_indices = lambda n, r, size: tuple(case["stages"][r])
    kvc_mod.kimi_linear_config = lambda model_config: None
    kvc_mod.envs = _Envs()
    kvc_mod.gc = types.SimpleNamespace(collect=lambda: 0)  # nothing to collect on a CPU, ~50 ms a call
    pool_mod.is_deepseek_v4 = lambda hf: False
    # 0.5.22+: the page-shard assembly scratch is opt-in (no spec without it): 0 bytes.
    for mod in (kvc_mod, pool_mod):
        mod.compute_page_shard_scratch_bytes = lambda kvc: 0
    pool_mod.envs = _Envs()
    pool_mod.get_attention_tp_size = lambda: 1
    pool_mod.get_parallel = lambda ctx=ctx: ctx
    pool_mod.DefaultPoolConfigurator._compute_cell_size = lambda self, kvc, num_layers: num_layers * cell_per_layer

    params = types.SimpleNamespace(mamba_cache_per_req=case["per_req"], layers=case["mamba_layer_ids"])
    mambaish = types.SimpleNamespace(full_attention_layer_ids=case["full_attention_layer_ids"], mamba2_cache_params=params)
    pool_mod.mambaish_config = lambda model_config: mambaish
    kvc = kvc_mod.KVCacheConfigurator.__new__(kvc_mod.KVCacheConfigurator)
    attrs = dict(
        device="cuda", gpu_id=0, ps=ctx, server_args=ctx, kv_cache_dtype=torch.bfloat16, page_size=case["page_size"],
        spec_algorithm=_Spec(case["num_draft_tokens"] is not None), is_draft_worker=False, post_capture_kv_active=False,
        is_hybrid_swa=False, is_hybrid_swa_compress=False, use_mla_backend=False, draft_model_idx=None,
        memory_pool_config=None, req_to_token_pool=None, token_to_kv_pool_allocator=None,
        mambaish_config=mambaish, kv_cache_dtype_str="bfloat16",
        hybrid_gdn_config=None, is_inkling_mtp_draft=False, draft_swa_full_capacity=False,
        model_config=types.SimpleNamespace(
            context_len=case["context_len"], num_hidden_layers=case["num_hidden_layers"],
            hf_config=types.SimpleNamespace(architectures=[case.get("architecture", "Qwen3NextForCausalLM")]),
            is_multimodal=case["is_multimodal"]),
        extra_mamba_cache_bytes_per_req=0,  # 0.5.22's field default; nothing in srt sets it
        pp_size=pp, attn_dp_size=case["attn_dp"], attn_tp_size=1, pp_rank=rank,
        layer_info=types.SimpleNamespace(start_layer=start, end_layer=end, num_effective_layers=end - start),
        start_layer=start, end_layer=end,
    )
    for k, v in attrs.items():
        slots = getattr(type(kvc), "__slots__", None)
        if slots is None or k in slots:  # a slotted dataclass (0.5.17+) takes its fields only
            object.__setattr__(kvc, k, v)
    saved = torch.distributed.all_reduce
    torch.distributed.all_reduce = all_reduce
    try:
        config = kvc._resolve_memory_pool_config(case["free_gib_before_load"])
    finally:
        torch.distributed.all_reduce = saved
    return {"max_mamba_cache_size": ctx.max_mamba_cache_size, "max_total_num_tokens": config.max_total_num_tokens,
            "max_running_requests": config.max_running_requests, "mamba_ratio": kvc._calculate_mamba_ratio()}


if __name__ == "__main__":
    main()
