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
  runs on SM100 / SM103 only (B200, GB200, B300, GB300: page 32 or 64, else 64), so off them
  SGLang refuses it (`attention_hook`), and any other decode backend is refused by the
  override itself. The main attention backend stays the platform default (its SM100 Kimi-K3
  trtllm_mla default applies only without DCP).
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


# SGLang's Kimi-K3 DCP override keeps this decode backend (prefill: trtllm_mla).
KIMI_K3_DCP_DECODE = "cutedsl_mla"


def kimi_k3_dcp_decode(architecture: str, dcp_size: int, attention_backend: str | None) -> str | None:
    """The decode backend Kimi-K3's DCP override sets (cutedsl_mla when the decode backend is
    unset or cutedsl_mla), or None when the override does not set it."""
    if architecture != KIMI_K3_ARCH or dcp_size <= 1 or attention_backend not in (None, KIMI_K3_DCP_DECODE):
        return None
    return KIMI_K3_DCP_DECODE


def kimi_k3_rejection(architecture: str, dcp_size: int, attention_backend: str | None, is_sm100: bool) -> tuple[str, str] | None:
    """(exception, message) SGLang raises for Kimi-K3 with DCP, or None.

    FlashInfer assumption: the override first checks that FlashInfer >= 0.6.17 exposes
    `enable_dcp` on its MLA decode kernel; SGLang 0.5.23's CUDA wheel requires
    flashinfer_python 0.7.2, so it is taken as installed (without it SGLang stops with a
    RuntimeError naming FlashInfer 0.6.17 on every GPU)."""
    if architecture != KIMI_K3_ARCH or dcp_size <= 1:
        return None
    if kimi_k3_dcp_decode(architecture, dcp_size, attention_backend) is not None:
        if is_sm100:
            return None  # SM100 / SM103: prefill trtllm_mla, decode cutedsl_mla, page 32 or 64
        # The attention hook refuses CuteDSL MLA off SM100 (Hopper, SM120, ...).
        return "ValueError", "CuteDSL MLA backend is only supported on Blackwell GPUs (SM100). Please use a different backend."
    return "AssertionError", f"Decode attention backend for Kimi-K3 DCP must be 'cutedsl_mla' or 'aiter', got {attention_backend!r}."
