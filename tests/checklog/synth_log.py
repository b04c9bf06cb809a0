"""Synthetic SGLang 0.5.23 start-up logs made from a real plan (imported by name: the tests
folders are not packages).

Every line is written with the wording of SGLang 0.5.23's own format strings (the
`TEMPLATES` in test_bootlog_formats.py, each checked against SGLang's source), filled with
the plan's figures, so a correct check-log reads every figure back as a match.
"""

from __future__ import annotations

from typing import Any

from mambasizer.service.planner import plan as solve
from mambasizer.service.planner import plan_stage_tensors

GB = 1 << 30


def estimated_budget(request: dict, gpu: str = "h200") -> dict:
    """The free memory a healthy boot on `gpu` logs, as mambasizer estimates it (the plan of
    `budget: {"gpu": ...}`), printed to 2 decimals: a log made with it matches check-log's
    estimates too (weights, free memory before and after the load)."""
    estimate = solve({**request, "budget": {"gpu": gpu}})
    return {
        "free_gib_before_load": float(f"{estimate.free_gib_before_load:.2f}"),
        "free_gib_after_load": float(f"{estimate.free_gib_after_load:.2f}"),
    }


def server_args_dict_repr(record: dict) -> str:
    """`server_args={...}` as SGLang 0.5.23's engine logs it (a dict's repr)."""
    return "server_args=" + repr(record)


def _prefix(pp: int, tp: int, pp_size: int, tp_size: int, stamp: str) -> str:
    words = []
    if pp_size > 1:
        words.append(f"PP{pp}")
    if tp_size > 1:
        words.append(f"TP{tp}")
    return f"[{stamp}{' ' if words else ''}{' '.join(words)}] "


def synth_log(
    request: dict,
    model_path: str,
    *,
    perturb: dict[str, Any] | None = None,
    version_line: bool = True,
    device_name: str = "NVIDIA H200",
) -> tuple[str, Any]:
    """(log text, plan) for `request` (a preset, server_args with mem_fraction_static, and a
    free_gib_before/after_load budget). `perturb` overrides logged figures by name."""
    result = solve(request)
    assert result.feasible, result.error
    tensors = plan_stage_tensors(request, result)
    sa = request["server_args"]
    tp_size, pp_size = sa.get("tp_size", 1), sa.get("pp_size", 1)
    before = request["budget"]["free_gib_before_load"]
    after = request["budget"]["free_gib_after_load"]
    p = dict(perturb or {})
    stamp = "2026-12-01 10:00:00"
    record = {
        "model_path": model_path,
        "tokenizer_path": model_path,
        "host": "0.0.0.0",
        "port": 30000,
        "log_level": "info",
        "device": "cuda",
        "json_model_override_args": "{}",
        "served_model_name": model_path,
        **sa,
    }
    lines = [f"[{stamp}] {server_args_dict_repr(record)}"]
    if version_line:
        lines.insert(0, f"[{stamp}] sglang==0.5.23 starting on device_name={device_name}")
    for pp in range(pp_size):
        stage = result.stages[pp]
        inter = sum(t.nbytes for t in tensors[pp] if t.name == "intermediate_ssm")
        conv_window = sum(t.nbytes for t in tensors[pp] if t.name.startswith("intermediate_conv_window"))
        for tp in range(tp_size):
            pre = _prefix(pp, tp, pp_size, tp_size, stamp)
            lines.append(pre + f"Load weight begin. avail mem={p.get('avail_mem_before_load_gb', before):.2f} GB")
            lines.append(
                pre + f"Load weight end. elapsed=12.34 s, type=Qwen3_5MoeForConditionalGeneration, "
                f"avail mem={p.get('avail_mem_after_load_gb', after):.2f} GB, mem usage={before - after:.2f} GB."
            )
            mamba = (
                pre + "Mamba Cache is allocated. "
                f"max_mamba_cache_size: {p.get('max_mamba_cache_size', result.max_mamba_cache_size)}, "
                f"conv_state size: {p.get('conv_state_gb', stage.conv_state_bytes / GB):.2f}GB, "
                f"ssm_state size: {p.get('ssm_state_gb', stage.ssm_state_bytes / GB):.2f}GB "
            )
            if sa.get("speculative_algorithm"):
                mamba += (
                    f"intermediate_ssm_state_cache size: {p.get('intermediate_ssm_state_gb', inter / GB):.2f}GB "
                    f"intermediate_conv_window_cache size: {conv_window / GB:.2f}GB "
                )
            lines.append(mamba)
            half = stage.kv_pool_bytes / 2 / GB
            lines.append(
                pre + f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {p.get('kv_tokens', result.max_total_num_tokens)}, "
                f"K size: {half:.2f} GB, V size: {half:.2f} GB"
            )
            lines.append(pre + f"Memory pool end. avail mem={after - 60:.2f} GB")
            lines.append(pre + "Capture cuda graph begin. This can take up to several minutes. avail mem=39.00 GB")
            if tp == 0:
                lines.append(
                    pre + f"max_total_num_tokens={p.get('max_total_num_tokens', result.max_total_num_tokens)}, "
                    f"chunked_prefill_size=8192, max_prefill_tokens=16384, "
                    f"max_running_requests={p.get('max_running_requests', result.max_running_requests)}, "
                    f"context_len={p.get('context_len', result.resolved.context_length)}, available_gpu_mem=35.12 GB"
                )
    lines.append(f"[{stamp}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    return "\n".join(lines) + "\n", result
