"""The ignore-list cache keeps no request's data alive (issue 25 item 8): compiled lists are
kept for the last few checkpoints only, a list over CACHE_MAX_CHARS never, and RE2's own
pattern cache is bypassed; after many large distinct lists the Python heap returns."""

from __future__ import annotations

import gc
import tracemalloc

import re2

from mambasizer.service.solver.weights.quant import ignore_list as IL


def _big_list(seed: int) -> list[str]:
    # 4096 distinct globs and regexes (~150 KiB): over the cache's per-list bound
    return [f"model.layers.{seed}.{i}.*.proj_{'x' * 20}" if i % 2 else f"re:model\\.layers\\.{seed}\\.{i}\\..*" for i in range(IL.MAX_ENTRIES)]


def test_large_lists_are_not_kept_and_memory_returns():
    assert sum(map(len, _big_list(0))) > IL.CACHE_MAX_CHARS
    re2_cached = re2._Regexp._make.cache_info().currsize
    IL.compiled(_big_list(-1)).matches("model.layers.0.mlp")  # warm up the code paths
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for seed in range(4):
            lst = IL.compiled(_big_list(seed))
            assert lst.matches(f"model.layers.{seed}.7.mlp.proj_{'x' * 20}")
            assert not lst.matches("lm_head")
        del lst
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert not any(len(k) == IL.MAX_ENTRIES for k in IL._CACHE)
    assert re2._Regexp._make.cache_info().currsize == re2_cached  # nothing went through re2.compile's cache
    assert after - before < 256 << 10, (before, after)  # one list alone is ~600 KiB of Python strings


def test_small_lists_are_cached_up_to_the_bound():
    for seed in range(IL.CACHE_LISTS + 5):
        first = IL.compiled([f"model.layers.{seed}", "re:lm_.*"])
        assert IL.compiled([f"model.layers.{seed}", "re:lm_.*"]) is first  # a recommend's layouts share it
    assert len(IL._CACHE) == IL.CACHE_LISTS
    assert sum(sum(map(len, k)) for k in IL._CACHE) <= IL.CACHE_LISTS * IL.CACHE_MAX_CHARS
