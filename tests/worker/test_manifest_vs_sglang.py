"""The allocation manifest against SGLang 0.5.23's own pools.

SGLang's real `HybridReqToTokenPool` (with its `MambaPool`) and its KV pools
(`MHATokenToKVPool` through the hybrid wrapper's arguments, `MLATokenToKVPool`) are built
on torch's `meta` device, where allocating costs nothing; every device allocation they
make is recorded in order and compared, shape and dtype, with
`mambasizer.service.solver.allocation.stage_tensors`. Skipped where the SGLang wheel is not installed.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
if importlib.util.find_spec("sglang") is None:
    pytest.skip("the SGLang 0.5.23 wheel is not installed", allow_module_level=True)

from mambasizer.service.solver.allocation import StageAllocationInputs, stage_tensors  # noqa: E402
from mambasizer.service.solver.specs import KVSpec, StateSpec  # noqa: E402
from mambasizer.service.worker.devices import TORCH_DTYPES  # noqa: E402

# The conformance oracle's import fakes (one copy for the whole test session).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import sglang_ref  # noqa: E402

DT = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}
IGNORED = (torch.uint64,)  # pointer tables, however they are built


@pytest.fixture(scope="module")
def mp():
    try:
        sglang_ref._load()
        with sglang_ref._fakes_active():
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import sglang.srt.mem_cache.mamba_checkpoint_pool  # imported lazily by the pool
                import sglang.srt.mem_cache.memory_pool as memory_pool
                import sglang.srt.mem_cache.ple_state_pool  # noqa: F401
    except Exception as exc:  # an environment without the wheel's deps
        pytest.skip(f"SGLang's memory_pool cannot be imported here: {exc}")
    return memory_pool


def _params(s: StateSpec, layers: list[int]):
    from sglang.srt.configs.mamba_utils import (
        KimiLinearCacheParams,
        KimiLinearStateShape,
        Mamba2CacheParams,
        Mamba2StateDType,
        Mamba2StateShape,
    )

    dt = Mamba2StateDType(conv=DT[s.conv_dtype], temporal=DT[s.ssm_dtype])
    if s.is_kda:
        shape = KimiLinearStateShape(
            conv=list(s.conv_shapes), temporal=s.temporal, num_heads=s.temporal[0], head_dim=s.temporal[1],
            num_k_heads=s.temporal[0], head_k_dim=s.temporal[2], conv_kernel=s.conv_kernel, num_spec=0,
            num_k_heads_per_tp=s.num_k_heads_per_tp,
        )
        return KimiLinearCacheParams(shape=shape, dtype=dt, layers=layers)
    shape = Mamba2StateShape(
        conv=list(s.conv_shapes), temporal=s.temporal, intermediate_size=0, conv_dim=s.conv_shapes[0][0],
        ssm_state_size=s.temporal[2], num_heads=s.temporal[0], head_dim=s.temporal[1], state_size=s.temporal[2],
        conv_kernel=s.conv_kernel, num_k_heads_per_tp=s.num_k_heads_per_tp,
    )
    return Mamba2CacheParams(shape=shape, dtype=dt, layers=layers)


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[tuple[int, ...], Any]]:
    """Record every allocation on the meta device: (shape, dtype), in order."""
    seen: list[tuple[tuple[int, ...], Any]] = []  # (shape, torch dtype): torch is imported by importorskip
    depth = [0]  # meta kernels written in Python call torch.empty themselves: count the outer call only
    # torch.tensor builds the KV pool's pointer / stride tables from Python lists (8 bytes
    # per layer): not in the manifest, so not recorded.
    for name in ("zeros", "empty", "arange", "full", "ones"):
        real = getattr(torch, name)

        def wrapped(*args, _real=real, **kwargs):
            depth[0] += 1
            try:
                t = _real(*args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0 and isinstance(t, torch.Tensor) and t.device.type == "meta" and t.dtype not in IGNORED:
                seen.append((tuple(t.shape), t.dtype))
            return t

        monkeypatch.setattr(torch, name, wrapped)
    _real_mod = torch.get_device_module
    monkeypatch.setattr(torch, "get_device_module", lambda d=None: types.SimpleNamespace(Stream=lambda: None) if str(d) == "meta" else _real_mod(d))
    return seen


GDN = StateSpec(conv_shapes=((2048, 3),), temporal=(8, 128, 128), conv_dtype="bfloat16", ssm_dtype="float32", num_k_heads_per_tp=4, conv_kernel=4)
KDA = StateSpec(conv_shapes=((3, 3072),), temporal=(8, 128, 128), conv_dtype="bfloat16", ssm_dtype="float32",
                num_k_heads_per_tp=8, is_kda=True, conv_kernel=4, disable_conv_window_dedup=True)
MAMBA2 = StateSpec(conv_shapes=((3072, 3),), temporal=(32, 80, 128), conv_dtype="bfloat16", ssm_dtype="bfloat16", conv_kernel=4)
MLA = KVSpec(kind="mla", kv_lora_rank=512, qk_rope_head_dim=64)
MHA = KVSpec(kind="mha", total_kv_heads=2, head_dim=256, v_head_dim=256)

CASES = [
    # state, kv, Dm, topk, replay, cuda, extra_buffer, page
    (s, kv, Dm, topk, replay, cuda, eb, page)
    for s, kv in ((GDN, MHA), (KDA, MLA), (MAMBA2, MHA))
    for Dm, topk, replay in ((0, None, False), (4, 1, False), (4, 4, False), (4, 1, True))
    for cuda, eb, page in ((True, True, 16), (False, False, 1))
    if not (replay and s is MAMBA2)
]


@pytest.mark.parametrize("state,kv,Dm,topk,replay,cuda,extra_buffer,page", CASES)
def test_stage_manifest_is_what_sglang_allocates(mp, monkeypatch, state, kv, Dm, topk, replay, cuda, extra_buffer, page):
    Lr, F, K, N, T, ctx, extra = 3, 2, 10, 5, 64 * page, 100, 4 + Dm
    monkeypatch.setattr(mp, "_is_cpu", not cuda)
    monkeypatch.setattr(mp, "_cpu_has_amx_support", False, raising=False)
    monkeypatch.setattr(mp.MambaPool, "_warmup_fused_copy_slot_kernel", lambda self: None)
    seen = _record(monkeypatch)
    mp.HybridReqToTokenPool(
        size=N, mamba_size=K, mamba_spec_state_size=N, max_context_len=ctx + extra, device="meta",
        enable_memory_saver=False, cache_params=_params(state, list(range(Lr))), mamba_layer_ids=list(range(Lr)),
        enable_mamba_extra_buffer=extra_buffer, speculative_num_draft_tokens=Dm or None, speculative_eagle_topk=topk,
        enable_overlap_schedule=True, enable_linear_replayssm_spec=replay, linear_replayssm_cache_len=16,
    )
    if kv.kind == "mla":
        mp.MLATokenToKVPool(size=T, page_size=page, dtype=torch.bfloat16, kv_lora_rank=kv.kv_lora_rank,
                            qk_rope_head_dim=kv.qk_rope_head_dim, layer_num=F, device="meta", enable_memory_saver=False)
    else:
        # HybridLinearKVPool passes head_num / head_dim and no v_head_dim.
        mp.MHATokenToKVPool(size=T, page_size=page, dtype=torch.bfloat16, head_num=kv.heads_per_rank(1), head_dim=kv.head_dim,
                            layer_num=F, device="meta", enable_memory_saver=False, enable_alt_stream=False)
    mine = stage_tensors(StageAllocationInputs(
        state=state, local_mamba_layers=Lr, local_full_layers=F, kv=kv, kv_dtype="bfloat16", attn_tp=1,
        max_mamba_cache_size=K, max_running_requests=N, max_total_num_tokens=T, page_size=page, context_len=ctx,
        speculative=bool(Dm), num_draft_tokens=Dm, eagle_topk=topk, replayssm_spec=replay, replayssm_cache_len=16,
        req_to_token_extra=extra, device_kind="cuda" if cuda else "cpu", extra_buffer=extra_buffer, overlap_schedule=True,
    ))
    expected = [(t.shape, getattr(torch, TORCH_DTYPES[t.dtype])) for t in mine]
    assert seen == expected, "\n".join(map(str, seen)) + "\n----\n" + "\n".join(map(str, expected))
