"""Realistic deployments of every sizable shipped preset on H200s (143,771 MiB; 139.6 GiB
free before the weights load), with the weights' per-GPU share taken off the free memory."""

from typing import Any

from mambasizer.service.presets import PRESETS

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
    "nvidia-nemotron-3-super-120b-a12b": (4, 1, 116),  # the FP8 checkpoint
    "nvidia-nemotron-3-ultra-550b-a55b": (8, 2, 1030),
    "nvidia-nemotron-3.5-lightning-30b-a3b": (1, 1, 59),
    "nvidia-nemotron-nano-9b-v2": (1, 1, 18),
    "nvidia-nemotron-nano-12b-v2": (1, 1, 24),
    "nemotron-h-47b-base-8k": (4, 1, 94),
    "qwen3.6-27b": (2, 1, 52),
    # The quantized re-releases (approximate weights as loaded, GiB).
    "nvidia-qwen3.6-27b-nvfp4": (1, 1, 20),
    "nvidia-qwen3.6-35b-a3b-nvfp4": (1, 1, 22),
    "nvidia-qwen3.5-122b-a10b-nvfp4": (2, 1, 76),
    "nvidia-qwen3.5-397b-a17b-nvfp4": (4, 1, 236),
    "nvidia-nemotron-3-nano-30b-a3b-nvfp4": (1, 1, 20),
    "nvidia-nemotron-3-ultra-550b-a55b-fp8": (8, 1, 526),
    "falcon-h1-0.5b": (1, 1, 1),
    "falcon-h1-1.5b": (1, 1, 3),
    "falcon-h1-3b": (1, 1, 6),
    "falcon-h1-7b": (1, 1, 14),
    "falcon-h1-34b": (2, 1, 68),
    "granite-4.0-h-tiny": (1, 1, 14),
    "granite-4.0-h-small": (2, 1, 64),
    "lfm2-350m": (1, 1, 1),
    "lfm2-1.2b": (1, 1, 3),
    "lfm2-2.6b": (1, 1, 5),
}
H200_MIB = 143771


def preset_request(name: str, hf_config: bool = False) -> dict:
    tp, pp, weights = DEPLOYMENTS[name]
    model = {"hf_config": dict(PRESETS[name].hf_config)} if hf_config else {"preset": name}
    server_args: dict[str, Any] = {"tp_size": tp, "pp_size": pp, "mem_fraction_static": 0.88}
    if hf_config:
        # The oracle takes resolved launch values: SGLang's own resolution of these flags for
        # this model (LFM2 resolves `auto` to no_buffer with overlap off, the others to
        # extra_buffer), not values assumed here.
        import launch_ref

        r = launch_ref.resolve_with_sglang(dict(PRESETS[name].hf_config), dict(server_args), {}, H200_MIB)
        assert r["rejected"] is None, r
        server_args.update(page_size=r["page_size"], mamba_radix_cache_strategy=r["strategy"],
                           disable_overlap_schedule=r["disable_overlap_schedule"],
                           mamba_full_memory_ratio=r["mamba_full_memory_ratio"])
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
