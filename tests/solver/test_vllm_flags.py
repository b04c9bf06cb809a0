"""`vllm serve` flags as typed -> VllmArgs, and the per-release profiles (pure)."""

from __future__ import annotations

import pytest

from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.vllm.flags import parse_vllm_args
from mambasizer.service.solver.vllm.profiles import EPOCH_RELEASES, PROFILES, VLLM_RELEASES


def test_flags_as_a_shell_passes_them() -> None:
    a = parse_vllm_args([
        "Qwen/Qwen3.6-27B", "-tp", "2", "--pipeline_parallel_size=2", "--max-model-len", "128k", "--max-num-seqs=512",
        "--no-enable-prefix-caching", "--kv-cache-dtype", "fp8", "--mamba-ssm-cache-dtype", "float32",
        "--kv-cache-memory-bytes", "8G", "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}',
        "--port", "8000", "--trust-remote-code", "--enforce-eager",
    ])
    assert (a.tp_size, a.pp_size, a.max_model_len, a.max_num_seqs) == (2, 2, 128000, 512)
    assert a.enable_prefix_caching is False and a.kv_cache_dtype == "fp8" and a.mamba_ssm_cache_dtype == "float32"
    assert a.kv_cache_memory_bytes == 8 << 30 and a.num_speculative_tokens == 2 and a.enforce_eager
    assert a.ignored == ("Qwen/Qwen3.6-27B", "--port", "8000", "--trust-remote-code")


@pytest.mark.parametrize(("args", "field"), [
    (["--disable-hybrid-kv-cache-manager"], "vllm_args.--disable-hybrid-kv-cache-manager"),
    (["-dcp", "2"], "vllm_args.-dcp"),
    (["--no-such-flag", "1"], "vllm_args.--no-such-flag"),
    (["--max-model-len", "-1"], "vllm_args.--max-model-len"),
    (["--max-num-seqs", "many"], "vllm_args.--max-num-seqs"),
    (["--kv-cache-dtype", "turboquant_k8v4"], "vllm_args.--kv-cache-dtype"),
    (["--speculative-config", '{"method": "eagle", "num_speculative_tokens": 2}'], "vllm_args.--speculative-config"),
    (["-tp"], "vllm_args.--tensor-parallel-size"),
])
def test_refused_by_name(args: list[str], field: str) -> None:
    with pytest.raises(PlanInputError) as exc:
        parse_vllm_args(args)
    assert exc.value.field == field


def test_profiles_follow_the_epochs() -> None:
    assert set(EPOCH_RELEASES) <= set(VLLM_RELEASES) and len(VLLM_RELEASES) == 20
    assert [PROFILES[v].epoch for v in EPOCH_RELEASES] == ["E4", "E5", "E6", "E7", "E8", "E9", "E10", "E11"]
    p20, p34 = PROFILES["0.20.0"], PROFILES["0.34.0"]
    assert (p20.default_block_size, p20.prefix_caching_default, p20.token_figure, p20.models_typo) == (16, False, "groups", True)
    assert (p34.default_block_size, p34.prefix_caching_default, p34.gdn_checkpoint, p34.extensible_kv_cache_default) == (64, True, True, True)
    assert PROFILES["0.22.0"].models_typo is False and PROFILES["0.28.0"].capacity_one_line
