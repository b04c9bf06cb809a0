"""Reference for launch-flag resolution: SGLang 0.5.23's OWN `ServerArgs(...).resolve_once()`
(the whole `arg_groups/pipeline.py`, every hook) followed by `check_server_args()` (what the
engine asserts when it starts), run on the CPU.

No SGLang code is copied. Stand-ins, and only these:

* imports resolution never runs: the import fakes of `tests/conformance/sglang_ref.py`
  (reused, not duplicated; active only while SGLang code runs). Every module the pipeline imports lazily is imported once up
  front, while the host still answers as the CPU it is, so no module takes a GPU-only
  import path (`sgl_kernel`, ...) at import time;
* the device/platform probes, for the duration of one resolution only: `torch.cuda`
  answers as one Hopper GPU (SM 9.0, CUDA 12.8), `runtime_context.override_platform`
  says CUDA / SM90 / FlashInfer present, the `utils.common` probe caches are cleared
  before and after;
* the GPU capacity: `memory_hook.get_device_memory_capacity` returns the given MiB
  (what `nvidia-smi --query-gpu=memory.total` would);
* the model: a temp dir holding the case's `config.json`, read by SGLang's own
  `ModelConfig` / `get_config` (real config classes, real `context_len`);
* `sglang.kernels.ops.attention.fla.chunk_delta_h`, imported only for its CHUNK_SIZE
  constant, cannot import under the fakes: a module holding that constant (read off the
  wheel's source) stands in for it;
* `os.environ` is restored after every case (resolution exports SGLANG_MAMBA_SSM_DTYPE).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import pkgutil
import tempfile
import threading
import types
import warnings
from pathlib import Path

from tests.conformance import sglang_ref

_LOCK = threading.RLock()
_SG: types.SimpleNamespace | None = None
_DIRS: dict[str, str] = {}

# Modules the resolution pipeline imports lazily (inside hooks); imported up front.
_LAZY_MODULES = (
    "sglang.srt.kernel_plugins.amd.binding",
    "sglang.srt.kernel_plugins.nvidia.binding",
    "sglang.srt.speculative.spec_info",
    "sglang.srt.speculative.spec_registry",
    "sglang.srt.speculative.ragged_verify",
    "sglang.srt.configs.linear_attn_model_registry",
    "sglang.srt.configs.hybrid_arch",
    "sglang.srt.configs.mamba_utils",
    "sglang.srt.model_loader",
    "sglang.srt.layers.cp.bcg",
    # the DFLASH / DSPARK hooks read the draft's block size / gamma through these
    "sglang.srt.speculative.dflash_utils",
    "sglang.srt.speculative.dspark_components.dspark_config",
)

# Env keys a case may set; everything else in os.environ is left as it is.
ENV_KEYS = (
    "SGLANG_PP_LAYER_PARTITION",
    "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK",
    "SGLANG_MAMBA_SSM_DTYPE",
    "SGLANG_MAMBA_CONV_DTYPE",
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
    "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION",
    "SGLANG_AITER_KV_CACHE_LAYOUT",
)
# Env that would change resolution behind the case's back.
_SCRUB = ENV_KEYS + (
    "SGLANG_IS_IN_CI", "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING", "SGLANG_RAGGED_VERIFY_MODE", "SGLANG_USE_AITER",
    "SGLANG_IS_FLASHINFER_AVAILABLE",
)


def _import_fakes():
    """The sizing oracle's import fakes (tests/conformance/sglang_ref.py), active for the
    duration of the returned context."""
    sglang_ref._load()  # primes torch's / transformers' package caches before any fake exists
    active = getattr(sglang_ref, "_fakes_active", None)
    if active is not None:
        return active()
    install = getattr(sglang_ref, "_install_import_fakes", None)  # always-on variant
    if install is not None:
        install()
    return contextlib.nullcontext()


def _load() -> types.SimpleNamespace:
    global _SG
    with _LOCK:
        if _SG is not None:
            return _SG
        with warnings.catch_warnings(), _import_fakes():
            warnings.simplefilter("ignore")
            import sglang.srt.arg_groups as ag
            import sglang.srt.utils.common as common
            import torch
            from sglang.srt.server_args import ServerArgs

            for m in pkgutil.iter_modules(ag.__path__):
                importlib.import_module(f"sglang.srt.arg_groups.{m.name}")
            for name in _LAZY_MODULES:
                importlib.import_module(name)
            _stand_in_fla_chunk_size()
            import sglang.srt.arg_groups.memory_hook as memory_hook
            from sglang.srt.arg_groups.model_override_base import mamba_extra_buffer_of
            from sglang.srt.arg_groups.overrides import (
                mamba_extra_buffer_lazy_of,
                model_config_of,
                resolution_result,
                resolved_view,
            )
            from sglang.srt.configs.hybrid_arch import mambaish_config
            from sglang.srt.configs.mamba_utils import mamba2_state_dtype
            from sglang.srt.runtime_context import override_platform
        # Resolution logs a warning per decision; the conformance run does not need them.
        logging.getLogger("sglang").setLevel(logging.ERROR)
        _SG = types.SimpleNamespace(
            torch=torch, common=common, ServerArgs=ServerArgs, memory_hook=memory_hook,
            resolution_result=resolution_result, resolved_view=resolved_view, model_config_of=model_config_of,
            mamba_extra_buffer_of=mamba_extra_buffer_of, mamba_extra_buffer_lazy_of=mamba_extra_buffer_lazy_of,
            mambaish_config=mambaish_config, mamba2_state_dtype=mamba2_state_dtype, override_platform=override_platform,
        )
        return _SG


_FLA_CHUNK = "sglang.kernels.ops.attention.fla.chunk_delta_h"


def _stand_in_fla_chunk_size() -> None:
    """`overrides.mamba_cache_chunk_size` imports FLA's Triton kernel module only for its
    CHUNK_SIZE constant. Under the import fakes that module cannot import (it asks Triton
    for the active device), so it is stood in for by a module holding the constant, read
    off the wheel's own source file."""
    import ast
    import importlib.util
    import sys

    try:
        importlib.import_module(_FLA_CHUNK)
        return
    except Exception:
        pass
    spec = importlib.util.find_spec("sglang.kernels.ops.attention.fla")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("sglang.kernels.ops.attention.fla not found: is sglang==0.5.23 installed?")
    source = Path(spec.submodule_search_locations[0], "chunk_delta_h.py").read_text()
    value = None
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CHUNK_SIZE" for t in node.targets):
            value = ast.literal_eval(node.value)
    if not isinstance(value, int):
        raise RuntimeError(f"CHUNK_SIZE not found in {_FLA_CHUNK}")
    stand_in = types.ModuleType(_FLA_CHUNK)
    stand_in.__dict__.update(CHUNK_SIZE=value)  # a module attribute made at run time
    sys.modules[_FLA_CHUNK] = stand_in


def _clear_probe_caches(common) -> None:
    for value in list(vars(common).values()):
        if not callable(getattr(value, "cache_clear", None)):
            continue
        # The SM probes are lru_cache(partial(_check_cuda_device_version, ...)): their module
        # is the partial's function's.
        wrapped = getattr(value, "__wrapped__", None)
        module = getattr(value, "__module__", None)
        inner = getattr(getattr(wrapped, "func", None), "__module__", None)
        if common.__name__ in (module, inner):
            value.cache_clear()


@contextlib.contextmanager
def _hopper(sg, gpu_mib: float):
    """One CUDA Hopper GPU of `gpu_mib` MiB, for one resolution."""
    cuda = sg.torch.cuda
    props = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, total_memory=int(gpu_mib) << 20, multi_processor_count=132)
    patches = {
        (cuda, "is_available"): lambda: True,
        (cuda, "get_device_capability"): lambda *a, **k: (9, 0),
        (cuda, "get_device_name"): lambda *a, **k: "NVIDIA H200",
        (cuda, "get_device_properties"): lambda *a, **k: props,
        (cuda, "device_count"): lambda: 1,
        (sg.torch.version, "cuda"): "12.8",
        (sg.memory_hook, "get_device_memory_capacity"): lambda device=None: float(gpu_mib),
    }
    saved = {key: getattr(*key) for key in patches}
    environ = dict(os.environ)
    try:
        for (obj, name), value in patches.items():
            setattr(obj, name, value)
        _clear_probe_caches(sg.common)
        with sg.override_platform(
            is_cuda=True, is_hip=False, is_npu=False, is_xpu=False, is_musa=False, is_mps=False,
            is_sm90=True, is_sm100=False, is_sm100_or_sm110=False, is_sm110=False, is_sm120=False,
            is_blackwell=False, is_hopper_with_cuda_12_3=True, has_amx=False, has_flashinfer=True,
            device_sm=90, device_capability=(9, 0),
        ):
            yield
    finally:
        for (obj, name), value in saved.items():
            setattr(obj, name, value)
        _clear_probe_caches(sg.common)
        os.environ.clear()
        os.environ.update(environ)


# What the device stand-in answers, per probe (every other probe runs SGLang's own code):
DEVICE_PROBES = (
    "torch.cuda.is_available / is_initialized / device_count",
    "torch.cuda.get_device_capability (the catalog's compute capability; gfx version on ROCm)",
    "torch.cuda.get_device_name / get_device_properties (name, major, minor, total_memory, is_integrated, gcnArchName)",
    "torch.version.cuda (12.9 on CUDA parts, None on ROCm) / torch.version.hip (None on CUDA, 6.3 on ROCm)",
    "memory_hook.get_device_memory_capacity (the catalog MiB: nvidia-smi memory.total / rocminfo Pool 1 KB / 1024)",
    ("override_platform(has_flashinfer=CUDA, is_npu/is_xpu/is_musa/is_mps/has_amx=False); is_cuda, is_hip, is_sm90, "
     "is_sm100, is_sm100_or_sm110, is_sm110, is_sm120, is_blackwell, is_hopper_with_cuda_12_3, device_sm and "
     "device_capability are SGLang's own utils/common.py probes, answering from the stood-in torch"),
)


@contextlib.contextmanager
def _device(sg, gpu_mib: float, capability: tuple[int, int] = (9, 0), runtime: str = "cuda", name: str = "NVIDIA H200", integrated: bool = False,
            gcn_arch: str | None = None):
    """One GPU of `gpu_mib` MiB with this compute capability on this runtime, for one
    resolution: the probes of DEVICE_PROBES stood in, SGLang's own platform probes left to
    derive every SM / HIP fact from them."""
    cuda = sg.torch.cuda
    hip = runtime == "hip"
    props = types.SimpleNamespace(
        name=name, major=capability[0], minor=capability[1], total_memory=int(gpu_mib) << 20,
        multi_processor_count=132, is_integrated=integrated,
        gcnArchName=gcn_arch or f"gfx{capability[0]}{capability[1]}{'2' if hip else ''}",
    )
    patches = {
        (cuda, "is_available"): lambda: True,
        (cuda, "is_initialized"): lambda: True,  # get_device_sm asks torch, not NVML
        (cuda, "get_device_capability"): lambda *a, **k: capability,
        (cuda, "get_device_name"): lambda *a, **k: name,
        (cuda, "get_device_properties"): lambda *a, **k: props,
        (cuda, "device_count"): lambda: 1,
        (sg.torch.version, "cuda"): None if hip else "12.9",
        (sg.torch.version, "hip"): "6.3" if hip else None,
        (sg.memory_hook, "get_device_memory_capacity"): lambda device=None: float(gpu_mib),
    }
    saved = {key: getattr(*key) for key in patches}
    environ = dict(os.environ)
    try:
        for (obj, attr), value in patches.items():
            setattr(obj, attr, value)
        _clear_probe_caches(sg.common)
        with sg.override_platform(is_npu=False, is_xpu=False, is_musa=False, is_mps=False, has_amx=False, has_flashinfer=not hip):
            yield
    finally:
        for (obj, attr), value in saved.items():
            setattr(obj, attr, value)
        _clear_probe_caches(sg.common)
        os.environ.clear()
        os.environ.update(environ)


def platform_facts(capability: tuple[int, int], runtime: str, gcn_arch: str | None = None) -> dict:
    """SGLang's own platform facts for a stood-in device (what get_platform() answers), with
    its gfx95 probe (`is_gfx95_supported`, read off gcnArchName)."""
    sg = _load()
    with _LOCK, _import_fakes(), _device(sg, 81920, capability, runtime, gcn_arch=gcn_arch):
        from sglang.srt.runtime_context import get_platform

        p = get_platform()
        facts = {k: getattr(p, k) for k in ("is_cuda", "is_hip", "is_sm90", "is_sm100", "is_sm120", "is_blackwell", "is_hopper_with_cuda_12_3", "has_flashinfer")}
        facts["is_gfx95"] = bool(sg.common.is_gfx95_supported())
        return facts


def _config_dir(hf_config: dict) -> str:
    cleaned = {k: v for k, v in hf_config.items() if not k.startswith("_")}
    key = json.dumps(cleaned, sort_keys=True)
    path = _DIRS.get(key)
    if path is None:
        path = tempfile.mkdtemp(prefix="mambasizer-launch-")
        with open(os.path.join(path, "config.json"), "w") as f:
            f.write(key)
        _DIRS[key] = path
    return path


def _failing_check(exc: BaseException) -> str:
    """The source line of the innermost SGLang frame that raised (a bare `assert` carries
    no message; its condition names the check)."""
    import linecache
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/sglang/" in f.filename]
    if not frames:
        return ""
    last = frames[-1]
    return ((linecache.getline(last.filename, last.lineno) if last.lineno else "") or last.line or "").strip()


def _honours_config_dtype(mamba_cfg) -> bool:
    """Whether this family's `mamba2_cache_params` passes its config to
    `mamba2_state_dtype` (read off the real class, not assumed)."""
    import inspect

    prop = getattr(type(mamba_cfg), "mamba2_cache_params", None)
    fget = getattr(prop, "fget", None)
    if fget is None:
        return False
    try:
        return "mamba2_state_dtype(self)" in inspect.getsource(fget)
    except (OSError, TypeError):
        return False


def _dtype_name(dt) -> str:
    return str(dt).replace("torch.", "")


def resolve_with_sglang(hf_config: dict, server_args: dict, env: dict, gpu_mib: float, device: dict | None = None) -> dict:
    """Resolve launch flags (our ServerArgs field names, which are SGLang's) exactly as
    SGLang 0.5.23 does on a Hopper GPU of `gpu_mib` MiB.

    `device` (capability, runtime, name): resolve on that GPU instead (`_device`).

    Returns {"rejected": None, ...resolved values} or {"rejected": ExceptionClass, "message": ...}."""
    sg = _load()
    with _LOCK:
        path = _config_dir(hf_config)
        stand_in = _hopper(sg, gpu_mib) if device is None else _device(sg, gpu_mib, **device)
        with _import_fakes(), stand_in, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for key in _SCRUB:
                os.environ.pop(key, None)
            for key, value in (env or {}).items():
                if key not in ENV_KEYS:
                    raise KeyError(f"unknown env key {key!r}")
                if value is None or value is False:
                    continue
                os.environ[key] = "1" if value is True else str(value)
            record = sg.ServerArgs(model_path=path, **server_args)
            try:
                record.resolve_once()
                record.check_server_args()
            except Exception as exc:  # SGLang refused: report which way, and where
                return {"rejected": type(exc).__name__, "message": str(exc), "check": _failing_check(exc)}
            out = _read(sg, record)
            if device is not None:
                out["attention_backend"] = sg.resolution_result(record, "attention_backend")
            return out


def sglang_parser():
    """SGLang 0.5.23's own launch argument parser (`prepare_server_args` builds the same)."""
    import argparse

    sg = _load()
    with _LOCK, _import_fakes(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parser = argparse.ArgumentParser(prog="sglang serve")
        sg.ServerArgs.add_cli_args(parser)
    return parser


def resolve_argv_with_sglang(hf_config: dict, argv: list, env: dict, gpu_mib: float) -> dict:
    """`resolve_with_sglang`, from a launch command line read by SGLang's own parser
    (`ServerArgs.from_cli_args(parser.parse_args(argv))`, as `prepare_server_args` does)."""
    import contextlib as _cl
    import io

    sg = _load()
    parser = sglang_parser()
    with _LOCK:
        path = _config_dir(hf_config)
        with _import_fakes(), _hopper(sg, gpu_mib), warnings.catch_warnings(), _cl.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            for key in _SCRUB:
                os.environ.pop(key, None)
            for key, value in (env or {}).items():
                if value is None or value is False:
                    continue
                os.environ[key] = "1" if value is True else str(value)
            try:
                namespace = parser.parse_args(list(argv) + ["--model-path", path])
            except SystemExit as exc:
                return {"rejected": "SystemExit", "message": f"argparse rejected the command line ({exc.code})"}
            record = sg.ServerArgs.from_cli_args(namespace)
            try:
                record.resolve_once()
                record.check_server_args()
            except Exception as exc:
                return {"rejected": type(exc).__name__, "message": str(exc), "check": _failing_check(exc)}
            return _read(sg, record)


def _read(sg, record) -> dict:
    r = lambda name: sg.resolution_result(record, name)  # noqa: E731
    view = sg.resolved_view(record)
    graphs = r("cuda_graph_config")
    mc = sg.model_config_of(record)
    mamba_cfg = sg.mambaish_config(mc)
    honours = mamba_cfg is not None and _honours_config_dtype(mamba_cfg)
    dtypes = sg.mamba2_state_dtype(mamba_cfg if honours else None)
    spec = r("speculative_algorithm")
    nextn = getattr(mc, "num_nextn_predict_layers", None)
    return {
        "rejected": None,
        "page_size": r("page_size"),
        "mem_fraction_static": r("mem_fraction_static"),
        "strategy": r("mamba_radix_cache_strategy"),
        "extra_buffer": bool(sg.mamba_extra_buffer_of(view)),
        "extra_buffer_lazy": bool(sg.mamba_extra_buffer_lazy_of(view)),
        "disable_overlap_schedule": bool(r("disable_overlap_schedule")),
        "max_running_requests": r("max_running_requests"),
        "speculative_algorithm": spec,
        "speculative_num_draft_tokens": r("speculative_num_draft_tokens"),
        "speculative_num_steps": r("speculative_num_steps"),
        "speculative_eagle_topk": r("speculative_eagle_topk"),
        "mamba_full_memory_ratio": r("mamba_full_memory_ratio"),
        "chunked_prefill_size": r("chunked_prefill_size"),
        "decode_cuda_graph_max_bs": graphs.decode.max_bs,
        "prefill_cuda_graph": graphs.prefill.backend != "disabled",
        "env_mamba_ssm_dtype": os.environ.get("SGLANG_MAMBA_SSM_DTYPE"),
        "ssm_dtype": _dtype_name(dtypes.temporal),
        "conv_dtype": _dtype_name(dtypes.conv),
        "context_len": mc.context_len,
        "draft_kv_layers": int(nextn or 0) if spec in ("EAGLE", "EAGLE3", "STANDALONE") else 0,
        # Disaggregation / wide EP (issue 19): radix off on a decode node, its extra rows, DeepEP's ep_size.
        "disable_radix_cache": bool(r("disable_radix_cache")),
        "decode_extra_slots": int(r("disaggregation_decode_extra_slots") or 0),
        "ep_size": r("ep_size"),
    }
