"""The estimated budget's probe arithmetic against SGLang 0.5.23's own
`get_available_gpu_memory` (utils/common.py), driven on the CPU with the CUDA queries and the
world all-reduce faked: the free bytes each rank would measure go in, SGLang's GiB float comes
out, and ours (`gpu_budget.probe_gib` over the world MIN) must equal it exactly, with and
without the float32 all-reduce."""

from __future__ import annotations

import types

import pytest

from mambasizer.service.solver import gpu_budget

torch = pytest.importorskip("torch")
if __import__("importlib.util").util.find_spec("sglang") is None:
    pytest.skip("needs the sglang==0.5.23 wheel", allow_module_level=True)


@pytest.fixture(scope="module")
def common():
    """SGLang's utils/common.py, imported by the oracle's loader (which fakes the GPU-only
    imports, triton among them, while the wheel loads)."""
    import sys

    import sglang_ref

    sglang_ref._load()
    return sys.modules["sglang.srt.utils.common"]


def sglang_probe(common, monkeypatch, free_by_rank: list[int], distributed: bool) -> float:
    """SGLang's probe as rank 0 sees it: its own free bytes, MIN-all-reduced over the world."""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _i: types.SimpleNamespace(is_integrated=False))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda _i=None: (free_by_rank[0], 0))

    def all_reduce(tensor, op=None, group=None):
        # Every rank contributes its figure through the same float32 tensor.
        others = torch.tensor(free_by_rank, dtype=tensor.dtype)
        tensor.copy_(torch.minimum(tensor, others.min()))

    monkeypatch.setattr(torch.distributed, "all_reduce", all_reduce)
    return common.get_available_gpu_memory("cuda", 0, distributed=distributed, empty_cache=True, cpu_group=object())


CASES = [
    # (capacity MiB, tp, pp, per-stage weights bytes)
    (143771, 1, 1, [37 * 2**30 + 12_345]),
    (143771, 4, 1, [39_916_962_304]),
    (81559, 2, 4, [26 * 2**30 + 1, 28 * 2**30 + 777, 27 * 2**30, 28 * 2**30 + 5]),
    (95830, 8, 2, [41 * 2**30 + 99, 40 * 2**30]),
]


@pytest.mark.parametrize("capacity, tp, pp, weights", CASES)
def test_f_pre_and_f_post_equal_sglangs_probe(common, monkeypatch, capacity, tp, pp, weights):
    est = gpu_budget.estimate(capacity, weights, tp_size=tp, pp_size=pp)
    distributed = tp * pp > 1
    # Before load: every rank holds the same residents.
    before = sglang_probe(common, monkeypatch, [est.free_before_bytes] * (tp * pp), distributed)
    assert est.free_before_gib == before
    # After load: each stage's ranks measure their own free bytes; the all-reduce takes the MIN.
    ranks = [free for free in est.stage_free_after_bytes for _ in range(tp)]
    after = sglang_probe(common, monkeypatch, ranks, distributed)
    assert est.free_after_gib == after
    if distributed:
        # The float32 step is real: the exact GiB figure differs from SGLang's.
        assert min(est.stage_free_after_bytes) / 2**30 != after or min(est.stage_free_after_bytes) % 2**13 == 0
