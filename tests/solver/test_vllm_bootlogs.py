"""Public vLLM start-up lines (tests/data/vllm_bootlogs/, copied from the project's shared
collection with their sources) reproduced by the vLLM pipeline.

* Capacity lines: every log that states the measured "Available KV cache memory" and whose
  model, release and KV dtype are sized here is reproduced to the token ("GPU KV cache size")
  and to the printed concurrency, line for line.
* max_num_seqs refusals: each public error report whose model is shipped here is reproduced as
  a refusal carrying vLLM's own text, at the memory that gives the reported block count; the
  max_num_seqs in the text is the GPU's vLLM default where the report names the GPU.

Not reproducible here, and why (asserted below so the list stays true):
* qwen3.6-35b-a3b-2 (TurboQuant k8v4 KV) and qwen3.5-1 (nvfp4 KV prototype): packed KV dtypes
  are not modelled (`--kv-cache-dtype` refuses them); neither log states the available memory.
* qwen3-next-80b-a3b-1: an October 2025 build before 0.20, no available memory in the excerpt.
* qwen3.8-flash-next-1: the checkpoint (Qwen3.8-Flash-Next AWQ) is not shipped and the
  backport's release is unstated.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mambasizer.schemas.vllm_plan import VllmPlan
from mambasizer.service.planner import plan_engine as _plan_engine
from mambasizer.service.solver import PlanInputError

DATA = Path(__file__).parents[1] / "data" / "vllm_bootlogs"


def plan_engine(body: dict) -> VllmPlan:
    p = _plan_engine(body)
    assert isinstance(p, VllmPlan)
    return p


def _log(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _printed(verbatim: str, needle: str) -> str:
    """The message part of the first raw log line holding `needle` (prefixes stripped)."""
    line = next(ln for ln in verbatim.splitlines() if needle in ln)
    return line[line.index("GPU KV cache size") if needle.startswith("GPU") else line.index(needle):]


def test_qwen36_35b_a3b_rtx5090_vllm_0_24_capacity_to_the_token() -> None:
    log = _log("qwen3.6-35b-a3b-1.json")
    f = log["figures"]
    assert log["vllm_version"].startswith("0.24.0")
    plan = plan_engine({
        "engine": "vllm", "vllm_version": "0.24.0", "model": {"preset": "nvidia-qwen3.6-35b-a3b-nvfp4"},
        "budget": {"kv_cache_memory_gib": f["available_kv_cache_gib"]},
        "vllm_args": ["--kv-cache-dtype", "fp8", "--max-model-len", str(f["max_model_len"]), "--enable-prefix-caching", "--max-num-seqs", "1"],
    })
    assert plan.feasible
    assert plan.kv_cache_tokens == f["kv_cache_tokens"] == 567978
    # vLLM 0.24 prints the two figures on two lines: both equal the log's, character for character.
    assert plan.capacity_log is not None and plan.max_concurrency is not None
    size_line, conc_line = plan.capacity_log.splitlines()
    assert round(plan.max_concurrency, 2) == f["max_concurrency"]
    assert size_line == _printed(log["verbatim"], "GPU KV cache size")
    assert conc_line == _printed(log["verbatim"], "Maximum concurrency")
    d = log["derived"]
    assert (plan.block_size, plan.num_gpu_blocks, plan.stages[0].bytes_per_block) == (d["block_size"], d["num_blocks"], d["bytes_per_block"])
    assert plan.blocks_per_request == 69 and plan.mamba_padding_pct == 0.0
    # The printed 5.98 GiB is rounded: 5.975 GiB gives one block fewer, so the figure is tight.
    lower = plan_engine({
        "engine": "vllm", "vllm_version": "0.24.0", "model": {"preset": "nvidia-qwen3.6-35b-a3b-nvfp4"},
        "budget": {"kv_cache_memory_gib": 5.975},
        "vllm_args": ["--kv-cache-dtype", "fp8", "--max-model-len", "131072", "--enable-prefix-caching", "--max-num-seqs", "1"],
    })
    assert lower.kv_cache_tokens == 566079


# (error report index in the Nemotron file, shipped preset, vllm_args, budget.gpu or None)
_REPORTS = [
    (0, "nvidia-nemotron-3-super-120b-a12b", ["-tp", "2"], "h100"),
    (2, "qwen3.6-27b", ["-tp", "1"], "h100"),
    (5, "nvidia-nemotron-nano-12b-v2", [], None),
]


@pytest.mark.parametrize(("index", "preset", "args", "gpu"), _REPORTS)
def test_max_num_seqs_refusals_reproduced_with_vllms_text(index: int, preset: str, args: list[str], gpu: str | None) -> None:
    report = _log("nemotron-3-super-120b-1.json")["error_reports"][index]
    blocks, seqs = report["available_mamba_cache_blocks"], report["max_num_seqs"]
    budget: dict = {"kv_cache_memory_gib": 40.0}
    body: dict = {"engine": "vllm", "model": {"preset": preset}, "vllm_args": args, "budget": budget}
    if gpu:
        budget["gpu"] = gpu
    else:  # the report names no GPU: its max_num_seqs is given as reported
        body["vllm_args"] = [*args, "--max-num-seqs", str(seqs)]
    bpb = plan_engine(body).stages[0].bytes_per_block
    # The smallest available memory that gives exactly the reported block count.
    budget["kv_cache_memory_gib"] = blocks * bpb / (1 << 30)
    plan = plan_engine(body)
    assert plan.num_gpu_blocks == blocks
    assert plan.resolved.max_num_seqs == seqs  # on a named GPU: vLLM's default there (1024 on an H100)
    assert not plan.feasible and plan.error is not None and plan.error.kind == "max_num_seqs_exceeds_blocks"
    assert plan.error.message.startswith(report["error_text"].removeprefix("ValueError: "))
    assert plan.max_num_seqs_that_starts == blocks
    assert f"--max-num-seqs {blocks}" in plan.error.remedies
    # One block below the report's max_num_seqs still fails; at it, the deployment starts.
    budget["kv_cache_memory_gib"] = seqs * bpb / (1 << 30)
    assert plan_engine(body).feasible
    budget["kv_cache_memory_gib"] = (seqs * bpb - 1) / (1 << 30)
    assert not plan_engine(body).feasible


def test_nemotron_super_524_blocks_at_the_computed_memory() -> None:
    """The research's consistency case: 8.32 GiB per worker, TP 2, 0.34 defaults -> 524 blocks."""
    plan = plan_engine({"engine": "vllm", "model": {"preset": "nvidia-nemotron-3-super-120b-a12b"}, "vllm_args": ["-tp", "2"], "budget": {"kv_cache_memory_gib": 8.32, "gpu": "h100"}})
    assert (plan.block_size, plan.stages[0].bytes_per_block, plan.num_gpu_blocks, plan.blocks_per_request) == (4160, 17039360, 524, 79)
    assert plan.error is not None and plan.min_kv_cache_memory_bytes is not None
    assert plan.error.message.startswith("max_num_seqs (1024) exceeds available Mamba cache blocks (524).")
    assert math.isclose(plan.min_kv_cache_memory_bytes[0] / (1 << 30), 16.25)


@pytest.mark.parametrize("kv", ["turboquant_k8v4", "nvfp4"])
def test_packed_kv_dtypes_of_the_unreproduced_logs_are_refused(kv: str) -> None:
    with pytest.raises(PlanInputError) as exc:
        plan_engine({"engine": "vllm", "model": {"preset": "qwen3.6-35b-a3b"}, "budget": {"kv_cache_memory_gib": 5.0}, "vllm_args": ["--kv-cache-dtype", kv]})
    assert exc.value.field == "vllm_args.--kv-cache-dtype"
