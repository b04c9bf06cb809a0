"""Launch-flag resolution of an older SGLang release, in a subprocess that imports it:

    PYTHONPATH=<release_source(v)>:<repo> python -m tests.conformance.release_resolve < cases.json

reads [{"model": hf_config, "server_args": {...}, "env": {...}, "gpu_mib": N}, ...] and
prints that release's own resolution of each (the dicts of `launch_ref.resolve_with_sglang`).

Era shim (0.5.19+: `ServerArgs.resolve_once()` over arg_groups, then `check_server_args()`,
the same driver as 0.5.23's, tests/conformance/launch_ref.py), adapted to what the release has:
* the import stand-ins of tests/conformance/release_shim.py;
* of launch_ref's up-front lazy imports, only the modules this release ships;
* of the platform facts launch_ref pins (CUDA, SM90, FlashInfer), only those this
  release's `override_platform` knows (0.5.19-0.5.20 lack is_mps / is_sm110);
* the GPU capacity probe stood in where the release calls it (0.5.19: arg_groups/pipeline.py).

Up to 0.5.18 resolution runs in `ServerArgs.__post_init__` (the dataclass era): the shim
constructs `ServerArgs(model_path=<config dir>, **flags)` and calls `check_server_args()`,
with `sgl_kernel`, `flashinfer` and `deep_gemm` stood in (imported by GPU-only paths once
the platform answers CUDA) and the device probes `server_args` and `utils.common` import
(`get_device_memory_capacity`, `is_cuda`/`is_hip`/..., `is_sm90_supported`, ...) answering
as one H200-class Hopper GPU of the case's capacity, `torch.cuda` likewise. It reads what
that era's ServerArgs exposes: page size, mem_fraction_static, strategy and extra_buffer,
overlap, max running requests, speculative steps/topk/draft tokens, chunked prefill,
mamba_full_memory_ratio, the context length; refusals by exception class.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys


def _ships(root: str, module: str) -> bool:
    path = os.path.join(root, *module.split("."))
    return os.path.isdir(path) or os.path.exists(path + ".py")


def _lenient_platform(override_platform):
    """`override_platform(**facts)` without the facts this release does not know (found by
    trying them once: the release raises ValueError naming the unknown ones)."""
    unknown: set[str] = set()
    probed = False

    def call(**facts):
        nonlocal probed
        if not probed:
            while True:
                try:
                    with override_platform(**{k: v for k, v in facts.items() if k not in unknown}):
                        pass
                    break
                except ValueError as exc:
                    found = re.search(r"unknown platform fact\(s\): (\[.*\])", str(exc))
                    if not found:
                        raise
                    unknown.update(ast.literal_eval(found.group(1)))
            probed = True
        return override_platform(**{k: v for k, v in facts.items() if k not in unknown})

    return call


_LEGACY_FAKES = ("sgl_kernel", "flashinfer", "deep_gemm")


def _legacy_resolver():
    """A case -> resolution function for the dataclass era (<=0.5.18)."""
    import tempfile
    import types
    import warnings

    from tests.conformance import release_shim, sglang_ref

    sglang_ref.FAKED_MODULES = sglang_ref.FAKED_MODULES + _LEGACY_FAKES
    import torch

    # 0.5.8-0.5.9 register fake (meta) kernels for sgl_kernel operators at import time
    # (quantization/fp8_kernel.py, reached from ModelConfig); the operators live in the
    # stood-in sgl_kernel, so the registration becomes a no-op for that namespace only.
    plain_register_fake = torch.library.register_fake

    def register_fake(op, *args, **kwargs):
        if isinstance(op, str) and op.startswith("sgl_kernel::"):
            return lambda fn=None, *a, **k: fn
        return plain_register_fake(op, *args, **kwargs)

    torch.library.register_fake = register_fake

    with warnings.catch_warnings(), release_shim.fakes():
        warnings.simplefilter("ignore")
        import sglang.srt.server_args as server_args
        import sglang.srt.utils.common as common
    import logging

    logging.getLogger("sglang").setLevel(logging.ERROR)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    from tests.conformance.launch_ref import _failing_check

    dirs: dict[str, str] = {}

    def config_dir(hf_config: dict) -> str:
        key = json.dumps({k: v for k, v in hf_config.items() if not k.startswith("_")}, sort_keys=True)
        if key not in dirs:
            dirs[key] = tempfile.mkdtemp(prefix="mambasizer-legacy-")
            with open(os.path.join(dirs[key], "config.json"), "w") as f:
                f.write(key)
        return dirs[key]

    def hopper(gpu_mib: float) -> None:
        cuda = torch.cuda
        props = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, total_memory=int(gpu_mib) << 20, multi_processor_count=132)
        cuda.is_available = lambda: True
        cuda.get_device_capability = lambda *a, **k: (9, 0)
        cuda.get_device_name = lambda *a, **k: "NVIDIA H200"
        cuda.get_device_properties = lambda *a, **k: props  # type: ignore[assignment]
        cuda.device_count = lambda: 1
        torch.version.cuda = "12.8"
        answers = {
            "get_device_memory_capacity": lambda device=None: float(gpu_mib), "is_cuda": lambda: True, "is_hip": lambda: False,
            "is_npu": lambda: False, "is_xpu": lambda: False, "is_cpu": lambda: False, "is_mps": lambda: False,
            "is_musa": lambda: False, "is_flashinfer_available": lambda: True, "is_sm100_supported": lambda *a: False,
            "is_sm90_supported": lambda *a: True, "get_device_sm": lambda: 90, "get_device": lambda *a: "cuda",
        }
        for module in (server_args, common):
            for name, value in answers.items():
                if hasattr(module, name):
                    setattr(module, name, value)

    def first(record, *names):
        for name in names:
            if hasattr(record, name):
                return getattr(record, name)
        return None

    def stale_sub_config(path: str) -> bool:
        """True when the release's config class leaves a sub-config as a plain dict here:
        its classes predate transformers' kw_only dataclass configs (>= 5.5.3), whose
        generated __init__ skips theirs (0.5.9-0.5.10's Qwen3.5-MoE), so its ModelConfig
        reads class defaults a release-era transformers would not give."""
        from sglang.srt.utils import hf_transformers_utils as hf

        with open(os.path.join(path, "config.json")) as f:
            raw = json.load(f)
        cls = getattr(hf, "_CONFIG_REGISTRY", {}).get(raw.get("model_type"))
        if cls is None:
            return False
        try:
            with warnings.catch_warnings(), release_shim.fakes():
                warnings.simplefilter("ignore")
                config = cls(**raw)
        except Exception:  # the class refuses the config (the resolution reports that refusal)
            return False
        return any(isinstance(getattr(config, name, None), dict) for name in ("text_config", "vision_config"))

    def resolve(case: dict) -> dict:
        out = _resolve(case)
        out["stale_config"] = stale_sub_config(config_dir(case["model"]))
        return out

    def _resolve(case: dict) -> dict:
        hopper(case["gpu_mib"])
        environ = dict(os.environ)
        try:
            for key, value in (case["env"] or {}).items():
                if value not in (None, False):
                    os.environ[key] = "1" if value is True else str(value)
            with warnings.catch_warnings(), release_shim.fakes():
                warnings.simplefilter("ignore")
                try:
                    record = server_args.ServerArgs(model_path=config_dir(case["model"]), **case["server_args"])
                    record.check_server_args()
                except Exception as exc:
                    return {"rejected": type(exc).__name__, "message": str(exc), "check": _failing_check(exc)}
                return {
                    "rejected": None,
                    "page_size": record.page_size,
                    "mem_fraction_static": record.mem_fraction_static,
                    "strategy": first(record, "mamba_radix_cache_strategy", "mamba_scheduler_strategy"),
                    "extra_buffer": bool(record.enable_mamba_extra_buffer()),
                    "disable_overlap_schedule": bool(record.disable_overlap_schedule),
                    "max_running_requests": record.max_running_requests,
                    "speculative_num_draft_tokens": record.speculative_num_draft_tokens,
                    "speculative_num_steps": record.speculative_num_steps,
                    "speculative_eagle_topk": record.speculative_eagle_topk,
                    "mamba_full_memory_ratio": record.mamba_full_memory_ratio,
                    "chunked_prefill_size": record.chunked_prefill_size,
                    "context_len": record.get_model_config().context_len,
                }
        finally:
            os.environ.clear()
            os.environ.update(environ)

    return resolve


def main() -> int:
    from tests.conformance import release_shim

    release_shim.install()
    with release_shim.fakes():
        import sglang.srt.server_args as probe
    if not hasattr(probe.ServerArgs, "resolve_once"):
        resolve = _legacy_resolver()
        json.dump([resolve(case) for case in json.load(sys.stdin)], sys.stdout)
        return 0
    from tests.conformance import launch_ref

    root = os.environ["PYTHONPATH"].split(os.pathsep)[0]
    launch_ref._LAZY_MODULES = tuple(m for m in launch_ref._LAZY_MODULES if _ships(root, m))  # type: ignore[assignment]
    sg = launch_ref._load()
    sg.override_platform = _lenient_platform(sg.override_platform)
    if not hasattr(sg.memory_hook, "get_device_memory_capacity"):
        # 0.5.19 probes the capacity in arg_groups/pipeline.py (memory_hook from 0.5.20).
        import importlib

        sg.memory_hook = importlib.import_module("sglang.srt.arg_groups.pipeline")
    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        try:
            out.append(launch_ref.resolve_with_sglang(case["model"], case["server_args"], case["env"], case["gpu_mib"]))
        except Exception as exc:  # the driver itself failed (not SGLang refusing): report it
            out.append({"rejected": "DriverError", "message": f"{type(exc).__name__}: {exc}"})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
