"""The public GB10 DFLASH report (tests/data/checkpoint_bootlogs/qwen3.8-27b-nvfp4-4.json, copied
from ../shared/bootlogs with its source): Qwen3.8-27B + a DFlash2 draft, DFLASH with 8 draft
tokens, --max-running-requests 48, extra_buffer_lazy, fp8 KV.

* Its request caps follow from its slots and flags as SGLang computes them: with the report's
  slot counts (85 with bf16 SSM state, 42 with fp32), SGLang's own sizing
  (`sglang_ref.reference_plan`: `_handle_max_mamba_cache` reserving the D-token intermediate,
  `resolve_max_num_reqs` capping by `max_mamba_cache_size // ratio`) and ours both cap 48 to
  21 and 10.
* Its pools where it states them: SSM bytes per slot (72.04 / 144.07 MiB, the author's
  rounding), conv state at 85 / 42 slots (0.24 / 0.12 GB) and the K / V buffers at its
  117,125 tokens (1.79 GB each, SGLang's own log line).

The draft's config (incoai/Qwen3.8-27B-DFlash2) was not retrieved: a stand-in geometry prices
the draft cell, and the caps are checked under two of them (they do not depend on it). The
target config is tests/data/checkpoints/qwen3.8-27b.config.json (its source: SOURCES.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sglang_ref
from mambasizer.service.planner import plan

DATA = Path(__file__).resolve().parents[1] / "data"
REPORT = json.loads((DATA / "checkpoint_bootlogs" / "qwen3.8-27b-nvfp4-4.json").read_text())
TARGET = json.loads((DATA / "checkpoints" / "qwen3.8-27b.config.json").read_text())
GIB, MIB = 1 << 30, 1 << 20
STAND_IN_DRAFTS = (
    {"num_hidden_layers": 5, "num_key_value_heads": 8, "head_dim": 128},
    {"num_hidden_layers": 1, "num_key_value_heads": 4, "head_dim": 256},
)


def _draft_config(geom: dict) -> dict:
    return {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 5120, "num_attention_heads": 32,
            "intermediate_size": 17408, "vocab_size": 248320, "max_position_embeddings": 262144, "torch_dtype": "bfloat16",
            "dflash_config": {"block_size": 8}, **geom}


def _request(ssm: str, slots: int, draft: dict, ours: bool, max_total_tokens: int | None = None) -> dict:
    sa = {"tp_size": 1, "pp_size": 1, "attn_dp_size": 1, "page_size": 1, "kv_cache_dtype": "fp8_e4m3",
          "mamba_ssm_dtype": ssm, "mamba_full_memory_ratio": 3.51, "mamba_radix_cache_strategy": "extra_buffer_lazy",
          "disable_overlap_schedule": False, "disable_radix_cache": False, "speculative_algorithm": "DFLASH",
          "speculative_num_draft_tokens": 8, "speculative_num_steps": 1, "speculative_eagle_topk": 1,
          "max_running_requests": 48, "max_mamba_cache_size": slots, "chunked_prefill_size": 4096}
    if max_total_tokens is not None:
        sa["max_total_tokens"] = max_total_tokens
    d = ({"num_layers": draft["num_hidden_layers"], "num_kv_heads": draft["num_key_value_heads"], "head_dim": draft["head_dim"],
          "dtype": "bfloat16", "block_size": 8} if ours else {"hf_config": draft})
    return {"model": {"hf_config": TARGET}, "budget": {"rest_gib": 30.0}, "server_args": sa, "draft_model": d}


@pytest.mark.parametrize("ssm,key", [("bfloat16", "bf16_ssm_author"), ("float32", "fp32_ssm_author")])
@pytest.mark.parametrize("geom", STAND_IN_DRAFTS)
def test_request_caps_follow_from_the_slots(ssm, key, geom):
    stated = REPORT["figures"][key]
    draft = _draft_config(geom)
    theirs = sglang_ref.reference_plan(_request(ssm, stated["max_mamba_cache_size"], draft, ours=False))
    ours = plan(_request(ssm, stated["max_mamba_cache_size"], draft, ours=True))
    assert theirs["error"] is None and ours.feasible
    assert ours.max_running_requests == theirs["max_running_requests"] == stated["max_running_requests_capped_to"]
    assert ours.mamba_ratio == 4  # extra_buffer_lazy with overlap on
    assert ours.stages[0].kv_cell_bytes == theirs["stages"][0]["kv_cell_bytes"]
    assert ours.max_total_num_tokens == theirs["max_total_num_tokens"]
    print(f"\nGB10 DFLASH report: {stated['max_mamba_cache_size']} slots ({ssm}) -> {ours.max_running_requests} requests, "
          f"ours == SGLang's")


def test_pools_where_the_report_states_them():
    figs = REPORT["figures"]
    draft = _draft_config(STAND_IN_DRAFTS[0])
    for ssm, key in (("bfloat16", "bf16_ssm_author"), ("float32", "fp32_ssm_author")):
        K = figs[key]["max_mamba_cache_size"]
        p = plan(_request(ssm, K, draft, ours=True, max_total_tokens=figs["kv_tokens"]))
        s = p.stages[0]
        per_slot_mib = s.ssm_state_bytes / (K + 1) / MIB
        assert abs(per_slot_mib - figs["ssm_bytes_per_slot_mib_author"][ssm]) < 0.1, per_slot_mib
        assert round(s.conv_state_bytes / GIB, 2) == figs[key]["conv_state_gb"]
        # SGLang's "KV Cache is allocated ... K size" line: (tokens + page) x one of K / V.
        assert p.max_total_num_tokens == figs["kv_tokens"]
        assert round(s.kv_pool_bytes / 2 / GIB, 2) == figs["k_size_gb"] == figs["v_size_gb"]
