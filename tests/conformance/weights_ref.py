"""Reference for weight bytes: SGLang 0.5.23's OWN model classes, built on the `meta` device.

A rank of a TP x PP (x EP) deployment is built the way SGLang's loader builds it
(`model_loader.loader._initialize_model`: the architecture's model class with SGLang's
`ModelConfig.hf_config` and the quant config SGLang derives from the checkpoint's
`quantization_config`), inside a runtime context made by SGLang's own `create_context` from a
real `ServerArgs` and a `SpawnRanks` placement, so every `get_parallel()` width and rank
(tp, attn_tp, moe_ep, moe_tp, pp) is SGLang's. The rank's bytes are then the sum of
numel * element_size over the module's parameters and buffers (shared tensors once).

Stand-ins, and only these (on top of sglang_ref's import fakes):
* more import fakes: `openai`, `partial_json_parser`, `cuda` / `cutlass` (CuTe-DSL kernels a
  layer only probes for) and SGLang's OpenAI protocol module (reached through imports that
  building a model never runs);
* launch_ref's `_hopper` (torch.cuda and the platform probes answer as one H200) while the
  server arguments resolve and the model is built;
* triton's driver raises, so the kernels' platform probes answer "cpu";
* the process-group handles (tp/pp/moe-ep groups, only their size/rank/first/last are read
  while building) are small objects answering from the placement;
* `torch.cuda.Stream` (the "alt" stream some models take at construction) is a plain object;
* the module flags that say which platform runs (`_is_cuda` True, `_is_cpu`, `_is_hip`,
  `_is_npu`, `_use_aiter`, `_is_cpu_amx_available` False) in every loaded sglang module for
  the duration of one build (restored after), so the model classes take their CUDA branches
  (e.g. Qwen's shared-expert fusion).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import json
import os
import sys
import tempfile
import threading
import types
import warnings

sys.modules.setdefault("weights_ref", sys.modules[__name__])
sys.modules.setdefault("tests.conformance.weights_ref", sys.modules[__name__])

import sglang_ref as R  # noqa: E402  (this folder is on sys.path in the conformance suite)

_EXTRA = ("openai", "partial_json_parser", "cuda", "cutlass")
_EXTRA_EXACT = ("sglang.srt.entrypoints.openai.protocol",)
_LOCK = threading.RLock()
H200_MIB = 143771  # the deployments sized are Hopper's: SGLang resolves and builds as on one H200


class _ExtraFinder(R._FakeFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in _EXTRA or name in _EXTRA_EXACT:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None


_FINDER = _ExtraFinder()
_READY: types.SimpleNamespace | None = None

PLATFORM_FLAGS = {"_is_cuda": True, "_is_cpu": False, "_is_hip": False, "_is_npu": False,
                  "_use_aiter": False, "_is_cpu_amx_available": False, "_is_xpu": False, "_is_musa": False}


@contextlib.contextmanager
def active():
    """The import fakes (sglang_ref's and ours) while SGLang code runs."""
    with _LOCK, warnings.catch_warnings(), R._fakes_active():
        warnings.simplefilter("ignore")
        added = _FINDER not in sys.meta_path
        if added:
            sys.meta_path.insert(0, _FINDER)
        try:
            yield
        finally:
            if added:
                sys.meta_path.remove(_FINDER)


def load() -> types.SimpleNamespace:
    global _READY
    with _LOCK:
        if _READY is not None:
            return _READY
        R._load()
        from tests.conformance import launch_ref

        lsg = launch_ref._load()
        with active():
            import triton

            def _no_driver(*a, **k):
                raise RuntimeError("no triton driver on this host")

            triton.runtime.driver.active.get_current_target = _no_driver
            triton.runtime.driver.active.utils.get_device_properties = _no_driver
            mods = {}
            # Every quant method module now, so the platform flags pinned before each build
            # reach them all (a module imported lazily mid-build would keep the CPU's).
            import pkgutil

            import sglang.srt.layers.moe as moepkg
            import sglang.srt.layers.quantization as qpkg

            for pkg in (qpkg, moepkg):
                for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
                    try:
                        importlib.import_module(info.name)
                    except Exception:  # hardware-specific backends (NPU, ROCm, ...) that cannot import here
                        pass
            for fam in ("nemotron_h", "qwen3_next", "qwen3_5", "falcon_h1", "granitemoehybrid", "lfm2", "kimi_linear"):
                mods[fam] = importlib.import_module(f"sglang.srt.models.{fam}")
            import torch
            from sglang.srt import runtime_context as rc
            from sglang.srt.model_loader import loader
            from sglang.srt.model_loader.utils import get_model_architecture
            from sglang.srt.server_args import ServerArgs
        _READY = types.SimpleNamespace(rc=rc, ServerArgs=ServerArgs, arch=get_model_architecture, loader=loader, torch=torch, mods=mods,
                                       launch_ref=launch_ref, lsg=lsg)
        return _READY


@contextlib.contextmanager
def _platform_flags():
    """The CUDA platform flags in every loaded sglang module for one build, restored after
    (other conformance tests in the same process read these modules as the CPU host)."""
    saved = []
    for name, mod in list(sys.modules.items()):
        if not name.startswith("sglang.") or not isinstance(mod, types.ModuleType):
            continue
        d = getattr(mod, "__dict__", {})
        for flag, value in PLATFORM_FLAGS.items():
            if flag in d and isinstance(d[flag], bool):
                saved.append((d, flag, d[flag]))
                d[flag] = value
    try:
        yield
    finally:
        for d, flag, value in saved:
            d[flag] = value


class _Group:
    """A process-group handle: only its shape is read while a model is built."""

    def __init__(self, size: int, rank: int):
        self.world_size = size
        self.rank_in_group = rank
        self.is_first_rank = rank == 0
        self.is_last_rank = rank == size - 1
        self.first_rank, self.last_rank = 0, size - 1
        self.device_group = self.cpu_group = self
        self.ca_comm = None  # no custom all-reduce communicator
        self.ranks = list(range(size))

    def size(self):
        return self.world_size

    def rank(self):
        return self.rank_in_group

    def send(self, *a, **k):  # tied embeddings under PP: the first stage sends, the last receives
        return None

    def recv(self, size, dtype, src):
        import torch

        return torch.empty(size, dtype=dtype, device="meta")


class _FakeStream:
    """`torch.cuda.Stream()`: models take an "alt" stream handle at construction."""

    def __init__(self, *a, **k):
        pass


def _model_dir(hf_config: dict) -> str:
    """A checkpoint folder: config.json, and the sibling hf_quant_config.json where the config
    carries one (`hf_quant_config`, as a preset's loader passes it on)."""
    td = tempfile.mkdtemp(prefix="mambasizer-wref-")
    clean = {k: v for k, v in hf_config.items() if not k.startswith("_") and k != "hf_quant_config"}
    with open(os.path.join(td, "config.json"), "w") as f:
        json.dump(clean, f)
    if isinstance(hf_config.get("hf_quant_config"), dict):
        with open(os.path.join(td, "hf_quant_config.json"), "w") as f:
            json.dump(hf_config["hf_quant_config"], f)
    return td


def kv_cache_dtype_auto(hf_config: dict) -> str:
    """SGLang's own `configure_kv_cache_dtype` for `--kv-cache-dtype auto`, given the quant
    config SGLang's loader builds for this checkpoint folder (config.json + hf_quant_config.json)
    and the model dtype ModelConfig resolves: the KV pool's dtype name (fp8_e4m3 / bfloat16 / ...).
    Cached per config; SGLang's log lines while it resolves are muted (the oracle captures the
    sizing path's warnings, and this is not part of it)."""
    import logging

    key = json.dumps(hf_config, sort_keys=True, default=str)
    if key not in _KV_AUTO:
        prev = logging.root.manager.disable
        logging.disable(logging.CRITICAL)
        try:
            _KV_AUTO[key] = _kv_cache_dtype_auto(hf_config)
        finally:
            logging.disable(prev)
    return _KV_AUTO[key]


_KV_AUTO: dict[str, str] = {}


def _kv_cache_dtype_auto(hf_config: dict) -> str:
    sg = load()
    path = _model_dir(hf_config)
    with active(), sg.launch_ref._hopper(sg.lsg, H200_MIB), _platform_flags():
        sa = sg.ServerArgs(model_path=path, tp_size=1, pp_size=1, device="cuda", load_format="dummy")
        ctx = sg.rc.create_context(sa, role="scheduler", ranks=sg.rc.SpawnRanks(world_rank=0, gpu_id=0))
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.mem_cache import kv_cache_dtype as kvdt

        with sg.rc.use_context(ctx):
            mc = ModelConfig.from_server_args(sa)
            quant = sg.loader._get_quantization_config(mc, LoadConfig(load_format="dummy"))
            _, dtype = kvdt.configure_kv_cache_dtype(
                server_args_kv_cache_dtype="auto", model=types.SimpleNamespace(quant_config=quant), model_dtype=mc.dtype,
                is_draft_worker=False, is_dflash=False, speculative_draft_attention_backend=None)
    name = str(dtype).replace("torch.", "")
    return {"float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}.get(name, name)


def rank_bytes(hf_config: dict, *, tp: int, pp: int, ep: int = 1, pp_rank: int = 0, tp_rank: int = 0,
               extra_args: dict | None = None, draft: bool = False) -> tuple[int, dict]:
    """SGLang's model for one rank, built on meta: (total bytes, {param name: bytes}).
    draft=True builds the MTP draft model the way speculative decoding loads it from the
    same checkpoint (ModelConfig(is_draft_model=True) rewrites the architecture)."""
    sg = load()
    torch = sg.torch
    path = _model_dir(hf_config)
    with active(), sg.launch_ref._hopper(sg.lsg, H200_MIB), _platform_flags():
        args = dict(model_path=path, tp_size=tp, pp_size=pp, ep_size=ep, device="cuda", load_format="dummy")
        args.update(extra_args or {})
        sa = sg.ServerArgs(**args)
        world_rank = pp_rank * tp + tp_rank
        ctx = sg.rc.create_context(sa, role="scheduler", ranks=sg.rc.SpawnRanks(world_rank=world_rank, gpu_id=0))
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.configs.model_config import ModelConfig

        with sg.rc.use_context(ctx):
            par = ctx.parallel
            par.override_permanently(
                tp_group=_Group(tp, tp_rank), pp_group=_Group(pp, pp_rank),
                attn_tp_group=_Group(par.attn_tp_size, par.attn_tp_rank),
                moe_ep_group=_Group(par.moe_ep_size, par.moe_ep_rank),
                moe_tp_group=_Group(par.moe_tp_size, par.moe_tp_rank),
            )
            mc = ModelConfig.from_server_args(sa, is_draft_model=draft)
            lc = LoadConfig(load_format="dummy")
            quant = sg.loader._get_quantization_config(mc, lc)
            dtype = mc.dtype
            old = torch.get_default_dtype()
            torch.set_default_dtype(dtype)
            try:
                with torch.device("meta"), R._patched(torch.cuda, "Stream", _FakeStream):
                    model = sg.loader._initialize_model(mc, lc, quant)
            finally:
                torch.set_default_dtype(old)
    seen = set()
    per: dict[str, int] = {}
    for name, t in list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers(remove_duplicate=False)):
        key = id(t)
        if key in seen:
            continue
        seen.add(key)
        per[name] = t.numel() * t.element_size()
    return sum(per.values()), per
