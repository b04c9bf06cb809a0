"""Realistic deployments of every sizable shipped preset on H200s (143,771 MiB; 139.6 GiB
free before the weights load), with the weights' per-GPU share taken off the free memory."""

from typing import Any

from service.presets import PRESETS

F_PRE = 139.6
# preset -> (tp, pp, approximate bf16 weights in GiB for the whole model)
DEPLOYMENTS = {
    "qwen3-next-80b-a3b-instruct": (4, 1, 149),
    "qwen3-next-80b-a3b-thinking": (4, 1, 149),
    "qwen3.5-27b": (2, 1, 52),
    "qwen3.5-35b-a3b": (2, 1, 67),
    "qwen3.5-122b-a10b": (4, 1, 228),
    "qwen3.5-397b-a17b": (8, 1, 740),
    "qwen3.6-35b-a3b": (2, 1, 67),
    "qwen3.8-2.4t-a95b": (8, 8, 4470),
    "kimi-k3": (8, 8, 2860),
    "kimi-linear-48b-a3b-instruct": (2, 1, 92),
    "nemotron-h-8b-base-8k": (1, 1, 16),
    "nemotron-h-56b-base-8k": (4, 2, 105),
    "nvidia-nemotron-3-nano-30b-a3b": (2, 1, 59),
    "nvidia-nemotron-3-super-120b-a12b": (4, 1, 226),
    "nvidia-nemotron-3-ultra-550b-a55b": (8, 2, 1030),
    "nvidia-nemotron-3.5-lightning-30b-a3b": (1, 1, 59),
}


def preset_request(name: str, hf_config: bool = False) -> dict:
    tp, pp, weights = DEPLOYMENTS[name]
    model = {"hf_config": dict(PRESETS[name].hf_config)} if hf_config else {"preset": name}
    server_args: dict[str, Any] = {"tp_size": tp, "pp_size": pp, "mem_fraction_static": 0.88}
    if hf_config:  # the oracle takes resolved launch values
        server_args.update(page_size=1, mamba_radix_cache_strategy="extra_buffer", disable_overlap_schedule=pp > 1, mamba_full_memory_ratio=0.9)
    return {
        "model": model,
        "server_args": server_args,
        "budget": {"free_gib_before_load": F_PRE, "free_gib_after_load": round(F_PRE - weights / (tp * pp) - 1.5, 2)},
    }


def pinned_fields(plan: dict) -> dict:
    keys = ("max_mamba_cache_size", "mamba_ratio", "kv_budget_bytes", "max_total_num_tokens", "max_running_requests", "pp_max_micro_batch_size")
    out = {k: plan[k] for k in keys}
    out["stages"] = [[s["mamba_layers"], s["full_attention_layers"], s["kv_cell_bytes"], s["kv_tokens"]] for s in plan["stages"]]
    out["error"] = plan["error"]["exception"] if plan.get("error") else None
    return out
