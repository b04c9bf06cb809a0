"""Pipeline-parallel layer ranges (`distributed/utils.get_pp_indices`) and the largest-stage
share that every stage is charged for its mamba state.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from mambasizer.service.solver.errors import PlanInputError

PARTITION_FIELD = "env.SGLANG_PP_LAYER_PARTITION"


class StageRange(NamedTuple):
    pp_rank: int
    start: int
    end: int
    # This stage's own layers (ascending), sliced once when the stages are built.
    mamba_layer_ids: tuple[int, ...] = ()
    full_attention_layer_ids: tuple[int, ...] = ()


def _in_range(layer_ids: Sequence[int], start: int, end: int) -> tuple[int, ...]:
    """The ids in [start, end): one slice, because layout id tuples are ascending
    (the families.py adapters build them so; tests/solver/test_layout_ids.py)."""
    return tuple(layer_ids[bisect_left(layer_ids, start):bisect_left(layer_ids, end)])


def parse_partition(text: str | None, pp_size: int, num_hidden_layers: int) -> list[int] | None:
    """SGLANG_PP_LAYER_PARTITION, validated as get_pp_indices validates it.
    Ignored when pp_size == 1 (a singleton PP group owns every layer)."""
    if text is None or pp_size == 1:
        return None
    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        raise PlanInputError(PARTITION_FIELD, f"Invalid partition string: {text} (comma-separated layer counts, one per PP stage)") from None
    if len(parts) != pp_size:
        raise PlanInputError(PARTITION_FIELD, f"has {len(parts)} entries but pp_size is {pp_size}; give one layer count per stage")
    if sum(parts) != num_hidden_layers:
        raise PlanInputError(PARTITION_FIELD, f"sums to {sum(parts)} but the model has num_hidden_layers={num_hidden_layers}")
    return parts


def pp_stages(
    num_hidden_layers: int,
    pp_size: int,
    partition: Sequence[int] | None = None,
    mamba_layer_ids: Sequence[int] = (),
    full_attention_layer_ids: Sequence[int] = (),
) -> tuple[StageRange, ...]:
    """The stages' layer ranges, each with its own share of the given (ascending) ids."""
    key = (
        num_hidden_layers, pp_size, None if partition is None else tuple(partition),
        tuple(mamba_layer_ids), tuple(full_attention_layer_ids),
    )
    if pp_size + len(key[3]) + len(key[4]) > CACHED_SPLIT_MAX_ITEMS:
        return _pp_stages.__wrapped__(*key)  # too large to keep: computed (linear), not cached
    return _pp_stages(*key)


# Model structure, not an answer: the same layout at the same PP size always splits the
# same way, and most requests repeat a handful of (model, pp_size) pairs. Immutable result.
# Bounded in bytes, not only entries: only splits of at most CACHED_SPLIT_MAX_ITEMS
# (stages + layer ids) are kept, so an entry (key and value) holds about 84 KB and the 64
# entries about 5 MiB whatever layouts clients send (tests/solver/test_bounded_caches.py
# measures the worst case). Every preset is far below the limit.
CACHED_SPLIT_MAX_ITEMS = 1024


@lru_cache(maxsize=64)
def _pp_stages(
    num_hidden_layers: int,
    pp_size: int,
    partition: tuple[int, ...] | None,
    mamba_layer_ids: tuple[int, ...],
    full_attention_layer_ids: tuple[int, ...],
) -> tuple[StageRange, ...]:
    stages = []
    for rank in range(pp_size):
        if partition is not None:
            start = sum(partition[:rank])
            end = start + partition[rank]
        else:
            base, rem = divmod(num_hidden_layers, pp_size)
            # The LAST `rem` stages get one extra layer.
            if rank >= pp_size - rem:
                start = rank * (base + 1) - (pp_size - rem)
                end = start + base + 1
            else:
                start = rank * base
                end = start + base
        stages.append(StageRange(rank, start, end, _in_range(mamba_layer_ids, start, end), _in_range(full_attention_layer_ids, start, end)))
    return tuple(stages)


def largest_stage_scale(total_mamba_layers: int, stages: Sequence[StageRange], whole_model: bool = False) -> float:
    """The PP scaling rule: every rank charges the largest stage's share of the mamba
    layers, `max_s |L ∩ stage_s| / |L|` as a float, so all ranks derive the same pool
    without a collective. Before sglang PR #33666 ("whole-model") every stage paid for all.
    `stages` come from pp_stages with the model's mamba layer ids."""
    total = total_mamba_layers
    if whole_model or len(stages) <= 1 or not total:
        largest = total
    else:
        largest = max(len(s.mamba_layer_ids) for s in stages)
    return largest / max(total, 1)
