"""The pipeline layer partition (`SGLANG_PP_LAYER_PARTITION`) search, exact.

A contiguous partition reaches SGLang's sizing only through three per-stage maxima:

    W  the largest stage's weight bytes (largest TP rank): the world MIN of free memory after load
    M  the largest stage's mamba layer count: the per-slot charge every stage pays
    F  the largest stage's full-attention layer count: the largest KV cell, so the fewest tokens

The plan's figures are non-increasing in W and F, and in M whenever the mamba cache size is
given (`--max-mamba-cache-size`, what the search sets to meet `running_requests`): the KV gets
the rest minus (K + 1) x the per-slot charge. For any objective monotone in the triple, the best
partition is one whose (W, M, F) is Pareto-minimal, and `pareto_partitions` returns, for every
Pareto-minimal triple of every partition, a partition at least as good in all three. It
enumerates caps (M, F) and, for each, finds the least W reachable under them (bisection over W
with a greedy feasibility check, exact for contiguous partitions); it stops raising a cap as
soon as raising it can no longer lower W (the proof is in the loop comments).
tests/recommend/test_partition.py checks it against brute force over every contiguous partition
of thousands of generated layer sequences, and against plan() on real presets.

Under SGLang's default ratio split (no cache size given) the slots K = floor(B / P) - 1 still
fall with M, but the KV keeps B mod P (the floor's remainder), so the KV tokens can RISE with a
larger M (or a larger W, whose smaller rest moves the remainder) by less than one slot's bytes.
There the Pareto partitions are not enough: `triples_within` walks every other triple that an
upper bound built from the real plans (search.py, `_remainder_partitions`, with its proof) does
not rule out, and the search plans them, so the answer is exact there too.

Stages hold at least one layer each (SGLang's parser would accept 0, the model classes are not
written for an empty stage).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import NamedTuple

from mambasizer.service.solver.monotone import largest_int


class LayerCosts(NamedTuple):
    weights: tuple[int, ...]  # per layer: bytes on the largest TP rank
    mamba: tuple[int, ...]  # per layer: 1 for a mamba (linear) layer
    full: tuple[int, ...]  # per layer: 1 for a full-attention layer
    first_extra: int = 0  # bytes the first stage holds besides its layers (embeddings)
    last_extra: int = 0  # bytes the last stage holds besides its layers (final norm, lm_head, MTP layers)
    # Bytes every other stage holds besides its layers (e.g. a tower loaded on every stage);
    # at most min(first_extra, last_extra), so splitting a stage never raises a part's cost.
    middle_extra: int = 0
    # Bytes a stage holds once if it has ANY layer flagged in the mask (e.g. the rotary cache
    # the attention layers of a process share): (bytes, 0/1 per layer).
    once: tuple[tuple[int, tuple[int, ...]], ...] = ()


# Work bound of one enumeration, in layer-steps of the greedy check (about 1 s of CPU on the
# 2-core machine): the shipped presets need at most ~200,000 (Nemotron-3-Ultra at PP 16); a
# layout sent to make the enumeration explode stops here with what it found.
MAX_STEPS = 2_000_000


class PartitionSearchTooLarge(Exception):
    """The enumeration passed MAX_STEPS; `found` holds the partitions it had (not proven optimal)."""

    def __init__(self, found: list[tuple[int, ...]]):
        super().__init__("the partition search passed its work bound")
        self.found = found


class Triple(NamedTuple):
    weights: int
    mamba: int
    full: int


class _Prefix:
    def __init__(self, c: LayerCosts):
        self.n = len(c.weights)
        self.w = (0, *accumulate(c.weights))
        self.m = (0, *accumulate(c.mamba))
        self.f = (0, *accumulate(c.full))
        self.first, self.last, self.middle = c.first_extra, c.last_extra, c.middle_extra
        if self.middle > min(self.first, self.last):
            raise ValueError("middle_extra must not exceed first_extra or last_extra")
        self.once = tuple((b, (0, *accumulate(mask))) for b, mask in c.once)
        self.steps = 0  # layer-steps of the greedy check, against MAX_STEPS

    def base(self, i: int, j: int) -> int:
        """What a stage of layers [i, j) holds besides them (the whole model: both ends)."""
        if i == 0 or j == self.n:
            return (self.first if i == 0 else 0) + (self.last if j == self.n else 0)
        return self.middle

    def layers_w(self, i: int, j: int) -> int:
        """The bytes of layers [i, j) themselves, with the once-per-stage terms they trigger."""
        w = self.w[j] - self.w[i]
        for b, cnt in self.once:
            if cnt[j] > cnt[i]:
                w += b
        return w

    def seg(self, i: int, j: int) -> tuple[int, int, int]:
        """Layers [i, j) as one stage: (weights, mamba layers, full layers). Every term only
        grows as the stage grows, so splitting a stage never raises a part's cost."""
        return self.layers_w(i, j) + self.base(i, j), self.m[j] - self.m[i], self.f[j] - self.f[i]


def triple_of(costs: LayerCosts, parts: Sequence[int]) -> Triple:
    """(W, M, F) of a partition given as layer counts per stage."""
    px = _Prefix(costs)
    W = M = F = 0
    start = 0
    for n in parts:
        w, m, f = px.seg(start, start + n)
        W, M, F = max(W, w), max(M, m), max(F, f)
        start += n
    return Triple(W, M, F)


def _min_stages(px: _Prefix, W: int, M: int, F: int, limit: int) -> list[int] | None:
    """The boundaries of a partition into at most `limit` stages with every stage within the
    caps, or None. Greedy: each non-last stage reaches as far as the caps allow, which leaves
    the shortest possible remainder after k stages (the usual exchange argument), and the last
    stage's cost only shrinks as its start moves right."""
    n = px.n
    px.steps += n
    cuts = [0]
    i = 0
    for _ in range(limit):
        w, m, f = px.seg(i, n)
        if w <= W and m <= M and f <= F:
            cuts.append(n)
            return cuts
        if len(cuts) == limit:
            return None
        # Furthest j < n with [i, j) within the caps (not the last stage: no last extra).
        j = i
        while j < n - 1:
            w = px.layers_w(i, j + 1) + (px.first if i == 0 else px.middle)
            if w > W or px.m[j + 1] - px.m[i] > M or px.f[j + 1] - px.f[i] > F:
                break
            j += 1
        if j == i:
            return None
        cuts.append(j)
        i = j
    return None


def _refine(cuts: list[int], pp: int) -> tuple[int, ...]:
    """Split stages (each part's costs only shrink) until there are exactly pp of them."""
    cuts = list(cuts)
    while len(cuts) - 1 < pp:
        # Split the longest stage in two halves.
        k = max(range(len(cuts) - 1), key=lambda s: cuts[s + 1] - cuts[s])
        a, b = cuts[k], cuts[k + 1]
        cuts.insert(k + 1, a + (b - a) // 2)
    return tuple(cuts[s + 1] - cuts[s] for s in range(pp))


def _least_w(px: _Prefix, pp: int, M: int, F: int, lo: int, hi: int) -> tuple[int, list[int]] | None:
    """The least W in [lo, hi] with a partition into <= pp stages within (W, M, F)."""
    best = _min_stages(px, hi, M, F, pp)
    if best is None:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        cuts = _min_stages(px, mid, M, F, pp)
        if cuts is None:
            lo = mid + 1
        else:
            hi, best = mid, cuts
    return hi, best


def pareto_partitions(costs: LayerCosts, pp: int, max_steps: int = MAX_STEPS, steps: list[int] | None = None) -> list[tuple[int, ...]]:
    """Partitions (layer counts per stage) whose triples cover every Pareto-minimal (W, M, F)
    over all contiguous partitions into `pp` non-empty stages. Raises PartitionSearchTooLarge
    past `max_steps` of work; `steps`, when given, receives the work done."""
    px = _Prefix(costs)
    try:
        return _pareto_partitions(costs, pp, px, max_steps)
    finally:
        if steps is not None:
            steps.append(px.steps)


def _pareto_partitions(costs: LayerCosts, pp: int, px: _Prefix, max_steps: int) -> list[tuple[int, ...]]:
    n = len(costs.weights)
    if pp < 1 or n < pp:
        return []
    if pp == 1:
        return [(n,)]
    total_m, total_f = px.m[n], px.f[n]
    m_lo, f_lo = -(-total_m // pp), -(-total_f // pp)
    w_lo = 0
    w_hi = px.seg(0, n)[0] + px.middle  # no stage of any partition holds more
    found: dict[tuple[int, ...], Triple] = {}

    def least(M: int, F: int) -> int | None:
        if px.steps > max_steps:
            raise PartitionSearchTooLarge(_pareto(found))
        got = _least_w(px, pp, M, F, w_lo, w_hi)
        if got is None:
            return None
        parts = _refine(got[1], pp)
        found.setdefault(parts, triple_of(costs, parts))
        return got[0]

    w_free = least(total_m, total_f)  # no count cap: the least W of any partition
    assert w_free is not None
    for F in range(f_lo, total_f + 1):
        w_f = least(total_m, F)  # the least W under this F cap alone
        if w_f is None:
            continue
        for M in range(m_lo, total_m + 1):
            w = least(M, F)
            # Raising M further cannot lower W below w_f: every later (M', F) is dominated
            # by this (M, F) with W = w_f.
            if w is not None and w == w_f:
                break
        # When even the global least M (ceil(mamba layers / pp), which no partition beats)
        # reaches the unconstrained least W under this F, every partition with more full
        # layers on a stage is dominated: (W >= w_free, M' >= m_lo, F' > F) against the
        # (w_free, m_lo, F) found here.
        w_tight = least(m_lo, F)
        if w_tight is not None and w_tight == w_free:
            break
    return _pareto(found)


def _pareto(found: dict[tuple[int, ...], Triple]) -> list[tuple[int, ...]]:
    items = sorted(found.items(), key=lambda kv: (kv[1], kv[0]))
    out: list[tuple[tuple[int, ...], Triple]] = []
    seen: set[Triple] = set()
    for parts, t in items:
        if t in seen:
            continue
        if any(o.weights <= t.weights and o.mamba <= t.mamba and o.full <= t.full for _, o in out):
            continue
        seen.add(t)
        out.append((parts, t))
    return [parts for parts, _ in out]


def all_partitions(n: int, pp: int):
    """Every composition of n layers into pp non-empty stages (brute force, for tests)."""
    if pp == 1:
        yield (n,)
        return
    for first in range(1, n - pp + 2):
        for rest in all_partitions(n - first, pp - 1):
            yield (first, *rest)


def triples_within(costs: LayerCosts, pp: int, keep: Callable[[int, int, int, int], bool], max_steps: int = MAX_STEPS,
                   steps: list[int] | None = None) -> dict[Triple, tuple[int, ...]]:
    """One partition per (W, M, F) triple of every contiguous partition into `pp` non-empty
    stages that `keep` does not rule out. `keep(W, m_low, m_high, F)` sees the running maxima
    of a prefix of stages (the final W and F are at least these, the final M lies in
    [m_low, m_high]) and must answer False only when no completion can matter: it prunes the
    depth-first walk, which visits each (start, stages left, W, M, F) state once. Without
    weights (a measured budget) only the least F per M is returned (see _counts_only). Raises
    PartitionSearchTooLarge past `max_steps` layer-steps."""
    px = _Prefix(costs)
    try:
        return _triples_within(px, costs, pp, keep, max_steps)
    finally:
        if steps is not None:
            steps.append(px.steps)


def _triples_within(px: _Prefix, costs: LayerCosts, pp: int, keep: Callable[[int, int, int, int], bool],
                    max_steps: int) -> dict[Triple, tuple[int, ...]]:
    n = px.n
    found: dict[Triple, tuple[int, ...]] = {}
    if pp < 1 or n < pp:
        return found
    seen: set[tuple[int, int, int, int, int]] = set()
    cuts: list[int] = [0]
    memo: dict[tuple[int, int, int, int], bool] = {}

    def kept(W: int, lo: int, hi: int, F: int) -> bool:
        key = (W, lo, hi, F)
        got = memo.get(key)
        if got is None:
            got = memo[key] = keep(W, lo, hi, F)
        return got

    # Caps every stage of a kept partition obeys (keep is monotone): at most w_cap bytes and
    # f_cap full layers (else even the most mamba layers cannot keep it), hence at most m_cap
    # mamba layers (the most any such segment holds); a smaller m_cap tightens the other two,
    # until nothing moves. They bound M far below "every mamba layer left" wherever mamba
    # layers come with weights or full-attention layers between them.
    total_m, total_f = px.m[n], px.f[n]
    w_hi = px.seg(0, n)[0] + px.middle
    m_cap = total_m
    while True:
        if not kept(0, 0, m_cap, 0):
            return found
        w_cap = largest_int(0, w_hi, functools.partial(_kept_w, kept, m_cap))
        f_cap = largest_int(0, total_f, functools.partial(_kept_f, kept, m_cap))
        assert w_cap is not None and f_cap is not None  # kept(0, 0, m_cap, 0) held just above
        new_cap = 0
        for a in range(n):
            if px.steps > max_steps:
                raise PartitionSearchTooLarge([])
            for b in range(a + 1, n + 1):
                px.steps += 1
                w, m, f = px.seg(a, b)
                if w > w_cap or f > f_cap:
                    break
                new_cap = max(new_cap, m)
        if new_cap >= m_cap:
            break
        m_cap = new_cap
    if not any(costs.weights) and not (costs.first_extra or costs.last_extra or costs.middle_extra or costs.once):
        return _counts_only(px, pp, kept, m_cap, f_cap, found, max_steps)

    def walk(i: int, k: int, W: int, M: int, F: int) -> None:
        if (i, k, W, M, F) in seen:
            return
        seen.add((i, k, W, M, F))
        if k == 1:
            px.steps += 1
            w, m, f = px.seg(i, n)
            t = Triple(max(W, w), max(M, m), max(F, f))
            if t not in found and kept(t.weights, t.mamba, t.mamba, t.full):
                found[t] = tuple(b - a for a, b in zip(cuts, [*cuts[1:], n], strict=True))
            return
        for j in range(i + 1, n - k + 2):
            px.steps += 1
            if px.steps > max_steps:
                raise PartitionSearchTooLarge(list(found.values()))
            w, m, f = px.seg(i, j)
            nW, nM, nF = max(W, w), max(M, m), max(F, f)
            # W, F and the stage's mamba count only grow with j: once even the most mamba
            # layers any stage could hold cannot keep the prefix, no longer stage can.
            if not kept(nW, nM, max(nM, m_cap), nF):
                break
            # The k - 1 stages after j: each count's largest stage is at least its average,
            # and so is the weight (the last stage's extra and the middle stages' counted).
            q = k - 1
            rest_w = px.w[n] - px.w[j] + px.last + (q - 1) * px.middle
            lw, lm, lf = -(-rest_w // q), -(-(px.m[n] - px.m[j]) // q), -(-(px.f[n] - px.f[j]) // q)
            if not kept(max(nW, lw), max(nM, lm), max(nM, min(m_cap, px.m[n] - px.m[j])), max(nF, lf)):
                continue
            cuts.append(j)
            walk(j, k - 1, nW, nM, nF)
            cuts.pop()

    walk(0, pp, 0, 0, 0)
    return found


def _kept_w(kept: Callable[[int, int, int, int], bool], m_cap: int, w: int) -> bool:
    return kept(w, 0, m_cap, 0)


def _kept_f(kept: Callable[[int, int, int, int], bool], m_cap: int, f: int) -> bool:
    return kept(0, 0, m_cap, f)


def _counts_only(px: _Prefix, pp: int, kept: Callable[[int, int, int, int], bool], m_cap: int, f_cap: int,
                 found: dict[Triple, tuple[int, ...]], max_steps: int) -> dict[Triple, tuple[int, ...]]:
    """No weights (a measured budget): a partition is its (M, F) alone, and with M fixed the
    plan only loses with F (the KV cell grows, the slots stay). So per M, the least F of a
    partition whose largest mamba stage holds exactly M layers is the only triple to plan:
    some stage [a, b) holds M mamba and at most F full layers, the layers before it split
    into k1 stages within the caps and those after into k2, k1 + k2 = pp - 1. The fewest
    stages of a prefix within caps is the greedy's count (each greedy stage reaches furthest);
    the most is one layer each (a single layer is within any caps at least ceil(total / pp))."""
    n = px.n
    total_m, total_f = px.m[n], px.f[n]

    def greedy(M: int, F: int, reverse: bool) -> list[int]:
        """fewest[a]: the least stages covering the first (reverse: last) a layers within caps."""
        fewest = [0] * (n + 1)
        count, end = 0, 0  # layers covered by `count` greedy stages
        pos = 0
        while end < n:
            start, j = end, end
            while j < n:
                lo, hi = (n - j - 1, n - start) if reverse else (start, j + 1)
                if px.m[hi] - px.m[lo] > M or px.f[hi] - px.f[lo] > F:
                    break
                j += 1
            px.steps += j - start + 1
            if j == start:
                return [n + 1] * (n + 1)  # a single layer over the caps: nothing fits
            count += 1
            for a in range(pos + 1, j + 1):
                fewest[a] = count
            pos, end = j, j
        return fewest

    def parts_of(a: int, b: int, k1: int, M: int, F: int) -> tuple[int, ...]:
        """The partition: [0, a) into k1 stages, [a, b), [b, n) into the rest, within caps."""
        def split(lo: int, hi: int, k: int) -> list[int]:
            cuts = [lo]
            while cuts[-1] < hi:  # greedy from the left
                j = cuts[-1]
                while j < hi and px.m[j + 1] - px.m[cuts[-1]] <= M and px.f[j + 1] - px.f[cuts[-1]] <= F:
                    j += 1
                cuts.append(j)
            return list(_refine(cuts, k)) if k else []
        return (*split(0, a, k1), b - a, *split(b, n, pp - 1 - k1))

    for M in range(-(-total_m // pp), m_cap + 1):
        for F in range(-(-total_f // pp), f_cap + 1):
            if not kept(0, M, M, F):
                break  # a larger F only loses more
            pre, suf = greedy(M, F, False), greedy(M, F, True)
            hit = None
            for a in range(n):
                if px.steps > max_steps:
                    raise PartitionSearchTooLarge(list(found.values()))
                for b in range(a + 1, n + 1):
                    px.steps += 1
                    m, f = px.m[b] - px.m[a], px.f[b] - px.f[a]
                    if m > M or f > F:
                        break
                    if m == M and pre[a] + suf[n - b] + 1 <= pp <= a + (n - b) + 1:
                        k1 = max(pre[a], pp - 1 - (n - b))
                        hit = parts_of(a, b, k1, M, F)
                        break
                if hit is not None:
                    break
            if hit is not None:
                found[Triple(0, M, F)] = hit
                break  # the least F for this M
    return found
