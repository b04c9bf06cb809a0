"""Reference oracle: SGLang 0.5.23's OWN start-up sizing functions, run on the CPU.

This module imports the installed `sglang==0.5.23` wheel and calls its real code:

* `ModelConfig` (built from a temp dir holding the request's `config.json`, through SGLang's
  own `get_config`, so the real config classes, `context_len`, `head_dim`, KV heads,
  `attention_arch`, `is_multimodal` and `num_nextn_predict_layers` are used);
* `KVCacheConfigurator` (normal dataclass construction, so its `__post_init__` runs the real
  `mambaish_config` / `hybrid_gdn_config` / `hybrid_kda_config`), and its
  `_profile_available_bytes`, `_handle_max_mamba_cache`, `_calculate_mamba_ratio`,
  `config_from_budget`, `_apply_token_constraints`, `resolve_max_num_reqs`;
* `DefaultPoolConfigurator` (via SGLang's `create_memory_pool_configurator`);
* `resolve_layer_indices` / `get_pp_indices` (with `SGLANG_PP_LAYER_PARTITION` in os.environ);
* `configure_kv_cache_dtype`, `SpeculativeAlgorithm.from_string`, `SpecAuxHiddenStateConfig`,
  the `envs` object (through os.environ).

No SGLang code is copied here. Stand-ins, and only these:

* imports the sizing never runs: `FAKED_MODULES` (GPU/IPC/notebook/vision-tower packages),
  present only while the oracle runs (`_fakes_active`);
* the runtime context (`runtime_context._CONTEXT` / `_PARALLEL`, which every `get_*()` getter
  reads): strict attribute bags holding the resolved launch values; reading a leaf that is not
  set raises, so a new read in the wheel cannot silently get a default;
* `get_available_gpu_memory` (returns the request's free GiB), `gc.collect` inside the
  configurator module (a no-op: nothing to collect on CPU, and it costs ~50 ms a call);
* the PP all-reduce (`torch.distributed.all_reduce`): one configurator per PP stage, run
  twice: first to record each stage's capacity, then with the all-reduce returning the MIN;
* for the `rest_gib` budget form: `mm_runtime_reservation_gb` returns 0.0 (rest_gib is
  already after that reservation), the probe returns rest_gib, `pre_model_load_memory=1.0`
  and `mem_fraction_static=1.0`, so the slack is exactly 0.0 and R0 == rest_gib bit for bit.
* `current_platform` inside `configure_kv_cache_dtype` (this host is a CPU; the service sizes
  CUDA deployments, where fp8_e5m2 KV is allowed), and `configs.qwen3_next._is_cpu` pinned
  False (on a CPU backend Qwen3-Next pads its heads to the TP size; CUDA does not).

Two launch-time steps are re-stated here (one line each), because the code that does them
needs a whole ServerArgs / a loaded draft model: `--mamba-ssm-dtype` is copied into
`SGLANG_MAMBA_SSM_DTYPE` over the environment's value (`serving_hook.
handle_environment_variables`), and the draft KV layers priced under EAGLE-family /
STANDALONE are the request's `draft_model.num_layers`, else the target's
`num_nextn_predict_layers` (`spec_aux_hidden_state._resolve_eagle_aux_hidden_state`).

Internal values that SGLang keeps in locals (R0, the per-stage charge P) are read with
`sys.setprofile` at the call / return of `_handle_max_mamba_cache`, not recomputed.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import json
import logging
import os
import sys
import tempfile
import threading
import types
from typing import Any

# One oracle per process, whichever name imported it first ("sglang_ref" from this folder,
# "tests.conformance.sglang_ref" from the repository root): its fakes and caches are global.
sys.modules.setdefault("sglang_ref", sys.modules[__name__])
sys.modules.setdefault("tests.conformance.sglang_ref", sys.modules[__name__])

# --------------------------------------------------------------------------- import fakes

FAKED_MODULES = (
    "triton",
    "zmq",
    "IPython",
    "aiohttp",
    "torchvision",
    "sentencepiece",
    "tvm_ffi",
    "partial_json_parser",
)

ENV_KEYS = (
    "SGLANG_PP_LAYER_PARTITION",
    "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK",
    "SGLANG_MAMBA_SSM_DTYPE",
    "SGLANG_MAMBA_CONV_DTYPE",
)


class _FakeClassMeta(type):
    """Any attribute of a fake class is another fake class (hashable, subclassable)."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _FakeClassMeta(name, (), {"__init__": _noop_init, "__module__": cls.__module__})
        setattr(cls, name, value)
        return value

    def __iter__(cls):
        return iter(())


def _noop_init(self, *args, **kwargs):
    pass


class _FakeModule(types.ModuleType):
    """A stand-in module: CamelCase attributes are fake classes, the rest fake callables;
    used as a decorator it returns the decorated function unchanged."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name[:1].isupper():
            value = _FakeClassMeta(name, (), {"__init__": _noop_init, "__module__": self.__name__})
        else:
            value = _FakeModule(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _FakeModule(f"{self.__name__}()")

    def __mro_entries__(self, bases):
        return (object,)


class _FakeFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in FAKED_MODULES:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _FakeModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0"
        return module

    def exec_module(self, module):
        pass


_LOCK = threading.RLock()
_SG: types.SimpleNamespace | None = None


_FINDER = _FakeFinder()
_STASHED_FAKES: dict = {}
_TRANSFORMERS_PATCH: dict = {}


def _prime_library_caches() -> None:
    """torch and transformers cache "is package X installed" answers: take them before any
    fake exists, so neither library ever starts using a fake package."""
    import torch  # noqa: F401
    from torch.utils._triton import has_triton_package

    has_triton_package()
    import transformers.utils.import_utils as iu

    for name in dir(iu):
        if name.startswith("is_") and name.endswith("_available"):
            try:
                getattr(iu, name)()
            except Exception:
                pass
    original = iu._is_package_available

    def _is_package_available(pkg_name, return_version=False):
        if pkg_name.split(".")[0] in FAKED_MODULES:
            return (False, "N/A") if return_version else (False, None)
        return original(pkg_name, return_version)

    _TRANSFORMERS_PATCH.update(module=iu, original=original, patched=_is_package_available)


@contextlib.contextmanager
def _fakes_active():
    """The import fakes exist only while the oracle runs: SGLang code imported lazily
    inside the sizing functions still finds them, the rest of the test session does not."""
    with _LOCK:
        if _FINDER in sys.meta_path:  # re-entered
            yield
            return
        iu = _TRANSFORMERS_PATCH["module"]
        sys.meta_path.insert(0, _FINDER)
        sys.modules.update(_STASHED_FAKES)
        iu._is_package_available = _TRANSFORMERS_PATCH["patched"]
        try:
            yield
        finally:
            _deactivate_fakes(iu)


def _deactivate_fakes(iu) -> None:
    iu._is_package_available = _TRANSFORMERS_PATCH["original"]
    sys.meta_path.remove(_FINDER)
    for name in list(sys.modules):
        if name.split(".")[0] in FAKED_MODULES and isinstance(sys.modules[name], _FakeModule):
            _STASHED_FAKES[name] = sys.modules.pop(name)


def _load() -> types.SimpleNamespace:
    """Import the wheel's sizing modules once (about 5 s)."""
    global _SG
    with _LOCK:
        if _SG is not None:
            return _SG
        _prime_library_caches()
        if "sglang" not in sys.modules:
            # A failed `import sglang` elsewhere (without the fakes) leaves half-imported
            # submodules behind, which would break this import: drop them.
            for name in [m for m in sys.modules if m.startswith("sglang.")]:
                del sys.modules[name]
        import warnings

        with warnings.catch_warnings(), _fakes_active():
            warnings.simplefilter("ignore")
            import sglang.srt.configs.qwen3_next as qwen3_next
            import sglang.srt.mem_cache.kv_cache_configurator as kvcm
            import sglang.srt.mem_cache.kv_cache_dtype as kvdt
            import sglang.srt.model_executor.pool_configurator as pcm
            import sglang.srt.runtime_context as rc
            import torch
            from sglang.srt.arg_groups.arg_utils import namespace_of
            from sglang.srt.configs.model_config import AttentionArch, ModelConfig
            from sglang.srt.environ import envs
            from sglang.srt.model_executor.model_runner_components.layer_setup import (
                resolve_layer_indices,
            )
            from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
                SpecAuxHiddenStateConfig,
            )
            from sglang.srt.server_args import ServerArgs
            from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        _SG = types.SimpleNamespace(
            kvcm=kvcm,
            pcm=pcm,
            kvdt=kvdt,
            rc=rc,
            qwen3_next=qwen3_next,
            torch=torch,
            envs=envs,
            ModelConfig=ModelConfig,
            AttentionArch=AttentionArch,
            resolve_layer_indices=resolve_layer_indices,
            SpecAuxHiddenStateConfig=SpecAuxHiddenStateConfig,
            SpeculativeAlgorithm=SpeculativeAlgorithm,
            nsmap=dict(namespace_of(ServerArgs)),
            handle_code=kvcm.KVCacheConfigurator._handle_max_mamba_cache.__code__,
        )
        return _SG


# --------------------------------------------------------------------------- runtime-context fakes


class FakeContextGap(AttributeError):
    """The wheel read a runtime-context leaf the oracle does not stand in for: an oracle
    bug, never reported as SGLang's own error."""


class Bag:
    """A strict attribute bag standing in for one resolved config namespace.

    Reading a leaf that was not set raises AttributeError naming it, so when the wheel
    reads something new the oracle fails loudly instead of inventing a value."""

    def __init__(self, _path: str, **leaves: Any):
        object.__setattr__(self, "_path", _path)
        object.__setattr__(self, "_reads", set())
        self.__dict__.update(leaves)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise FakeContextGap(f"fake runtime context: {self._path}.{name} is not stood in for")

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__


class FakeContext:
    """Stands in for `runtime_context.RuntimeContext`: `config_bag(name)` answers the
    `get_*()` getters; `override(source, **fields)` writes a resolved leaf where SGLang's
    own field->namespace map (`namespace_of(ServerArgs)`) says it lives."""

    def __init__(self, bags: dict, nsmap: dict):
        self._bags = bags
        self._nsmap = nsmap
        self.overrides: list = []

    def config_bag(self, name: str):
        try:
            return self._bags[name]
        except KeyError:
            raise ValueError(f"fake runtime context: namespace {name!r} not stood in for") from None

    def is_config_namespace_published(self, name: str) -> bool:
        return name in self._bags

    def override(self, source: str, **fields) -> None:
        for name, value in fields.items():
            path = self._nsmap[name].split(".")
            bag = self._bags[path[0]]
            for seg in path[1:]:
                bag = getattr(bag, seg)
            if name not in bag:
                raise ValueError(f"fake override: {name!r} not a leaf of {'.'.join(path)}")
            setattr(bag, name, value)
        self.overrides.append((source, dict(fields)))


@contextlib.contextmanager
def _patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


@contextlib.contextmanager
def _environ(env: dict):
    saved = {k: os.environ.get(k) for k in ENV_KEYS}
    try:
        for k in ENV_KEYS:
            os.environ.pop(k, None)
        for k, v in env.items():
            if v is None:
                continue
            if k not in ENV_KEYS:
                raise KeyError(f"unknown env key {k!r}")
            if isinstance(v, bool):
                v = "1" if v else "0"
            os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _WarningCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []
        self._seen: set = set()
        # Records are kept alive for the capture: a freed record's id() is reused by the
        # next one, which would then be taken for a duplicate and dropped.
        self._records: list = []

    def emit(self, record):
        if id(record) in self._seen:  # reached twice (own handler + propagation)
            return
        self._seen.add(id(record))
        self._records.append(record)
        try:
            msg = record.getMessage()
        except Exception:  # pragma: no cover
            msg = str(record.msg)
        if msg not in self.messages:
            self.messages.append(msg)


# The loggers the sizing path warns through: its module loggers, and the root logger that
# `_apply_token_constraints` calls `logging.warning` on.
_WARNING_LOGGERS = (
    "",
    "sglang",
    "sglang.srt.mem_cache.kv_cache_configurator",
    "sglang.srt.model_executor.pool_configurator",
    "sglang.srt.configs.mamba_utils",
)


@contextlib.contextmanager
def _capture_warnings():
    """Every WARNING+ record the sizing path logs, whatever levels, handlers or propagation
    other code in the process configured (levels are lowered to WARNING for the call only)."""
    handler = _WarningCapture()
    saved = []
    for name in _WARNING_LOGGERS:
        lg = logging.getLogger(name)
        saved.append((lg, lg.level, lg.disabled))
        if lg.level > logging.WARNING or (lg.level == logging.NOTSET and lg.getEffectiveLevel() > logging.WARNING):
            lg.setLevel(logging.WARNING)
        lg.disabled = False
        lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg, level, disabled in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.disabled = disabled


# --------------------------------------------------------------------------- model configs


@functools.lru_cache(maxsize=512)
def _model_config_cached(hf_json: str, context_length: int | None):
    sg = _load()
    with tempfile.TemporaryDirectory(prefix="mambasizer-ref-") as td:
        with open(os.path.join(td, "config.json"), "w") as f:
            f.write(hf_json)
        import warnings

        with warnings.catch_warnings(), _fakes_active():
            warnings.simplefilter("ignore")
            # trust_remote_code=False is what `sglang.launch_server` passes unless
            # --trust-remote-code is given (ModelConfig's own default is True). A full config.json
            # carries `auto_map` (the model author's remote classes, not shipped here): SGLang's
            # registered config class for the model_type reads it either way.
            return sg.ModelConfig(td, context_length=context_length, trust_remote_code=False)


def model_config_for(hf_config: dict, context_length: int | None = None):
    """SGLang's real ModelConfig for a config.json dict (cached; treat as read-only)."""
    cleaned = {k: v for k, v in hf_config.items() if not k.startswith("_") and k != "hf_quant_config"}
    return _model_config_cached(json.dumps(cleaned, sort_keys=True), context_length)


# --------------------------------------------------------------------------- the oracle

_INT64_MAX = (1 << 63) - 1


def _dtype_name(dt) -> str:
    return str(dt).replace("torch.", "")


def _resolved_flags(sa: dict) -> dict:
    strategy = sa.get("mamba_radix_cache_strategy", "auto")
    disable_radix = bool(sa.get("disable_radix_cache", False))
    return {
        "enable_mamba_extra_buffer": (not disable_radix)
        and strategy in ("extra_buffer", "extra_buffer_lazy"),
        "enable_mamba_extra_buffer_lazy": (not disable_radix) and strategy == "extra_buffer_lazy",
        "disable_overlap_schedule": bool(sa.get("disable_overlap_schedule", False)),
    }


def _make_context(sg, sa: dict, *, mfs: float, pp_rank: int):
    tp = int(sa.get("tp_size", 1))
    pp = int(sa.get("pp_size", 1))
    dp = int(sa.get("attn_dp_size", 1))
    flags = _resolved_flags(sa)
    spec_name = sa.get("speculative_algorithm")
    D = sa.get("speculative_num_draft_tokens")
    prefill_graph = Bag(
        "exec.graph.cuda_graph_config.prefill", full_prefill_max_req=None, backend=None
    )
    bags = {
        "schedule": Bag(
            "schedule",
            mem_fraction_static=mfs,
            prefill_max_requests=None,
            max_mamba_cache_size=sa.get("max_mamba_cache_size"),
            mamba_full_memory_ratio=(
                sa["mamba_full_memory_ratio"]
                if sa.get("mamba_full_memory_ratio") is not None
                else 0.9
            ),
            max_running_requests=sa.get("max_running_requests"),
            max_total_tokens=sa.get("max_total_tokens"),
            page_size=int(sa.get("page_size") or 1),
            disable_overlap_schedule=flags["disable_overlap_schedule"],
            chunked_prefill_size=sa.get("chunked_prefill_size"),
        ),
        "exec": Bag(
            "exec",
            mamba=Bag(
                "exec.mamba",
                enable_mamba_extra_buffer=flags["enable_mamba_extra_buffer"],
                enable_mamba_extra_buffer_lazy=flags["enable_mamba_extra_buffer_lazy"],
                enable_linear_replayssm_spec=bool(sa.get("enable_linear_replayssm_spec", False)),
                linear_replayssm_cache_len=int(sa.get("linear_replayssm_cache_len", 16)),
            ),
            graph=Bag(
                "exec.graph",
                cuda_graph_config=Bag("exec.graph.cuda_graph_config", prefill=prefill_graph),
            ),
            features=Bag(
                "exec.features",
                aux_hidden_state_capture=None,
                return_aux_hidden_state_layer_ids=None,
            ),
        ),
        "memory": Bag(
            "memory",
            disable_radix_cache=bool(sa.get("disable_radix_cache", False)),
            enable_unified_memory=False,
            enable_hisparse=False,
            enable_kv_cache_sharding=False,
        ),
        "spec": Bag(
            "spec",
            speculative_algorithm=spec_name,
            speculative_num_draft_tokens=D,
            max_speculative_num_draft_tokens=D,
            speculative_draft_attention_backend=sa.get("attention_backend"),
            speculative_draft_model_path=None,
            speculative_draft_kv_cache_dtype=None,
            enable_multi_layer_eagle=False,
        ),
        # The PD role (issue 19): a prefill node skips the speculative intermediate state.
        "disagg": Bag("disagg", disaggregation_mode=sa.get("disaggregation_mode", "null"), enable_pd_role_switch=False),
        "mm": Bag("mm", mm_feature_transport=None),
        "model": Bag(
            "model",
            kv_cache_dtype=sa.get("kv_cache_dtype", "auto"),
            qsa_indexer_dtype=None,
        ),
    }
    parallel = Bag(
        "parallel",
        tp_size=tp,
        pp_size=pp,
        attn_dp_size=dp,
        attn_tp_size=tp // dp,
        attn_cp_size=1,
        attn_dcp_size=int(sa.get("dcp_size", 1)),
        dcp_size=int(sa.get("dcp_size", 1)),
        dcp_enabled=int(sa.get("dcp_size", 1)) > 1,
        enable_cp_tp_group_sharing=False,
        launch_world_size=tp * pp,
        world_group=Bag("parallel.world_group", cpu_group=None),
        pp_rank=pp_rank,
        kv_shard_size=1,
        enable_kv_cache_sharding=False,
        enable_dsa_cache_layer_split=False,
    )
    return FakeContext(bags, sg.nsmap), parallel


class _LocalsProbe:
    """Reads `_handle_max_mamba_cache`'s argument and final locals via sys.setprofile."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.entry: dict | None = None
        self.exit: dict | None = None

    def __call__(self, frame, event, arg):
        if frame.f_code is self.code:
            if event == "call":
                self.entry = dict(frame.f_locals)
            elif event == "return":
                self.exit = dict(frame.f_locals)


def _kv_dtype(sg, sa: dict, model_dtype):
    class _CudaPlatform:  # the deployment being sized is CUDA, not this CPU host
        @staticmethod
        def is_cpu():
            return False

    with _patched(sg.kvdt, "current_platform", _CudaPlatform()):
        resolved, dtype = sg.kvdt.configure_kv_cache_dtype(
            server_args_kv_cache_dtype=sa.get("kv_cache_dtype", "auto"),
            model=None,
            model_dtype=model_dtype,
            is_draft_worker=False,
            is_dflash=False,
            speculative_draft_attention_backend=None,
            speculative_draft_kv_cache_dtype=None,
        )
    return (resolved if resolved is not None else sa.get("kv_cache_dtype", "auto")), dtype


def _build_kvc(sg, mc, sa, *, stage_range, spec_algo, draft_layers, kv_dtype, kv_dtype_str, dflash_draft=None):
    model = types.SimpleNamespace(start_layer=stage_range[0], end_layer=stage_range[1])
    layer_info = sg.resolve_layer_indices(model=model, model_config=mc, is_draft_worker=False)
    aux = sg.SpecAuxHiddenStateConfig(eagle_draft_num_layers=draft_layers)
    if dflash_draft is not None:
        # What `spec_aux_hidden_state._resolve_dflash_aux_hidden_state` stores for the DFLASH
        # family: the draft's ModelConfig and its layer count (SGLang's own parser reads it).
        from sglang.srt.speculative.dflash_utils import parse_dflash_draft_config

        aux.draft_model_config = dflash_draft
        aux.dflash_draft_num_layers = parse_dflash_draft_config(draft_hf_config=dflash_draft.hf_config).require_num_layers()
        aux.draft_kv_num_layers = aux.dflash_draft_num_layers
    return sg.kvcm.KVCacheConfigurator(
        device="cuda",
        gpu_id=0,
        attn_dp_size=int(sa.get("attn_dp_size", 1)),
        pp_size=int(sa.get("pp_size", 1)),
        pp_group=None,
        model=None,
        model_config=mc,
        server_args=Bag("server_args", enable_hisparse=False),
        kv_cache_dtype=kv_dtype,
        model_dtype=mc.dtype,
        page_size=int(sa.get("page_size") or 1),
        sliding_window_size=None,
        spec_algorithm=spec_algo,
        is_draft_worker=False,
        post_capture_kv_active=False,
        spec_aux_config=aux,
        is_hybrid_swa=False,
        is_hybrid_swa_compress=False,
        use_mla_backend=mc.attention_arch == sg.AttentionArch.MLA,
        layer_info=layer_info,
        forward_stream=None,
        req_to_token_pool=None,
        token_to_kv_pool_allocator=None,
        memory_pool_config=None,
        kv_cache_dtype_str=kv_dtype_str,
    )


def _error(exc: BaseException) -> dict:
    return {"exception": type(exc).__name__, "message": str(exc)}


def reference_plan(request: dict) -> dict:
    """Run SGLang 0.5.23's own sizing for one request (wire shape, launch values resolved).

    Never raises for a sizing failure: SGLang's exception is reported in `error`."""
    sg = _load()
    with _LOCK, _fakes_active():
        return _reference_plan(sg, request)


def _reference_plan(sg, request: dict) -> dict:
    sa = dict(request.get("server_args") or {})
    env = dict(request.get("env") or {})
    budget = dict(request["budget"])
    draft = request.get("draft_model")
    pp = int(sa.get("pp_size", 1))
    out: dict = {
        "max_mamba_cache_size": None,
        "mamba_ratio": None,
        "mamba_cache_per_req_bytes": None,
        "stage_per_req_bytes": None,
        "rest_gib": None,
        "kv_budget_bytes": None,
        "max_total_num_tokens": None,
        "max_running_requests": None,
        "pp_max_micro_batch_size": None,
        "stages": [],
        "error": None,
        "warnings": [],
    }

    if budget.get("rest_gib") is not None:
        rest_form = True
        f_pre, f_post, mfs = 1.0, float(budget["rest_gib"]), 1.0
    else:
        rest_form = False
        f_pre = float(budget["free_gib_before_load"])
        f_post = float(budget["free_gib_after_load"])
        given = sa.get("mem_fraction_static")
        if given is None:
            raise ValueError("reference_plan needs an explicit mem_fraction_static")
        mfs = float(given)

    model = request["model"]
    if "hf_config" not in model:
        raise ValueError("reference_plan takes model.hf_config only")

    all_reduce_inputs: list = []
    all_reduce_mode = {"min": None}

    def fake_all_reduce(tensor, op=None, group=None, async_op=False):
        assert op == sg.torch.distributed.ReduceOp.MIN, op
        if all_reduce_mode["min"] is None:
            all_reduce_inputs.append(int(tensor.item()))
        else:
            tensor.fill_(all_reduce_mode["min"])
        return None

    def fake_probe(*args, **kwargs):
        return f_post

    stack = contextlib.ExitStack()
    warn = None
    with stack:
        stack.enter_context(_environ(env))
        if sa.get("mamba_ssm_dtype") is not None:
            # serving_hook.handle_environment_variables: --mamba-ssm-dtype is copied into
            # the env var, over any value the environment had.
            sg.envs.SGLANG_MAMBA_SSM_DTYPE.set(sa["mamba_ssm_dtype"])
        # qwen3_next pads heads on the CPU backend; the deployment sized here is CUDA.
        stack.enter_context(_patched(sg.qwen3_next, "_is_cpu", False))
        stack.enter_context(_patched(sg.kvcm, "get_available_gpu_memory", fake_probe))
        stack.enter_context(_patched(sg.kvcm, "gc", types.SimpleNamespace(collect=lambda: 0)))
        stack.enter_context(_patched(sg.torch.distributed, "all_reduce", fake_all_reduce))
        if rest_form:
            stack.enter_context(
                _patched(sg.kvcm, "mm_runtime_reservation_gb", lambda **kw: 0.0)
            )
        stack.enter_context(_patched(sg.rc, "_CONTEXT", sg.rc._CONTEXT))
        stack.enter_context(_patched(sg.rc, "_PARALLEL", sg.rc._PARALLEL))
        warn = stack.enter_context(_capture_warnings())
        try:
            _run(sg, request, sa, draft, pp, f_pre, mfs, out, all_reduce_inputs, all_reduce_mode)
        except FakeContextGap:
            raise
        except Exception as exc:  # SGLang's own failure: report it
            if isinstance(exc.__context__, FakeContextGap) or isinstance(exc.__cause__, FakeContextGap):
                raise
            out["error"] = _error(exc)
    out["warnings"] = list(warn.messages) if warn is not None else []
    return out


def _run(sg, request, sa, draft, pp, f_pre, mfs, out, all_reduce_inputs, all_reduce_mode):
    mc = model_config_for(request["model"]["hf_config"], sa.get("context_length"))
    spec_algo = sg.SpeculativeAlgorithm.from_string(sa.get("speculative_algorithm"))
    # Draft KV layers as `resolve_spec_aux_hidden_state_config` decides them: a separate
    # draft's layer count, else the target's num_nextn_predict_layers (MTP), else none.
    draft_layers = None
    if spec_algo.is_eagle() or spec_algo.is_standalone():
        if draft is not None:
            draft_layers = int(draft["num_layers"])
        elif mc.num_nextn_predict_layers is not None:
            draft_layers = int(mc.num_nextn_predict_layers)
    hf = request["model"]["hf_config"]
    if sa.get("kv_cache_dtype", "auto") == "auto" and (hf.get("quantization_config") or hf.get("hf_quant_config")
                                                       or (hf.get("text_config") or {}).get("quantization_config")):
        # `auto` on a quantized checkpoint: SGLang's configure_kv_cache_dtype given the quant
        # config its loader builds (weights_ref), not the model=None shortcut below.
        import weights_ref

        sa = {**sa, "kv_cache_dtype": weights_ref.kv_cache_dtype_auto(hf)}
        if sa["kv_cache_dtype"] not in ("fp8_e4m3", "fp8_e5m2"):
            sa["kv_cache_dtype"] = "auto"
    # The DFLASH family's draft (a config given as draft_model.hf_config): the draft worker
    # resolves its KV dtype from the user's --kv-cache-dtype (its own model has no quant config).
    dflash_draft = None
    user_kv_dtype = sa.get("kv_cache_dtype", "auto")
    if spec_algo.is_dflash_family() and draft is not None and draft.get("hf_config") is not None:
        dflash_draft = model_config_for(draft["hf_config"])
    kv_dtype_str, kv_dtype = _kv_dtype(sg, sa, mc.dtype)
    page = int(sa.get("page_size") or 1)

    # One rank per PP stage (TP/DP peers of a stage are identical). Each rank has its own
    # runtime context: `_handle_max_mamba_cache` writes K into it.
    ranks = []  # (kvc, ctx, parallel)
    for rank in range(pp):
        ctx, parallel = _make_context(sg, {**sa, "kv_cache_dtype": user_kv_dtype} if dflash_draft is not None else sa,
                                      mfs=mfs, pp_rank=rank)
        sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
        stage_range = sg.kvcm.get_pp_indices(mc.num_hidden_layers, rank, pp)
        kvc = _build_kvc(
            sg, mc, sa, stage_range=stage_range, spec_algo=spec_algo,
            draft_layers=draft_layers, kv_dtype=kv_dtype, kv_dtype_str=kv_dtype_str, dflash_draft=dflash_draft,
        )
        ranks.append((kvc, ctx, parallel))
        s, e = kvc.layer_info.start_layer, kvc.layer_info.end_layer
        out["stages"].append(
            {
                "pp_rank": rank, "start_layer": s, "end_layer": e,
                "mamba_layers": None, "full_attention_layers": None,
                "kv_cell_bytes": None, "kv_tokens": None,
                "conv_shape": None, "temporal_shape": None,
                "conv_dtype": None, "ssm_dtype": None,
            }
        )
    for rank, (kvc, ctx, parallel) in enumerate(ranks):
        sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
        st = out["stages"][rank]
        mamba = kvc.mambaish_config
        if mamba is None:
            raise RuntimeError("not a mambaish model: SGLang sizes it without a mamba pool")
        s, e = st["start_layer"], st["end_layer"]
        st["full_attention_layers"] = sum(1 for i in mamba.full_attention_layer_ids if s <= i < e)
        st["kv_cell_bytes"] = int(sg.pcm.create_memory_pool_configurator(kvc)._cell_size)
        params = mamba.mamba2_cache_params  # may raise (TP divisibility), as SGLang would
        st["mamba_layers"] = sum(1 for i in params.layers if s <= i < e)
        st["conv_shape"] = [list(c) for c in params.shape.conv]
        st["temporal_shape"] = list(params.shape.temporal)
        st["conv_dtype"] = _dtype_name(params.dtype.conv)
        st["ssm_dtype"] = _dtype_name(params.dtype.temporal)
        if rank == 0:
            out["mamba_cache_per_req_bytes"] = int(params.mamba_cache_per_req)
            try:
                out["mamba_ratio"] = kvc._calculate_mamba_ratio()
            except AssertionError:
                out["mamba_ratio"] = None

    # Steps A-C on every rank: profile, mamba split (writes K), byte budget.
    budgets, ks = [], []
    for rank, (kvc, ctx, parallel) in enumerate(ranks):
        sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
        probe = _LocalsProbe(sg.handle_code)
        old = sys.getprofile()
        sys.setprofile(probe)
        try:
            budget_bytes = kvc._profile_available_bytes(f_pre)
        finally:
            sys.setprofile(old)
            if rank == 0 and probe.entry is not None:
                out["rest_gib"] = probe.entry.get("total_rest_memory")
                if probe.exit is not None and "stage_per_req" in probe.exit:
                    out["stage_per_req_bytes"] = probe.exit["stage_per_req"]
                out["max_mamba_cache_size"] = ctx.config_bag("schedule").max_mamba_cache_size
        budgets.append(budget_bytes)
        ks.append(ctx.config_bag("schedule").max_mamba_cache_size)
        if rank == 0:
            out["kv_budget_bytes"] = budget_bytes
    assert len(set(budgets)) == 1 and len(set(ks)) == 1, (budgets, ks)

    # Step D per stage: T_s, page-floored, before the user cap and the PP MIN.
    for rank, (kvc, ctx, parallel) in enumerate(ranks):
        sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
        conf = sg.pcm.create_memory_pool_configurator(kvc)
        cfg = conf.calculate_pool_sizes(budgets[rank], page)  # may raise "Not enough memory"
        sentinel = conf._cell_size == 0 and conf._zero_kv_max_tokens == _INT64_MAX
        out["stages"][rank]["kv_tokens"] = None if sentinel else int(cfg.max_total_num_tokens)

    # Step E: config_from_budget on every stage; the PP all-reduce answers the MIN.
    if pp > 1:
        # Pass 1 records what each stage hands to the all-reduce (the all-reduce leaves it
        # unchanged); pass 2 answers every stage with the MIN, as SGLang's would.
        all_reduce_mode["min"] = None
        for rank, (kvc, ctx, parallel) in enumerate(ranks):
            sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
            kvc.config_from_budget(budgets[rank])
        all_reduce_mode["min"] = min(all_reduce_inputs)
    configs = []
    for rank, (kvc, ctx, parallel) in enumerate(ranks):
        sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
        configs.append(kvc.config_from_budget(budgets[rank]))
    totals = {c.max_total_num_tokens for c in configs}
    assert len(totals) == 1, totals
    out["max_total_num_tokens"] = configs[0].max_total_num_tokens

    # Step F: resolve_max_num_reqs (identical on every stage).
    ns = []
    for rank, (kvc, ctx, parallel) in enumerate(ranks):
        sg.rc._CONTEXT, sg.rc._PARALLEL = ctx, parallel
        ns.append(kvc.resolve_max_num_reqs(configs[rank].max_total_num_tokens))
    assert len(set(ns)) == 1, ns
    n = ns[0]
    out["max_running_requests"] = n
    # Step H: the scheduler's plain rule.
    user_micro = sa.get("pp_max_micro_batch_size")
    out["pp_max_micro_batch_size"] = user_micro if user_micro else max(n // pp, 1)
