"""Bisection over a monotone predicate on integers: the one search behind the remedies
(smallest budget, largest cache size that starts) and the recommend search (cache sizing,
the partition walk's per-stage caps)."""

from __future__ import annotations

from collections.abc import Callable


def smallest_int(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Smallest v in [lo, hi] with ok(v), assuming ok is monotone non-decreasing; None when
    not even ok(hi)."""
    if not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def largest_int(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Largest v in [lo, hi] with ok(v), assuming ok is monotone non-increasing; None when
    not even ok(lo)."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
