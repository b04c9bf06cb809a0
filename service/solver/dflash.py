"""DFLASH and DSPARK speculative decoding (SGLang 0.5.23), as SGLang resolves and sizes them.

Resolution (`arg_groups/speculative_hook._handle_dflash` / `_handle_dspark`): one step and
top-k 1 are forced; the draft-token count D is DFLASH's block size
(`--speculative-dflash-block-size`, else the draft config's `dflash_config.block_size` /
`block_size`, else 16) and DSPARK's gamma + 1 (`--speculative-dspark-block-size`, else the
draft's `dspark_block_size` / block size, else 7); `--max-running-requests` defaults to 48.
The mamba pool then reserves `per_req x (reqs + 1) x D` intermediate state like every
speculative algorithm (service/solver/mamba.py).

Sizing (`model_executor/pool_configurator.DefaultPoolConfigurator`, DFLASH family): the KV
cell is the target's plus the draft's own cell, `dflash_draft_cell_size_per_token`:
draft KV heads on the attention TP x (head_dim + v_head_dim) x draft layers x the draft KV
itemsize (`configure_kv_cache_dtype(is_draft_worker=True, is_dflash=True)`: `auto` is the
draft's own dtype, since the draft worker has no quant config; an fa4 draft keeps its compute
dtype), times the DCP size.
"""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.service.solver.errors import PlanInputError

DFLASH_FAMILY = ("DFLASH", "DSPARK")
DFLASH_DEFAULT_BLOCK_SIZE = 16  # _handle_dflash: "defaulting speculative_num_draft_tokens to 16"
DSPARK_DEFAULT_GAMMA = 7  # dspark_config.DEFAULT_DSPARK_GAMMA
DEFAULT_MAX_RUNNING_REQUESTS = 48
# The releases whose DFLASH / DSPARK hooks and draft cell were read and run here.
VERIFIED_RELEASES = ("0.5.23",)

_ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}


class DraftGeometry(NamedTuple):
    """What SGLang reads off the DFLASH / DSPARK draft's config (the request's draft_model)."""

    num_layers: int
    num_kv_heads: int | None
    head_dim: int | None
    dtype: str | None
    block_size: int | None
    dspark_block_size: int | None


class Resolved(NamedTuple):
    num_draft_tokens: int
    num_steps: int
    topk: int
    max_running_requests: int


def check_release(algorithm: str, release: str) -> None:
    if release not in VERIFIED_RELEASES:
        raise PlanInputError(
            "server_args.speculative_algorithm",
            f"{algorithm} is sized for SGLang {', '.join(VERIFIED_RELEASES)} only (its draft-token count, draft KV cell "
            f"and request caps were checked against that release's code); sglang_version {release} is not verified",
            allowed=list(VERIFIED_RELEASES),
        )


def resolve(
    algorithm: str, *, pp: int, draft: DraftGeometry | None, num_draft_tokens: int | None, max_running_requests: int | None,
    dflash_block_size: int | None, dspark_block_size: int | None,
) -> Resolved | tuple[str, str]:
    """The resolved (D, steps, top-k, max running requests), or SGLang's (exception, message)."""
    if algorithm == "DFLASH":
        if pp != 1:
            return "ValueError", "Currently DFLASH speculative decoding only supports pp_size == 1."
        if draft is None:
            return "ValueError", "DFLASH speculative decoding requires setting --speculative-draft-model-path."
        d = num_draft_tokens
        if dflash_block_size is not None:
            if dflash_block_size <= 0:
                return "ValueError", f"DFLASH requires --speculative-dflash-block-size to be positive, got {dflash_block_size}."
            if d is not None and d != dflash_block_size:
                return ("ValueError", ("Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they "
                                       f"differ. For DFLASH they must match. speculative_num_draft_tokens={d}, "
                                       f"speculative_dflash_block_size={dflash_block_size}."))
            d = dflash_block_size
        if d is None:
            d = draft.block_size if draft.block_size is not None else DFLASH_DEFAULT_BLOCK_SIZE
    else:
        if draft is None:
            return "ValueError", "DSpark dense speculative decoding requires setting --speculative-draft-model-path."
        gamma: int | None
        if dspark_block_size is not None:
            if dspark_block_size <= 0:
                return "ValueError", f"DSpark requires --speculative-dspark-block-size to be positive, got {dspark_block_size}."
            gamma = dspark_block_size
        else:
            gamma = draft.dspark_block_size if draft.dspark_block_size is not None else draft.block_size
            if gamma is None and num_draft_tokens is None:
                gamma = DSPARK_DEFAULT_GAMMA
        d = num_draft_tokens
        if gamma is not None:
            if d is not None and d != gamma + 1:
                return ("ValueError", (f"DSpark speculative_num_draft_tokens must equal gamma + 1 (= {gamma + 1} for gamma={gamma}), "
                                       f"but got speculative_num_draft_tokens={d}."))
            d = gamma + 1
        assert d is not None
        if d < 2:
            return "ValueError", f"DSpark speculative_num_draft_tokens must be >= 2 (= gamma + 1), got {d}."
    mrr = max_running_requests if max_running_requests is not None else DEFAULT_MAX_RUNNING_REQUESTS
    return Resolved(num_draft_tokens=d, num_steps=1, topk=1, max_running_requests=mrr)


def draft_kv_itemsize(draft: DraftGeometry, kv_cache_dtype: str, draft_attention_backend: str) -> int:
    """`configure_kv_cache_dtype` for the DFLASH draft worker (model=None: no quant config)."""
    own = _ITEMSIZE[draft.dtype or "bfloat16"]
    if kv_cache_dtype == "auto" or draft_attention_backend == "fa4":
        return own
    if kv_cache_dtype in ("bf16", "bfloat16"):
        return 2
    if kv_cache_dtype in ("fp8_e4m3", "fp8_e5m2", "mxfp8"):
        return 1
    raise PlanInputError("server_args.kv_cache_dtype", f"{kv_cache_dtype} for the DFLASH draft KV is not modelled; use auto, bf16 or fp8_e4m3")


def draft_cell_bytes(draft: DraftGeometry, *, kv_cache_dtype: str, draft_attention_backend: str, attn_tp: int, attn_dcp: int = 1) -> int:
    """`dflash_draft_cell_size_per_token` x the DCP size (`pool_configurator._dflash_draft_cell_size`)."""
    if draft.num_layers <= 0:
        return 0
    if draft.num_kv_heads is None or draft.head_dim is None:
        missing = "num_kv_heads" if draft.num_kv_heads is None else "head_dim"
        raise PlanInputError(
            f"draft_model.{missing}",
            "DFLASH / DSPARK price the draft's own KV cell from its config (num_key_value_heads, head_dim); give "
            "draft_model.num_kv_heads and draft_model.head_dim, or --speculative-draft-model-path",
        )
    heads = max(1, draft.num_kv_heads // attn_tp)  # ModelConfig.get_num_kv_heads
    itemsize = draft_kv_itemsize(draft, kv_cache_dtype, draft_attention_backend)
    return heads * (2 * draft.head_dim) * draft.num_layers * itemsize * attn_dcp
