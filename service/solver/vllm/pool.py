"""vLLM's one block pool: layers -> KV-cache groups -> bytes per block per PP stage ->
num_blocks, and what a request draws from it.

* `group_layers`: `_get_kv_cache_groups_uniform_page_size` (v1/core/kv_cache_planning.py):
  layers bucketed by spec (attention, mamba); the group size is the smallest bucket's layer
  count, or the largest's when largest < 1.5 x smallest; bucket b's i-th group is
  `layers[i::num_groups]`, so groups spread over the PP stages.
* `stage_bytes_per_block`: `_project_kv_cache_groups_to_worker` + `_get_kv_cache_bytes_per_block`:
  the largest projected group's layer count x the page.
* `num_blocks`: `get_kv_cache_configs`: available // bytes_per_block per worker, then the
  minimum over all workers (every TP rank of a stage holds the same specs).
* `group_blocks_per_request`: `cdiv(spec.max_memory_usage_bytes, page)`: attention
  `cdiv(max_model_len, block)`, mamba `2 + spec + checkpoint` (align) or `1 + spec` (none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Group(NamedTuple):
    kind: str  # "attention" | "mamba"
    layers: tuple[int, ...]


class Grouping(NamedTuple):
    groups: tuple[Group, ...]
    group_size: int
    padding_layers: int


def group_layers(buckets: Sequence[tuple[str, Sequence[int]]]) -> Grouping:
    """Buckets in the order vLLM meets their first layer; each a (kind, ascending layer ids)."""
    live = [(k, tuple(ids)) for k, ids in buckets if ids]
    sizes = [len(ids) for _, ids in live]
    group_size = min(sizes)
    if max(sizes) < group_size * 1.5:
        group_size = max(sizes)
    groups: list[Group] = []
    padding = 0
    for kind, ids in live:
        pad = group_size - len(ids) % group_size
        if pad != group_size:
            padding += pad
        n = _cdiv(len(ids), group_size)
        groups.extend(Group(kind, ids[i::n]) for i in range(n))
    return Grouping(tuple(groups), group_size, padding)


def stage_bytes_per_block(groups: Sequence[Group], stage_layers: frozenset[int], page_bytes: int) -> int:
    return max(sum(1 for lid in g.layers if lid in stage_layers) for g in groups) * page_bytes


class RequestBlocks(NamedTuple):
    per_group: tuple[int, ...]
    total: int


def group_blocks_per_request(
    groups: Sequence[Group], max_model_len: int, block_size: int, *, align: bool, num_spec: int, checkpoint_blocks: int,
) -> RequestBlocks:
    per: list[int] = []
    for g in groups:
        if g.kind == "attention":
            per.append(_cdiv(max_model_len, block_size))
        elif align:
            per.append(2 + num_spec + checkpoint_blocks)
        else:
            per.append(1 + num_spec)
    return RequestBlocks(tuple(per), sum(per))


def estimate_max_model_len(
    available: int, bytes_per_block: int, groups: Sequence[Group], max_model_len: int, block_size: int,
    *, align: bool, num_spec: int, checkpoint_blocks: int,
) -> int:
    """`_estimate_max_model_len_from_groups`: the binary search over [1, max_model_len]."""

    def fits(n: int) -> bool:
        blocks = group_blocks_per_request(groups, n, block_size, align=align, num_spec=num_spec, checkpoint_blocks=checkpoint_blocks)
        return bytes_per_block * blocks.total <= available

    left, right = 1, max_model_len
    if not fits(left):
        return 0
    result = 1
    while left <= right:
        mid = (left + right) // 2
        if fits(mid):
            result, left = mid, mid + 1
        else:
            right = mid - 1
    return result


def format_gib(b: int) -> str:
    """vLLM's `format_gib`: GiB rounded to 2 decimals, printed as Python prints a float."""
    return f"{round(b / (1 << 30), 2)}"
