"""Conformance: a decode node's request pool against SGLang 0.5.23's own
`HybridMambaDecodeReqToTokenPool` (disaggregation/decode.py), built on torch's `meta`
device (allocating costs nothing) the way tests/worker/test_manifest_vs_sglang.py builds
the aggregated pools: every allocation it makes, in order, shape and dtype, equals
`allocation.stage_tensors` with `decode_pre_alloc` set, and its row counts (request rows,
mamba slots) equal `disaggregation.decode_pool`.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if importlib.util.find_spec("sglang") is None:
    pytest.skip("the SGLang 0.5.23 wheel is not installed", allow_module_level=True)

from mambasizer.service.solver import disaggregation  # noqa: E402
from mambasizer.service.solver.allocation import StageAllocationInputs, stage_tensors  # noqa: E402
from mambasizer.service.worker.devices import TORCH_DTYPES  # noqa: E402
from tests.conformance import sglang_ref  # noqa: E402
from tests.worker.test_manifest_vs_sglang import GDN, KDA, MAMBA2, MHA, _params, _record  # noqa: E402


@pytest.fixture(scope="module")
def pools():
    try:
        sglang_ref._load()
        with sglang_ref._fakes_active():
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import sglang.srt.mem_cache.mamba_checkpoint_pool  # imported lazily by the pool
                import sglang.srt.mem_cache.memory_pool as memory_pool
                import sglang.srt.mem_cache.ple_state_pool  # noqa: F401

                decode = _decode_pool_classes()
    except Exception as exc:  # an environment without the wheel's deps
        pytest.skip(f"SGLang's decode pool cannot be imported here: {exc}")
    return decode, memory_pool


_POOL_CLASSES = ("DecodeReqToTokenPool", "HybridMambaDecodeReqToTokenPool")


def _decode_pool_classes() -> types.SimpleNamespace:
    """SGLang's own DecodeReqToTokenPool and HybridMambaDecodeReqToTokenPool, compiled from
    the installed wheel's disaggregation/decode.py. That module as a whole imports the
    scheduler and the OpenAI protocol (absent on this CPU host), so only its import lines
    (those that import here) and the two class bodies run, unchanged, from its own file."""
    spec = importlib.util.find_spec("sglang.srt.disaggregation.decode")
    assert spec is not None and spec.origin
    tree = ast.parse(Path(spec.origin).read_text())
    namespace: dict = {"__name__": "sglang.srt.disaggregation.decode", "logger": logging.getLogger("sglang.decode_pool")}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            try:
                exec(compile(ast.Module([node], []), spec.origin, "exec"), namespace)
            except Exception:  # scheduler-side imports the two pools do not use
                pass
    classes: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in _POOL_CLASSES]
    assert [getattr(c, "name", None) for c in classes] == list(_POOL_CLASSES)
    exec(compile(ast.Module(classes, []), spec.origin, "exec"), namespace)
    return types.SimpleNamespace(**{name: namespace[name] for name in _POOL_CLASSES})


# (state, Dm, topk, extra_buffer, overlap, N, K, pre_alloc): K below and above (N + pre) x slots.
CASES = [
    (GDN, 0, None, False, True, 32, 32, 64),  # the mrr 32 decode node: 97 rows vs 33
    (GDN, 0, None, False, True, 300, 300, 0),
    (GDN, 0, None, True, True, 8, 10, 16),  # decode radix on: 1 + 2 tracking slots per request
    (GDN, 0, None, True, False, 8, 200, 16),
    (GDN, 4, 1, False, True, 6, 7, 12),  # MTP: speculative rows N + pre
    (KDA, 4, 1, False, True, 5, 5, 10),
    (MAMBA2, 0, None, False, True, 16, 4, 32),
]


@pytest.mark.parametrize("state,Dm,topk,extra_buffer,overlap,N,K,pre", CASES)
def test_decode_pool_is_what_sglang_allocates(pools, monkeypatch, state, Dm, topk, extra_buffer, overlap, N, K, pre):
    decode, mp = pools
    Lr, ctx, extra = 3, 100, 4 + Dm
    monkeypatch.setattr(mp, "_is_cpu", False)
    monkeypatch.setattr(mp, "_cpu_has_amx_support", False, raising=False)
    monkeypatch.setattr(mp.MambaPool, "_warmup_fused_copy_slot_kernel", lambda self: None)
    seen = _record(monkeypatch)
    pool = decode.HybridMambaDecodeReqToTokenPool(
        size=N, max_context_len=ctx + extra, device="meta", enable_memory_saver=False,
        cache_params=_params(state, list(range(Lr))), mamba_layer_ids=list(range(Lr)),
        speculative_num_draft_tokens=Dm or None, speculative_eagle_topk=topk, enable_mamba_extra_buffer=extra_buffer,
        pre_alloc_size=pre, enable_overlap_schedule=overlap, mamba_size=K,
    )
    x = StageAllocationInputs(
        state=state, local_mamba_layers=Lr, local_full_layers=0, kv=MHA, kv_dtype="bfloat16", attn_tp=1,
        max_mamba_cache_size=K, max_running_requests=N, max_total_num_tokens=64, page_size=1, context_len=ctx,
        speculative=bool(Dm), num_draft_tokens=Dm, eagle_topk=topk, replayssm_spec=False, replayssm_cache_len=16,
        req_to_token_extra=extra, device_kind="cuda", extra_buffer=extra_buffer, overlap_schedule=overlap,
        decode_pre_alloc=pre,
    )
    expected = [(t.shape, getattr(torch, TORCH_DTYPES[t.dtype])) for t in stage_tensors(x)]
    assert seen == expected, "\n".join(map(str, seen)) + "\n----\n" + "\n".join(map(str, expected))
    ours = disaggregation.decode_pool(N, K, pre, extra_buffer, overlap)
    assert pool._alloc_size == ours.request_rows
    assert pool.req_to_token.shape[0] == ours.request_rows
    assert pool.mamba_pool.size == ours.mamba_slots
