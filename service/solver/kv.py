"""Budget -> tokens per stage (`DefaultPoolConfigurator`), then the external token
constraints (`config_from_budget` / `_apply_token_constraints`): user cap, MIN across PP
stages, and the second page floor.
"""

from __future__ import annotations

from mambasizer.service.solver.errors import SGLangStartupError
from mambasizer.service.solver.specs import KVSpec

# A stage with no full-attention layer (while another stage has some) reports int64 max:
# "the KV lives on another stage"; the MIN across stages then ignores it.
INT64_MAX = (1 << 63) - 1

NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."


def not_enough_memory() -> SGLangStartupError:
    return SGLangStartupError("not_enough_memory", "RuntimeError", NOT_ENOUGH_MEMORY)


def stage_cell_bytes(
    kv: KVSpec,
    *,
    local_full_layers: int,
    itemsize: int,
    attn_tp: int,
    draft_layers: int,
    prices_draft_kv: bool,
    eagle_cell: str = "add_int",
    attn_dcp: int = 1,
    mxfp8: bool = False,
) -> int:
    """KV bytes per token on one stage: its own full-attention layers only, plus the
    EAGLE-family / STANDALONE draft's layers priced at the target's per-layer cost:
    0.5.22+ `cell + int(cell * d / n)`, 0.5.14-0.5.21 `int(cell * (1 + d / n))` (float
    rounding can differ by a byte), none before 0.5.14 (`eagle_cell`, SizingProfile). Under
    DCP the heads shard over attn_tp // attn_dcp (service/solver/dcp.py)."""
    cell = kv.cell_bytes(local_full_layers, itemsize, attn_tp, attn_dcp, mxfp8)
    if prices_draft_kv and draft_layers > 0 and local_full_layers > 0:
        if eagle_cell == "add_int":
            cell += int(cell * draft_layers / local_full_layers)
        elif eagle_cell == "int_scaled":
            cell = int(cell * (1 + draft_layers / local_full_layers))
    return cell


def stage_tokens(
    budget_bytes: int,
    cell: int,
    *,
    page_size: int,
    kv_on_another_stage: bool,
    max_total_tokens: int | None,
    context_len: int,
    zero_cell_stage: bool = True,
    pp_rank: int = 0,
) -> int:
    """T_s, page-floored. Raises SGLang's "Not enough memory" when it floors to 0.
    Before 0.5.17 (`zero_cell_stage` False) a stage without KV divides by its zero cell."""
    if cell:
        tokens = max(budget_bytes, 0) // cell
    elif not zero_cell_stage:
        raise SGLangStartupError(
            "launch_rejected", "ZeroDivisionError",
            f"integer division or modulo by zero (PP stage {pp_rank} holds no full-attention layer, so its KV cell "
            "is 0 bytes; SGLang 0.5.17 added the guard). Choose an SGLANG_PP_LAYER_PARTITION that gives every stage "
            "a full-attention layer, or use 0.5.17 or later.",
        )
    elif kv_on_another_stage:
        tokens = INT64_MAX
    else:
        tokens = max_total_tokens or context_len
    tokens = tokens // page_size * page_size
    if tokens <= 0:
        raise not_enough_memory()
    return tokens


def synced_tokens(stage_tokens_: list[int], *, max_total_tokens: int | None, page_size: int) -> tuple[int, list[str]]:
    """max_total_num_tokens after the user cap and the PP MIN (identical on every rank)."""
    warnings: list[str] = []
    capped = []
    for t in stage_tokens_:
        if max_total_tokens is not None:
            if max_total_tokens > t:
                msg = (
                    f"max_total_tokens={max_total_tokens} is larger than the profiled value "
                    f"{t}. Use the profiled value instead."
                )
                if msg not in warnings:
                    warnings.append(msg)
            t = min(t, max_total_tokens)
        capped.append(t)
    synced = min(capped)  # the PP all-reduce(MIN); a no-op at pp_size 1
    results = []
    for own in stage_tokens_:
        if synced != own:
            value = synced // page_size * page_size
            if value <= 0:
                raise not_enough_memory()
        else:
            value = own
        results.append(value)
    return results[0], warnings
