"""Per-layer costs of a model for the partition search, read off the solver's own weights.

The weight bytes of a stage (weights.py) are its layers' bytes plus what only the first stage
(embeddings) or only the last stage (final norm, lm_head, MTP layers) holds. The per-layer
figures are taken from `stage_weight_bytes` itself, one middle stage per layer, so the search
uses the solver's numbers and no second copy of SGLang's rules; tests/recommend/test_layers.py
checks that the sums equal `stage_weight_bytes` for real partitions.
"""

from __future__ import annotations

from typing import Optional

from service.recommend.partition import LayerCosts
from service.solver.layout import ModelLayout
from service.solver.stages import StageRange
from service.solver.weights import stage_weight_bytes


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


def layer_costs(layout: ModelLayout, *, tp_size: int, pp_size: int, ep_size: int, load_nextn: bool, draft_num_layers: Optional[int]) -> LayerCosts:
    key = (tp_size, pp_size, ep_size, load_nextn, draft_num_layers)
    entry = _CACHE.get(id(layout))
    if entry is None or entry[0] is not layout:
        if len(_CACHE) >= 32:
            _CACHE.pop(next(iter(_CACHE)))
        entry = _CACHE[id(layout)] = (layout, {})
    costs = entry[1].get(key)
    if costs is None:
        costs = _layer_costs(layout, *key)
        if len(entry[1]) < 64:
            entry[1][key] = costs
    return costs


def _layer_costs(layout: ModelLayout, tp: int, pp: int, ep: int, load_nextn: bool, draft: Optional[int]) -> LayerCosts:
    n = layout.num_hidden_layers
    kw = dict(tp_size=tp, ep_size=ep, load_nextn=load_nextn, draft_num_layers=draft)
    # Every layer as a middle stage of one wide pipeline (pp_rank 1 of n + 2 ranks): its bytes
    # alone, no first- or last-stage parameters.
    middles = [StageRange(1, i, i + 1) for i in range(n)]
    dummies = [StageRange(1, 0, 0), StageRange(1, 0, 0)]
    per_layer = stage_weight_bytes(layout, pp_size=n + 2, stages=middles + dummies, **kw)[:n]
    # The first and the last stage of the real pipeline, holding no layer: their extras.
    empty = [StageRange(r, 0, 0) for r in range(pp)]
    ends = stage_weight_bytes(layout, pp_size=pp, stages=empty, **kw)
    mamba, full = _flags(layout)
    return LayerCosts(tuple(per_layer), mamba, full, ends[0], ends[-1])
