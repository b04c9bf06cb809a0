"""Per-layer costs of a model for the partition search, read off the solver's own weights.

The weight bytes of a stage (weights.py) are its layers' bytes, what the first stage
(embeddings), the last (final norm, lm_head, MTP layers) or every stage (a vision tower) holds,
and what a stage holds once if it has any layer of a kind (the rotary cache its attention layers
share). All of it is read off `stage_weight_breakdown` itself, by parameter group, so the search
uses the solver's numbers and no second copy of SGLang's rules; a model whose groups fit none of
these shapes gets no partition search (None). tests/recommend/test_layers.py checks that the
sums equal `stage_weight_bytes` on real partitions.
"""

from __future__ import annotations

from collections.abc import Callable

from mambasizer.service.recommend.partition import LayerCosts, _Prefix
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange, pp_stages
from mambasizer.service.solver.weights import stage_weight_breakdown, stage_weight_bytes


def _flags(layout: ModelLayout) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = layout.num_hidden_layers
    mamba, full = set(layout.mamba_layer_ids), set(layout.full_attention_layer_ids)
    return tuple(int(i in mamba) for i in range(n)), tuple(int(i in full) for i in range(n))


def counts_only(layout: ModelLayout) -> LayerCosts:
    """A measured budget: the partition does not move the measured free memory the request
    gave, so only the layer counts matter."""
    mamba, full = _flags(layout)
    return LayerCosts((0,) * layout.num_hidden_layers, mamba, full)


# Per layout object (kept beside its id so a recycled id never matches; a preset's layout lives
# for the process) and parallel layout. Bounded: 32 layouts x 64 layouts of parallelism.
_CACHE: dict[int, tuple[ModelLayout, dict]] = {}


def layer_costs(layout: ModelLayout, *, tp_size: int, pp_size: int, ep_size: int, load_nextn: bool, draft_num_layers: int | None) -> LayerCosts | None:
    """None when the weights do not decompose into per-layer bytes plus per-stage constants."""
    key = (tp_size, pp_size, ep_size, load_nextn, draft_num_layers)
    entry = _CACHE.get(id(layout))
    if entry is None or entry[0] is not layout:
        if len(_CACHE) >= 32:
            _CACHE.pop(next(iter(_CACHE)))
        entry = _CACHE[id(layout)] = (layout, {})
    if key in entry[1]:
        return entry[1][key]
    costs = _layer_costs(layout, *key)
    if len(entry[1]) < 64:
        entry[1][key] = costs
    return costs


def _groups(ws) -> dict[str, int]:
    return dict(ws.groups)


def _layer_costs(layout: ModelLayout, tp: int, pp: int, ep: int, load_nextn: bool, draft: int | None) -> LayerCosts | None:
    n = layout.num_hidden_layers
    # Middle stages of one wide pipeline (pp_rank 1 of n + 3 ranks): every layer alone, no
    # layer, and every layer together. Per parameter group, a layer's bytes are its stage's
    # less the empty stage's (what every stage holds). A group is additive when the whole
    # equals the sum; held once per stage (the rotary cache the attention layers share) when
    # every layer that has it shows the whole's amount; anything else is not modelled here.
    mid = [StageRange(1, i, i + 1) for i in range(n)] + [StageRange(1, 0, 0), StageRange(1, 0, n), StageRange(1, 0, 0)]
    got = stage_weight_breakdown(layout, tp_size=tp, pp_size=n + 3, ep_size=ep, stages=mid, load_nextn=load_nextn, draft_num_layers=draft)
    empty, whole = _groups(got[n]), _groups(got[n + 1])
    singles = [_groups(g) for g in got[:n]]
    per_layer = [0] * n
    once = []
    for g in sorted(set(whole) | {k for s in singles for k in s}):
        vals = [s.get(g, 0) - empty.get(g, 0) for s in singles]
        total = whole.get(g, 0) - empty.get(g, 0)
        if min(vals) < 0:
            return None
        if sum(vals) == total:
            per_layer = [a + b for a, b in zip(per_layer, vals, strict=True)]
        elif all(v in (0, total) for v in vals):
            once.append((total, tuple(int(v > 0) for v in vals)))
        else:
            return None
    # The real pipeline with no layer on any stage: what its first, middle and last stages hold.
    def weights(pp_size: int, stages: list[StageRange]) -> tuple[int, ...]:
        return stage_weight_bytes(layout, tp_size=tp, pp_size=pp_size, ep_size=ep, stages=stages, load_nextn=load_nextn, draft_num_layers=draft)

    ends = weights(pp, [StageRange(r, 0, 0) for r in range(pp)])
    middle = ends[1] if pp > 2 else sum(empty.values())
    if middle > min(ends[0], ends[-1]):
        return None
    mamba, full = _flags(layout)
    costs = LayerCosts(tuple(per_layer), mamba, full, ends[0], ends[-1], middle, tuple(once))
    return costs if _agrees(layout, costs, pp, weights) else None


def _agrees(layout: ModelLayout, costs: LayerCosts, pp: int, weights: Callable[[int, list[StageRange]], tuple[int, ...]]) -> bool:
    """The decomposition reproduces stage_weight_bytes on SGLang's default partition and on
    one uneven partition (a cheap guard: the tests check many more)."""
    n = layout.num_hidden_layers
    if pp < 2 or n < pp:
        return True
    default = [s.end - s.start for s in pp_stages(n, pp)]
    uneven = [n - pp + 1] + [1] * (pp - 1)
    px = _Prefix(costs)
    for parts in (default, uneven):
        want = weights(pp, list(pp_stages(n, pp, parts, layout.mamba_layer_ids, layout.full_attention_layer_ids)))
        start, got = 0, []
        for k in parts:
            got.append(px.seg(start, start + k)[0])
            start += k
        if tuple(got) != tuple(want):
            return False
    return True
