"""Decode context parallelism (`--dcp-size` / `--decode-context-parallel-size`) as SGLang
0.5.23 sizes it.

* `configs/model_config.py:get_num_kv_heads(attn_tp, dcp)`: the ranks of a DCP group hold
  the same KV heads, so heads shard over attn_tp // dcp groups: max(1, H_kv // (attn_tp //
  dcp)) per rank (MLA's latent is per token, unchanged); the KV cell is priced with them
  (`DefaultPoolConfigurator._compute_cell_size`, the EAGLE draft share at the same rate);
* the pool holds max_total_num_tokens rows per rank and `resolve_max_num_reqs` reads those
  rows; the allocator hands out T x dcp logical ids in pages of page x dcp
  (`_build_token_to_kv_pool_allocator`), which is what a request can use
  (`logical_token_capacity`);
* `cuda_graph_hook.disable_breakable_cudagraph_if_incompatible`: the breakable prefill graph
  is off with dcp > 1;
* `distributed/parallel_state.py:initialize_model_parallel` refuses a dcp_size not dividing
  tp_size, and get_num_kv_heads divides by zero when dcp exceeds the attention TP: both are
  input errors here, with SGLang's wording;
* Kimi-K3 (`model_overrides/kimi_k3.py`) forces its DCP backends (prefill trtllm_mla,
  decode cutedsl_mla) after checking FlashInfer >= 0.6.17 exposes `enable_dcp`; CuteDSL MLA
  is Blackwell-only, so on Hopper SGLang refuses it (`attention_hook`), and any other
  decode backend is refused by the override itself.
"""

from __future__ import annotations

from mambasizer.service.solver.errors import PlanInputError

KIMI_K3_ARCH = "KimiK3ForConditionalGeneration"


def check(tp_size: int, attn_tp_size: int, dcp_size: int) -> None:
    if dcp_size <= 1:
        return
    if tp_size % dcp_size != 0:
        raise PlanInputError(
            "server_args.dcp_size",
            f"tensor_model_parallel_size ({tp_size}) must be divisible by decode_context_parallel_size ({dcp_size}) "
            "(SGLang 0.5.23's initialize_model_parallel raises RuntimeError); use a dcp_size dividing tp_size",
        )
    if attn_tp_size // dcp_size == 0:
        raise PlanInputError(
            "server_args.dcp_size",
            f"is {dcp_size} but the attention TP is {attn_tp_size} (tp_size // attn_dp_size): SGLang 0.5.23's "
            "get_num_kv_heads shards KV heads over attn_tp // dcp_size groups and fails with ZeroDivisionError; "
            f"use a dcp_size of at most {attn_tp_size}",
        )


def logical_tokens(max_total_num_tokens: int, dcp_size: int) -> int:
    """Request tokens the pool of T per-rank rows holds (`logical_token_capacity`)."""
    return max_total_num_tokens * dcp_size


def allocator_page_size(page_size: int, dcp_size: int) -> int:
    return page_size * dcp_size


def kimi_k3_rejection(architecture: str, dcp_size: int, attention_backend: str | None) -> tuple[str, str] | None:
    """(exception, message) SGLang raises for Kimi-K3 with DCP on a Hopper GPU with
    FlashInfer >= 0.6.17 installed, or None."""
    if architecture != KIMI_K3_ARCH or dcp_size <= 1:
        return None
    if attention_backend is None:
        # The override keeps cutedsl_mla for decode; the attention hook then refuses it off SM100.
        return "ValueError", "CuteDSL MLA backend is only supported on Blackwell GPUs (SM100). Please use a different backend."
    return "AssertionError", f"Decode attention backend for Kimi-K3 DCP must be 'cutedsl_mla' or 'aiter', got {attention_backend!r}."
