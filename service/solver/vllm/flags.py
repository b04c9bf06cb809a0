"""`vllm serve` flags as typed -> the values the vLLM sizing reads (VllmArgs).

Three kinds of flag:
* sized: read here and used by the pipeline (block size, dtypes, parallelism, memory, ...);
* inert for sizing given the measured "Available KV cache memory" (host, port, parsers,
  weights-only options, the profile-run knobs whose effect the measured figure already holds):
  accepted and listed back as ignored;
* anything else, in particular flags that move KV-cache memory in ways not modelled here
  (`--disable-hybrid-kv-cache-manager`, KV connectors, context parallelism, ...): refused by
  name, so a plan never silently ignores a flag that changes vLLM's numbers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import NamedTuple

from mambasizer.service.solver.errors import PlanInputError

FIELD = "vllm_args"
MAMBA_DTYPES = ("auto", "float32", "bfloat16", "float16")
KV_DTYPES = {"auto": None, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
MODEL_DTYPES = {"auto": None, "bfloat16": "bfloat16", "float16": "float16", "half": "float16"}


class VllmArgs(NamedTuple):
    tp_size: int = 1
    pp_size: int = 1
    dp_size: int = 1
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    enable_prefix_caching: bool | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    num_gpu_blocks_override: int | None = None
    speculative_method: str | None = None
    num_speculative_tokens: int = 0
    enforce_eager: bool = False
    ignored: tuple[str, ...] = ()


_ALIASES = {
    "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
    "--tp": "--tensor-parallel-size", "--pp": "--pipeline-parallel-size",
}
_BOOL_FLAGS = {
    "--enable-prefix-caching": ("enable_prefix_caching", True),
    "--no-enable-prefix-caching": ("enable_prefix_caching", False),
    "--enforce-eager": ("enforce_eager", True),
}
# Flags that take a value and do not move the KV-cache pool once its memory is measured.
_INERT_VALUED = frozenset({
    "--model", "--host", "--port", "--served-model-name", "--api-key", "--tokenizer", "--download-dir", "--seed",
    "--chat-template", "--tool-call-parser", "--reasoning-parser", "--generation-config", "--revision",
    "--load-format", "--quantization", "-q", "--max-num-batched-tokens", "--swap-space", "--distributed-executor-backend",
    "--uvicorn-log-level", "--max-logprobs", "--tokenizer-mode", "--config-format", "--max-cudagraph-capture-size",
    "--cpu-offload-gb", "--limit-mm-per-prompt", "--mm-processor-kwargs", "--override-generation-config",
    "--code-revision", "--tokenizer-revision", "--root-path", "--allowed-origins",
})
_INERT_BOOL = frozenset({
    "--trust-remote-code", "--disable-log-requests", "--disable-log-stats", "--enable-auto-tool-choice",
    "--enable-chunked-prefill", "--no-enable-chunked-prefill", "--enable-expert-parallel", "--disable-custom-all-reduce",
    "--disable-frontend-multiprocessing", "--enable-log-requests", "--language-model-only", "--async-scheduling",
    "--no-async-scheduling",
})
# Flags that move KV-cache memory in ways this sizer does not model: refused with the reason.
_NOT_MODELLED = {
    "--disable-hybrid-kv-cache-manager": "it unifies the KV-cache groups, which vLLM refuses with mamba layers",
    "--kv-transfer-config": "KV connectors can turn off the hybrid KV-cache manager or the extensible cache",
    "--kv-connector": "KV connectors can turn off the hybrid KV-cache manager or the extensible cache",
    "--decode-context-parallel-size": "decode context parallelism (DCP) is not modelled for vLLM",
    "-dcp": "decode context parallelism (DCP) is not modelled for vLLM",
    "--prefill-context-parallel-size": "prefill context parallelism (PCP) is not modelled for vLLM",
    "--kv-cache-dtype-skip-layers": "mixed KV dtypes in one pool (the heterogeneous page alignment) are not modelled",
    "--mamba-block-size": "an explicit mamba block size is not modelled; vLLM derives it from --block-size",
    "--mamba-cache-mode": "the mamba cache mode is derived from --enable-prefix-caching here",
    "--hf-overrides": "config overrides change the model layout; pass the overridden config as the model instead",
    "--compilation-config": "only --enforce-eager is modelled for the CUDA-graph mode (the max_num_seqs check needs FULL graphs)",
    "-cc": "only --enforce-eager is modelled for the CUDA-graph mode (the max_num_seqs check needs FULL graphs)",
    "-O": "only --enforce-eager is modelled for the CUDA-graph mode (the max_num_seqs check needs FULL graphs)",
    "--num-lookahead-slots": "lookahead slots are not modelled",
}
_SUFFIX = {"k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}


def _int(flag: str, text: str, minimum: int, human: bool = False) -> int:
    """An integer flag value; `human` also takes vLLM's suffixes (k/m/g = 10^3.., K/M/G = 2^10..)."""
    m = re.fullmatch(r"(\d+)([kmgKMG]?)", text.strip()) if human else re.fullmatch(r"-?\d+", text.strip())
    if m is None:
        suffix = " (digits, optionally with a k/m/g or K/M/G suffix)" if human else ""
        raise PlanInputError(f"{FIELD}.{flag}", f"expects an integer{suffix}, got {text!r}")
    value = int(m.group(1)) * _SUFFIX.get(m.group(2), 1) if human else int(text)
    if value < minimum:
        raise PlanInputError(f"{FIELD}.{flag}", f"must be >= {minimum}, got {value}")
    return value


def _choice(flag: str, text: str, allowed: Sequence[str]) -> str:
    if text not in allowed:
        raise PlanInputError(f"{FIELD}.{flag}", f"is {text!r}; vLLM accepts {', '.join(allowed)} here", list(allowed))
    return text


def _speculative(text: str) -> tuple[str, int]:
    flag = "--speculative-config"
    try:
        cfg = json.loads(text)
    except ValueError:
        raise PlanInputError(f"{FIELD}.{flag}", 'must be a JSON object, e.g. \'{"method": "mtp", "num_speculative_tokens": 2}\'') from None
    if not isinstance(cfg, dict):
        raise PlanInputError(f"{FIELD}.{flag}", "must be a JSON object")
    method = cfg.get("method")
    if method not in ("mtp", "qwen3_next_mtp", "qwen3_5_mtp"):
        raise PlanInputError(
            f"{FIELD}.{flag}",
            f"method {method!r} is not modelled for vLLM: only MTP (method \"mtp\") with the checkpoint's own MTP layers is sized",
            ["mtp"],
        )
    n = cfg.get("num_speculative_tokens")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64:
        raise PlanInputError(f"{FIELD}.{flag}", "num_speculative_tokens must be an integer from 1 to 64")
    extra = set(cfg) - {"method", "num_speculative_tokens", "model"}
    if extra:
        raise PlanInputError(f"{FIELD}.{flag}", f"keys {sorted(extra)} are not modelled (method and num_speculative_tokens are)")
    return str(method), n


def parse_vllm_args(args: Sequence[str]) -> VllmArgs:
    """Parse `vllm serve` arguments (a positional model first is allowed and ignored: the
    request's `model` is what is sized). Raises PlanInputError naming the flag."""
    values: dict = {}
    ignored: list[str] = []
    i = 0
    items = list(args)
    if items and not items[0].startswith("-"):
        ignored.append(items[0])
        i = 1
    while i < len(items):
        raw = items[i]
        if not raw.startswith("-"):
            raise PlanInputError(FIELD, f"{raw!r} is not a flag (only the model may be positional, and only first)")
        name, eq, inline = raw.partition("=")
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        name = _ALIASES.get(name, name)
        if name in _BOOL_FLAGS:
            if eq:
                raise PlanInputError(f"{FIELD}.{name}", "takes no value")
            key, val = _BOOL_FLAGS[name]
            values[key] = val
            i += 1
            continue
        if name in _INERT_BOOL:
            ignored.append(raw)
            i += 1
            continue
        if name in _NOT_MODELLED:
            raise PlanInputError(f"{FIELD}.{name}", f"moves vLLM's KV-cache memory but is not modelled: {_NOT_MODELLED[name]}; remove it to size without it")
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(items):
                raise PlanInputError(f"{FIELD}.{name}", "needs a value")
            value = items[i + 1]
            i += 2
        if name in _INERT_VALUED:
            ignored.extend([name, value])
            continue
        _set(values, name, value)
    return VllmArgs(**values, ignored=tuple(ignored))


def _set(values: dict, name: str, value: str) -> None:
    if name == "--tensor-parallel-size":
        values["tp_size"] = _int(name, value, 1)
    elif name == "--pipeline-parallel-size":
        values["pp_size"] = _int(name, value, 1)
    elif name == "--data-parallel-size":
        values["dp_size"] = _int(name, value, 1)
    elif name == "--max-model-len":
        if value.strip() in ("-1", "auto"):
            raise PlanInputError(f"{FIELD}.{name}", "auto-fit (-1) is not modelled; give a length (the plan's error names the largest that fits)")
        values["max_model_len"] = _int(name, value, 1, human=True)
    elif name == "--max-num-seqs":
        values["max_num_seqs"] = _int(name, value, 1)
    elif name == "--block-size":
        values["block_size"] = _int(name, value, 1)
    elif name == "--mamba-cache-dtype":
        values["mamba_cache_dtype"] = _choice(name, value, MAMBA_DTYPES)
    elif name == "--mamba-ssm-cache-dtype":
        values["mamba_ssm_cache_dtype"] = _choice(name, value, MAMBA_DTYPES)
    elif name == "--kv-cache-dtype":
        values["kv_cache_dtype"] = _choice(name, value, tuple(KV_DTYPES))
    elif name == "--dtype":
        values["dtype"] = _choice(name, value, tuple(MODEL_DTYPES))
    elif name == "--gpu-memory-utilization":
        try:
            f = float(value)
        except ValueError:
            raise PlanInputError(f"{FIELD}.{name}", f"expects a fraction in (0, 1], got {value!r}") from None
        if not 0 < f <= 1:
            raise PlanInputError(f"{FIELD}.{name}", f"must be in (0, 1], got {f}")
        values["gpu_memory_utilization"] = f
    elif name == "--kv-cache-memory-bytes":
        values["kv_cache_memory_bytes"] = _int(name, value, 1, human=True)
    elif name == "--num-gpu-blocks-override":
        values["num_gpu_blocks_override"] = _int(name, value, 1)
    elif name == "--speculative-config":
        values["speculative_method"], values["num_speculative_tokens"] = _speculative(value)
    else:
        raise PlanInputError(
            f"{FIELD}.{name}",
            "is not a vllm serve flag this sizer knows; flags that change KV-cache sizing are modelled by name "
            "(--max-model-len, --max-num-seqs, --block-size, --enable-prefix-caching, --kv-cache-dtype, "
            "--mamba-cache-dtype, --mamba-ssm-cache-dtype, -tp, -pp, --kv-cache-memory-bytes, "
            "--num-gpu-blocks-override, --speculative-config, --enforce-eager); remove it or report it",
        )
