"""Every SGLang 0.5.23 start-up format string the check-log reader relies on, formatted
with chosen values, parses back to those values; and each one is still in SGLang's source.

TEMPLATES pairs a source file of the installed sglang 0.5.23 wheel with the literal
fragments of its format string (checked to be present there, so the list cannot drift from
SGLang), and our own formatter reproducing the printed line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mambasizer.service.startlog.parse import BootLogError, parse_boot_log

# Located without importing sglang (its import needs triton, absent on CPU machines).
_SPEC = importlib.util.find_spec("sglang")
SRT = Path(next(iter(_SPEC.submodule_search_locations))) / "srt" if _SPEC and _SPEC.submodule_search_locations else None
needs_sglang = pytest.mark.skipif(SRT is None, reason="the sglang 0.5.23 wheel source is not installed")

# (name, file under sglang/srt, fragments that must be in that file, line, expected figures)
TEMPLATES = [
    (
        "load_weight_begin",
        "model_executor/model_runner.py",
        ['f"Load weight begin. avail mem={get_available_gpu_memory(self.device, self.gpu_id):.2f} GB"'],
        f"Load weight begin. avail mem={139.6:.2f} GB",
        {"avail_mem_before_load_gb": 139.6},
    ),
    (
        "load_weight_end",
        "model_executor/model_runner.py",
        ['f"Load weight end. "', 'f"elapsed={self.weight_load_time:.2f} s, "', 'f"type={type(self.model).__name__}, "',
         "f\"{quant_str + ', ' if quant_str else ''}\"", 'f"avail mem={after_avail_memory:.2f} GB, "',
         'f"mem usage={self.weight_load_mem_usage:.2f} GB."'],
        "Load weight end. elapsed={:.2f} s, type={}, {}avail mem={:.2f} GB, mem usage={:.2f} GB.".format(
            41.27, "NemotronHForCausalLM", "", 101.3, 38.3
        ),
        {"avail_mem_after_load_gb": 101.3, "weight_mem_usage_gb": 38.3},
    ),
    (
        "load_weight_end_quant",
        "model_executor/model_runner.py",
        ["quant_str = self.model_config.get_quantization_config_log_str()"],
        "Load weight end. elapsed={:.2f} s, type={}, {}avail mem={:.2f} GB, mem usage={:.2f} GB.".format(
            112.65, "Qwen3_5MoeForConditionalGeneration", "quant=modelopt_fp4, ", 92.51, 20.44
        ),
        {"avail_mem_after_load_gb": 92.51, "weight_mem_usage_gb": 20.44},
    ),
    (
        "mamba_cache",
        "mem_cache/memory_pool.py",
        ['f"Mamba Cache is allocated. "', 'f"max_mamba_cache_size: {size}, "',
         'f"conv_state size: {get_tensor_size_bytes(conv_state) / GB:.2f}GB, "',
         'f"ssm_state size: {get_tensor_size_bytes(temporal_state) / GB:.2f}GB "'],
        f"Mamba Cache is allocated. max_mamba_cache_size: {1391}, conv_state size: {0.48:.2f}GB, ssm_state size: {20.4:.2f}GB ",
        {"max_mamba_cache_size": 1391, "conv_state_gb": 0.48, "ssm_state_gb": 20.4},
    ),
    (
        "mamba_cache_speculative",
        "mem_cache/memory_pool.py",
        ['f"intermediate_ssm_state_cache size: {intermediate_ssm_gb:.2f}GB "',
         'f"intermediate_conv_window_cache size: {get_tensor_size_bytes(self._intermediate_conv_window_phys) / GB:.2f}GB "'],
        (
            f"Mamba Cache is allocated. max_mamba_cache_size: {160}, conv_state size: {0.09:.2f}GB, ssm_state size: {6.29:.2f}GB "
            f"intermediate_ssm_state_cache size: {6.45:.2f}GB intermediate_conv_window_cache size: {0.04:.2f}GB "
        ),
        {"max_mamba_cache_size": 160, "conv_state_gb": 0.09, "ssm_state_gb": 6.29, "intermediate_ssm_state_gb": 6.45,
         "intermediate_conv_window_gb": 0.04},
    ),
    (
        "kv_cache_k_v",
        "mem_cache/memory_pool.py",
        ["f\"{cache_name} {'VA upper bound' if self.post_capture_active else 'is allocated'}. dtype: {self.dtype}, \"",
         'f"#tokens: {num_tokens}, K size: {k_size_GB:.2f} GB, "', 'f"V size: {v_size_GB:.2f} GB"'],
        "KV Cache is allocated. dtype: {}, #tokens: {}, K size: {:.2f} GB, V size: {:.2f} GB".format(
            "torch.bfloat16", 4359233, 20.79, 20.79
        ),
        {"kv_tokens": 4359233, "k_size_gb": 20.79, "v_size_gb": 20.79},
    ),
    (
        "kv_cache_single",
        "mem_cache/memory_pool.py",
        ['f"#tokens: {num_tokens}, KV size: {kv_size_GB:.2f} GB"'],
        "KV Cache is allocated. dtype: {}, #tokens: {}, KV size: {:.2f} GB".format("torch.float8_e4m3fn", 774547, 2.22),
        {"kv_tokens": 774547, "kv_size_gb": 2.22},
    ),
    (
        "kv_cache_va_upper_bound",
        "mem_cache/memory_pool.py",
        ["'VA upper bound' if self.post_capture_active else 'is allocated'"],
        "KV Cache VA upper bound. dtype: {}, #tokens: {}, K size: {:.2f} GB, V size: {:.2f} GB".format(
            "torch.bfloat16", 9000000, 42.91, 42.91
        ),
        {"kv_tokens": 9000000, "k_size_gb": 42.91, "v_size_gb": 42.91, "post_capture_kv": True},
    ),
    (
        "labelled_kv_cache_is_not_the_target_pool",
        "mem_cache/memory_pool.py",
        ['f"{self.allocation_label} KV Cache"'],
        "MiniMax MSA-v1 main NVFP4 KV Cache is allocated. dtype: {}, #tokens: {}, KV size: {:.2f} GB".format(
            "torch.uint8", 123456, 1.5
        ),
        {},
    ),
    (
        "post_capture_kv",
        "model_executor/model_runner_components/kv_pool_runtime.py",
        ['"Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, "', '"KV size: %.2f GB, avail mem=%.2f GB",'],
        "Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, KV size: %.2f GB, avail mem=%.2f GB"  # noqa: UP031 - SGLang formats the line with %
        % ("torch.bfloat16", 8123456, 38.73, 2.1),
        {"kv_tokens": 8123456, "kv_size_gb": 38.73, "post_capture_kv": True},
    ),
    (
        "post_capture_draft_kv_is_not_the_target_pool",
        "model_executor/model_runner_components/kv_pool_runtime.py",
        ['"Post-capture KV sizing: draft KV cache allocated. dtype: %s, "', '"#tokens: %d, KV size: %.2f GB",'],
        "Post-capture KV sizing: draft KV cache allocated. dtype: %s, #tokens: %d, KV size: %.2f GB"  # noqa: UP031 - SGLang formats the line with %
        % ("torch.bfloat16", 8123456, 1.2),
        {},
    ),
    (
        "memory_pool_end",
        "mem_cache/kv_cache_configurator.py",
        ['f"Memory pool end. "', 'f"avail mem={get_available_gpu_memory(self.device, self.gpu_id):.2f} GB"'],
        f"Memory pool end. avail mem={4.02:.2f} GB",
        {"memory_pool_end_avail_gb": 4.02},
    ),
    (
        "scheduler_summary_gpu",
        "managers/scheduler.py",
        ['f"max_total_num_tokens={self.max_total_num_tokens}, "', 'f"chunked_prefill_size={get_schedule().chunked_prefill_size}, "',
         'f"max_prefill_tokens={self.max_prefill_tokens}, "', 'f"max_running_requests={self.max_running_requests}, "',
         'f"context_len={self.model_config.context_len}, "',
         "f\"{'available_cpu_mem' if self.device == 'cpu' else 'available_gpu_mem'}=\"",
         'f"{self.startup_available_gpu_memory_gb:.2f} GB"'],
        "max_total_num_tokens={}, chunked_prefill_size={}, max_prefill_tokens={}, max_running_requests={}, context_len={}, {}={:.2f} GB".format(
            580364, 2048, 16384, 1, 8192, "available_gpu_mem", 3.63
        ),
        {"max_total_num_tokens": 580364, "chunked_prefill_size": 2048, "max_prefill_tokens": 16384,
         "max_running_requests": 1, "context_len": 8192, "available_gpu_mem_gb": 3.63},
    ),
    (
        "scheduler_summary_cpu",
        "managers/scheduler.py",
        ["'available_cpu_mem' if self.device == 'cpu'"],
        "max_total_num_tokens={}, chunked_prefill_size={}, max_prefill_tokens={}, max_running_requests={}, context_len={}, {}={:.2f} GB".format(
            4096, -1, 16384, 8, 2048, "available_cpu_mem", 200.5
        ),
        {"max_total_num_tokens": 4096, "chunked_prefill_size": -1, "max_prefill_tokens": 16384,
         "max_running_requests": 8, "context_len": 2048, "available_gpu_mem_gb": 200.5},
    ),
]


@needs_sglang
@pytest.mark.parametrize("name, path, fragments, line, expected", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_format_string_is_sglangs(name, path, fragments, line, expected):
    source = (SRT / path).read_text()
    for fragment in fragments:
        assert fragment in source, (name, fragment)


@pytest.mark.parametrize("name, path, fragments, line, expected", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_format_string_parses_back(name, path, fragments, line, expected):
    # A labelled or draft pool alone is no figure: the log then holds no start-up line.
    text = f"[2026-12-01 10:00:00 TP0] {line}\n"
    if not expected:
        with pytest.raises(BootLogError):
            parse_boot_log(text)
        return
    log = parse_boot_log(text)
    assert log.ranks == {"TP0": expected}


def test_committed_weight_line_has_no_figures():
    """startup_weight_load.py's 'Load weight end. Committed real weights ...' prints no memory."""
    if SRT is not None:
        source = (SRT / "model_executor/model_runner_components/startup_weight_load.py").read_text()
        assert '"Load weight end. Committed real weights after CUDA graph capture in %.2f s "' in source
    line = "Load weight end. Committed real weights after CUDA graph capture in %.2f s (capture overlap window %.2f s, startup overlap total %.2f s)" % (3.1, 1.2, 40.0)  # noqa: UP031 - as SGLang formats it
    log = parse_boot_log(f"[TP0] {line}\n[TP0] Memory pool end. avail mem=4.02 GB\n")
    assert log.ranks == {"TP0": {"memory_pool_end_avail_gb": 4.02}}


def test_server_args_record_dict_form_is_engines():
    """0.5.23's engine logs `server_args={...}` (a dict repr); read without eval."""
    if SRT is not None:
        source = (SRT / "entrypoints/engine.py").read_text()
        assert 'logger.info(f"server_args={_server_args_for_logging(server_args)}")' in source
    record = {
        "model_path": "Qwen/Qwen3.5-35B-A3B", "tp_size": 4, "pp_size": 1, "mem_fraction_static": 0.871,
        "kv_cache_dtype": "fp8_e4m3", "disable_radix_cache": False, "max_running_requests": None,
        "cuda_graph_bs": [1, 2, 4, 8], "json_model_override_args": "{'a': 1}", "api_key": "it's \"quoted\"",
        "nested": {"a": [1, 2, {"b": None}]}, "ratio": 1e-05,
    }
    log = parse_boot_log(f"[2026-12-01 10:00:00] server_args={record!r}\n")
    assert log.server_args == record


def test_server_args_record_dataclass_form_older_05():
    """0.5.x before the dict form logged the ServerArgs dataclass repr; values that are not
    literals (an enum, a nested object) are skipped, not evaluated."""
    line = (
        "server_args=ServerArgs(model_path='/data/Qwen3.5-397B-A17B-FP8', tokenizer_path='/data/Qwen3.5-397B-A17B-FP8', "
        "tp_size=2, mem_fraction_static=0.85, chunked_prefill_size=2048, max_running_requests=1, "
        "load_format=<LoadFormat.AUTO: 'auto'>, device_config=DeviceConfig(device='cuda', ids=[0, 1]), "
        "cuda_graph_bs=[1, 2], disable_cuda_graph=True, speculative_algorithm=None, schedule_conservativeness=1.3)"
    )
    log = parse_boot_log(f"[2026-02-27 17:00:00] {line}\n")
    assert log.server_args == {
        "model_path": "/data/Qwen3.5-397B-A17B-FP8", "tokenizer_path": "/data/Qwen3.5-397B-A17B-FP8", "tp_size": 2,
        "mem_fraction_static": 0.85, "chunked_prefill_size": 2048, "max_running_requests": 1, "load_format": None,
        "device_config": None, "cuda_graph_bs": [1, 2], "disable_cuda_graph": True, "speculative_algorithm": None,
        "schedule_conservativeness": 1.3,
    }
    # The record's own `max_running_requests=1` is a flag, not the scheduler's figure.
    assert log.ranks == {}


OLDER_05_WORDINGS = [
    # 0.5.9 (ktransformers#1870): dtype= instead of quant=, no dtype in the KV line.
    ("Load weight end. elapsed=653.47 s, type=Qwen3_5MoeForConditionalGeneration, dtype=torch.bfloat16, avail mem=19.08 GB, mem usage=3.76 GB.",
     {"avail_mem_after_load_gb": 19.08, "weight_mem_usage_gb": 3.76}),
    ("Load weight end. type=NemotronHForCausalLM, dtype=torch.bfloat16, avail mem=63.12 GB, mem usage=16.01 GB.",
     {"avail_mem_after_load_gb": 63.12, "weight_mem_usage_gb": 16.01}),
    ("KV Cache is allocated. #tokens: 580364, K size: 4.15 GB, V size: 4.15 GB",
     {"kv_tokens": 580364, "k_size_gb": 4.15, "v_size_gb": 4.15}),
    ("Mamba Cache is allocated. max_mamba_cache_size: 82, conv_state size: 0.13GB, ssm_state size: 7.29GB ",
     {"max_mamba_cache_size": 82, "conv_state_gb": 0.13, "ssm_state_gb": 7.29}),
    ("Using KV cache dtype: torch.bfloat16", {"kv_cache_dtype_printed": "torch.bfloat16"}),
    ("max_total_num_tokens=580364, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=1, context_len=8192, available_gpu_mem=3.63 GB",
     {"max_total_num_tokens": 580364, "chunked_prefill_size": 2048, "max_prefill_tokens": 16384, "max_running_requests": 1,
      "context_len": 8192, "available_gpu_mem_gb": 3.63}),
]


@pytest.mark.parametrize("line, expected", OLDER_05_WORDINGS)
def test_older_05_wordings(line, expected):
    assert parse_boot_log(f"[2026-02-27 17:10:28 TP0] {line}\n").ranks == {"TP0": expected}


PREFIXES = [
    ("", "TP0"),
    ("[2026-12-01 10:00:31] ", "TP0"),
    ("[TP0] ", "TP0"),
    ("[2026-02-27 17:10:27 TP1] ", "TP1"),
    ("[TP1 PP1] ", "TP1 PP1"),
    ("[2026-02-27 17:10:27 DP0 TP0 EP0] ", "DP0 TP0 EP0"),
    ("[2026-12-01 10:00:00 DP1 PP0 ATTN_CP1 MOE_DP0 TP2 EP2] ", "DP1 PP0 ATTN_CP1 MOE_DP0 TP2 EP2"),
    ("[TP0..3] ", "TP0..3"),
    ("- `[PP1 TP0] ", "PP1 TP0"),
]


@pytest.mark.parametrize("prefix, rank", PREFIXES)
def test_rank_prefixes(prefix, rank):
    log = parse_boot_log(f"{prefix}Memory pool end. avail mem=4.02 GB\n")
    assert log.ranks == {rank: {"memory_pool_end_avail_gb": 4.02}}


def test_wrapped_continuation_lines_join_their_record():
    text = "[TP0..3] Load weight end. elapsed=36.9 s, type=NemotronHForCausalLM,\n         avail mem=7.95 GB, mem usage=14.76 GB\n"
    assert parse_boot_log(text).ranks == {"TP0..3": {"avail_mem_after_load_gb": 7.95, "weight_mem_usage_gb": 14.76}}


def test_target_figures_win_over_the_draft_models():
    """The draft model loads after the target and prints the same lines: the first is the
    target's (the compared figures); the last reading is kept apart, for the budget SGLang
    sizes the pools from (tests/checklog/test_checklog_draft_load.py)."""
    text = (
        "[TP0] Load weight end. elapsed=1.00 s, type=NemotronHForCausalLM, avail mem=60.32 GB, mem usage=31.47 GB.\n"
        "[TP0] Load weight end. elapsed=1.00 s, type=NemotronHForCausalLMMTP, avail mem=59.02 GB, mem usage=2.15 GB.\n"
    )
    assert parse_boot_log(text).ranks["TP0"] == {
        "avail_mem_after_load_gb": 60.32, "weight_mem_usage_gb": 31.47, "avail_mem_after_last_load_gb": 59.02,
    }


def test_version_and_gpu_where_printed():
    log = parse_boot_log("sglang==0.5.21 on device_name=NVIDIA GB10\n[TP0] Memory pool end. avail mem=4.02 GB\n")
    assert (log.sglang_version, log.gpu) == ("0.5.21", "NVIDIA GB10")
    log = parse_boot_log("[TP0] Memory pool end. avail mem=4.02 GB\n")
    assert (log.sglang_version, log.gpu) == (None, None)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("   \n\n", "empty"),
        ("hello\nINFO: Uvicorn running on http://0.0.0.0:30000\n", "no SGLang start-up line"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"x" * ((2 << 20) + 1), "no SGLang start-up line"),  # no size limit in the reader: one cut record
        ("server_args=ServerArgs(", "its server_args record cannot be read"),
    ],
)
def test_unreadable_logs(text, message):
    with pytest.raises(BootLogError, match=message):
        parse_boot_log(text)


HOSTILE = [
    "[" * (1 << 19),
    "server_args=" + "(" * ((1 << 20) - 20),
    "server_args=ServerArgs(" + "a=[" * 200000,
    "server_args={" + "'k': '" * 100000,
    "max_total_num_tokens=" + "9" * ((1 << 20) - 30),
    "[TP0] x\n" + " continued\n" * 90000,
    "Load weight end. " + "avail mem=" * 90000,
    "sglang" * 170000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_is_read_or_refused_without_blowing_up(text):
    """1 MiB of adversarial text is answered (a figure or a BootLogError), never hangs or crashes."""
    assert len(text) <= 1 << 20
    try:
        log = parse_boot_log(text)
    except BootLogError:
        return
    for figures in log.ranks.values():
        assert all(isinstance(v, (int, float, str, bool)) for v in figures.values())


def test_single_gpu_log_timestamp_only_prefix():
    """With one GPU SGLang prints no rank words: `[2026-12-01 10:00:31] KV Cache is allocated...`."""
    log = parse_boot_log(
        "[2026-12-01 10:00:31] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1788366, K size: 13.64 GB, V size: 13.64 GB\n"
        "[2026-12-01 10:00:31] Memory pool end. avail mem=11.62 GB\n"
    )
    assert log.ranks == {"TP0": {"kv_tokens": 1788366, "k_size_gb": 13.64, "v_size_gb": 13.64, "memory_pool_end_avail_gb": 11.62}}
