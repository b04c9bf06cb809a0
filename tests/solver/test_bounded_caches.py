"""Caches keyed on request data hold a bounded number of BYTES, not only entries
(issue 10 §1): a client that sends a new large layout with every request cannot grow them."""

from __future__ import annotations

import gc
import tracemalloc

from mambasizer.service.solver import stages
from mambasizer.service.solver.launch import prefill_graph_size_count


def _worst_entry(seed: int) -> tuple:
    """A distinct split at the cache's item limit: a quarter stages, the rest layer ids
    (fresh int objects, as a parsed JSON body gives them)."""
    pp = stages.CACHED_SPLIT_MAX_ITEMS // 4
    n = stages.CACHED_SPLIT_MAX_ITEMS - pp
    ids = [seed + 1000 + i for i in range(n)]
    return (seed + 1000 + n, pp, None, tuple(ids[0::2]), tuple(ids[1::2]))


def test_the_stage_split_cache_stays_under_its_byte_bound():
    stages._pp_stages.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        maxsize = stages._pp_stages.cache_info().maxsize
        for seed in range(maxsize * 2):  # every request a new layout
            stages.pp_stages(*_worst_entry(seed))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        assert stages._pp_stages.cache_info().currsize == maxsize
    finally:
        tracemalloc.stop()
        stages._pp_stages.cache_clear()
    # Measured: about 5.1 MiB (84 KB an entry); the bound leaves room for other Pythons.
    assert held < 8 << 20, f"the split cache holds {held / 2**20:.1f} MiB"


def test_a_split_too_large_to_keep_is_computed_not_cached():
    stages._pp_stages.cache_clear()
    n = 4096
    mamba = tuple(i for i in range(n) if i % 4 != 3)
    full = tuple(i for i in range(n) if i % 4 == 3)
    out = stages.pp_stages(n, 1024, None, mamba, full)
    assert stages._pp_stages.cache_info().currsize == 0
    assert [(s.start, s.end) for s in out[:2]] == [(0, 4), (4, 8)]
    assert sum(len(s.mamba_layer_ids) for s in out) == len(mamba)
    # Small splits (every preset) are still cached.
    stages.pp_stages(48, 4, None, tuple(range(0, 48, 2)), tuple(range(1, 48, 2)))
    assert stages._pp_stages.cache_info().currsize == 1
    stages._pp_stages.cache_clear()


def test_the_prefill_graph_table_is_counted_not_built():
    # 2^40 tokens: SGLang's list would hold 2^31 entries; the count is closed form.
    assert prefill_graph_size_count(1 << 40) == 50 + ((1 << 40) - 4608) // 512 + 1
    assert prefill_graph_size_count(8192) == 50 + (8192 - 4608) // 512 + 1
    assert prefill_graph_size_count(3) == 0 and prefill_graph_size_count(4) == 1


def test_the_weights_cache_keeps_few_pasted_configs():
    """A GPU-only plan from a pasted config.json caches its weights per layout (for that
    request's remedy re-plans); a client sending a new ~1 MiB config each time must not make
    the cache hold one config per request."""
    import json

    from mambasizer.service.planner import plan
    from mambasizer.service.presets import get_preset
    from mambasizer.service.solver import gpu_budget

    base = dict(get_preset("qwen3-next-80b-a3b-instruct").hf_config)
    gpu_budget._WEIGHTS_CACHE.clear()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(12):  # each request a different ~512 KiB config (an unread key padded)
            cfg = json.loads(json.dumps({**base, "_padding": f"{i}" + "x" * (512 << 10)}))
            assert plan({"model": {"hf_config": cfg}, "server_args": {"tp_size": 4}, "budget": {"gpu": "h200"}}).feasible
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        pasted = [e for e in gpu_budget._WEIGHTS_CACHE.values() if not e[1]]
    finally:
        tracemalloc.stop()
        gpu_budget._WEIGHTS_CACHE.clear()
    assert len(pasted) == 4
    # 4 configs of 0.5 MiB (plus their layouts) are held; 12 would be over 6 MiB.
    assert held < 4 << 20, f"the weights cache holds {held / 2**20:.1f} MiB"
