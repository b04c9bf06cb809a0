"""Conformance: `mambasizer.service.solver.launch.resolve` against SGLang 0.5.23's own flag resolution.

For seeded, generated launch flag sets over every hybrid family (the shipped preset
configs that SGLang's ModelConfig loads, plus variations), SGLang's real
`ServerArgs(...).resolve_once()` + `check_server_args()` run on a stood-in Hopper GPU
(tests/conformance/launch_ref.py) and our pure `launch.resolve` must agree on every
resolved value the Launch exposes, and on whether SGLang refuses the flags (same
exception class).

    .venv/bin/python -m pytest tests/conformance/test_launch_resolution.py -q -p no:cacheprovider
    .venv/bin/python -m tests.conformance.test_launch_resolution     # print every mismatch
"""

from __future__ import annotations

import copy
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.launch import resolve

PRESETS = Path(__file__).resolve().parents[2] / "service" / "presets" / "models"
SEED = 20250523
N_CASES = 1000

# GPU capacities (MiB) across every bracket of the memory heuristic.
GPUS = (143771, 143771, 143771, 81559, 81559, 97871, 40960, 49152, 24576, 32768, 16384, 183359)


def _preset(name: str) -> dict:
    raw = json.loads((PRESETS / f"{name}.json").read_text())
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def _variants() -> dict[str, dict]:
    """Model configs: every shipped preset SGLang 0.5.23 loads and sizes through its
    mamba path, and variations that exercise config-dependent resolution rules."""
    names = [
        "qwen3-next-80b-a3b-instruct", "qwen3.5-27b", "qwen3.5-35b-a3b", "qwen3.5-397b-a17b",
        "qwen3.6-27b", "qwen3.8-2.4t-a95b", "kimi-linear-48b-a3b-instruct", "kimi-k3",
        "nemotron-h-8b-base-8k", "nemotron-h-47b-base-8k", "nvidia-nemotron-nano-9b-v2",
        "nvidia-nemotron-3-nano-30b-a3b", "nvidia-nemotron-3-super-120b-a12b",
        "nvidia-nemotron-3.5-lightning-30b-a3b", "falcon-h1-0.5b", "granite-4.0-h-small",
        "granite-4.0-h-tiny", "lfm2-2.6b", "lfm2-350m",
    ]
    out = {n: _preset(n) for n in names}
    q = _preset("qwen3-next-80b-a3b-instruct")
    out["qwen3-next+ssm-bf16"] = {**q, "mamba_ssm_dtype": "bfloat16"}
    out["qwen3-next+mtp1"] = {**q, "num_nextn_predict_layers": 1}
    out["qwen3-next+ctx-rope"] = {**q, "max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    n = _preset("nvidia-nemotron-nano-9b-v2")
    out["nemotron-nano+chunk64"] = {**n, "mamba_chunk_size": 64}
    out["nemotron-nano+ssm-fp16"] = {**n, "mamba_ssm_dtype": "float16"}
    f = _preset("falcon-h1-0.5b")
    out["falcon-h1+ssm-bf16"] = {**f, "mamba_ssm_dtype": "bfloat16"}
    g = _preset("granite-4.0-h-tiny")
    out["granite-tiny+ssm-bf16"] = {**g, "mamba_ssm_dtype": "bfloat16"}
    # transformers >= 5.15 spelling of the layer kinds; SGLang's config class maps it back.
    out["granite-tiny+linear-attention-names"] = {
        **g, "layer_types": ["linear_attention" if t == "mamba" else "full_attention" for t in g["layer_types"]]
    }
    out["granite-tiny+default-layers"] = {k: v for k, v in g.items() if k != "layer_types"}
    k = copy.deepcopy(_preset("kimi-k3"))
    k["vision_config"] = {**k.get("vision_config", {}), "vt_num_hidden_layers": 40, "vt_hidden_size": 1280}
    out["kimi-k3+big-vit"] = k
    q5 = copy.deepcopy(_preset("qwen3.5-27b"))
    q5["vision_config"] = {**q5["vision_config"], "num_hidden_layers": 32, "hidden_size": 1536}
    out["qwen3.5-27b+vit-layers"] = q5
    l2 = _preset("lfm2-350m")
    out["lfm2+ssm-bf16"] = {**l2, "mamba_ssm_dtype": "bfloat16"}
    return out


MODELS = _variants()


@cache
def _layout(name: str):
    return layout_from_hf_config(MODELS[name], name=name)


def _spec_flags(rng: random.Random, algo: str) -> dict:
    shape = rng.choice(["auto"] * 4 + ["full"] * 2 + ["chain", "tree", "tree", "steps_only", "draft_only", "topk_only", "big"])
    if shape == "auto":
        return {}
    if shape == "full":
        steps = rng.choice([1, 2, 3, 5])
        return {"speculative_num_steps": steps, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": rng.choice([steps + 1, 2, 8])}
    if shape == "chain":
        return {"speculative_num_steps": rng.choice([1, 2, 4]), "speculative_eagle_topk": 1}
    if shape == "tree":
        return {"speculative_num_steps": rng.choice([2, 3]), "speculative_eagle_topk": rng.choice([2, 4]), "speculative_num_draft_tokens": rng.choice([6, 8, 16])}
    if shape == "steps_only":
        return {"speculative_num_steps": rng.choice([2, 3])}
    if shape == "draft_only":
        return {"speculative_num_draft_tokens": rng.choice([4, 8, 300])}
    if shape == "topk_only":
        return {"speculative_eagle_topk": rng.choice([1, 4])}
    return {"speculative_num_steps": 7, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 300}


def generate_cases(n: int = N_CASES, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    names = sorted(MODELS)
    cases = []
    for i in range(n):
        name = names[i % len(names)] if i < 2 * len(names) else rng.choice(names)
        lay = _layout(name)
        sa: dict[str, Any] = {}
        env: dict[str, Any] = {}
        tp = rng.choice([1, 1, 2, 4, 8])
        if tp > 1:
            sa["tp_size"] = tp
        if lay.pp_supported and rng.random() < 0.3:
            sa["pp_size"] = rng.choice([2, 3, 4])
        if tp > 1 and rng.random() < 0.2:
            sa["attn_dp_size"] = rng.choice([d for d in (2, 4, 8) if tp % d == 0])
        if rng.random() < 0.3:
            sa["page_size"] = rng.choice([1, 1, 16, 16, 32, 64, 64, 128, 256, 512, 48])
        r = rng.random()
        if r < 0.3:
            sa["mamba_radix_cache_strategy"] = rng.choice(["no_buffer", "extra_buffer", "extra_buffer_lazy", "auto"])
        if rng.random() < 0.12:
            sa["disable_radix_cache"] = True
        if rng.random() < 0.2:
            sa["disable_overlap_schedule"] = True
        if rng.random() < 0.45:
            algo = rng.choice(["NEXTN", "NEXTN", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM"])
            sa["speculative_algorithm"] = algo
            sa.update(_spec_flags(rng, algo))
        if rng.random() < 0.3:
            sa["max_running_requests"] = rng.choice([1, 8, 32, 48, 100, 256, 600])
        if rng.random() < 0.15:
            sa["max_total_tokens"] = rng.choice([1000, 4096, 5000, 100000])
        if rng.random() < 0.15:
            sa["mem_fraction_static"] = rng.choice([0.7, 0.85, 0.9])
        if rng.random() < 0.1:
            sa["mamba_full_memory_ratio"] = rng.choice([0.5, 2.0])
        if rng.random() < 0.15:
            sa["mamba_ssm_dtype"] = rng.choice(["float32", "bfloat16", "float16"])
        if rng.random() < 0.15:
            env["SGLANG_MAMBA_SSM_DTYPE"] = rng.choice(["float32", "bfloat16", "float16"])
        if rng.random() < 0.1:
            env["SGLANG_MAMBA_CONV_DTYPE"] = rng.choice(["float32", "bfloat16", "float16"])
        if rng.random() < 0.12:
            sa["enable_linear_replayssm_spec"] = True
            if rng.random() < 0.3:
                sa["linear_replayssm_cache_len"] = rng.choice([4, 32])
        if rng.random() < 0.04:
            sa["enable_linear_replayssm"] = True
        if rng.random() < 0.12:
            derived = lay.derived_context_len
            sa["context_length"] = rng.choice([4096, max(1, derived // 2), derived, derived * 2])
            if rng.random() < 0.4:
                env["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"] = True
        if rng.random() < 0.15:
            sa["chunked_prefill_size"] = rng.choice([-1, 2048, 3000, 4096, 16384])
            if sa["chunked_prefill_size"] == -1 and rng.random() < 0.5:
                sa["max_prefill_tokens"] = rng.choice([8192, 32768])
        if rng.random() < 0.1:
            sa["cuda_graph_max_bs_decode"] = rng.choice([16, 160, 400])
        if rng.random() < 0.08:
            sa["cuda_graph_max_bs_prefill"] = rng.choice([512, 2048, 10000])
        if rng.random() < 0.07:
            sa["disable_cuda_graph"] = True
        if rng.random() < 0.07:
            sa["disable_prefill_cuda_graph"] = True
        if rng.random() < 0.05:
            sa["disable_decode_cuda_graph"] = True
        if rng.random() < 0.15:
            sa["attention_backend"] = rng.choice(["fa3", "flashinfer", "triton"])
        if rng.random() < 0.1:
            sa["kv_cache_dtype"] = rng.choice(["fp8_e4m3", "fp8_e5m2", "bf16"])
        if rng.random() < 0.06:
            sa["mamba_track_interval"] = rng.choice([64, 128, 512, 384])
            if sa["mamba_track_interval"] == 384 and rng.random() < 0.7:
                sa["page_size"] = rng.choice([96, 192, 384])
        if rng.random() < 0.08:
            env["SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK"] = True
        cases.append({"id": f"{i:04d}-{name}", "model": name, "server_args": sa, "env": env, "gpu_mib": rng.choice(GPUS)})
    return cases


def ours(case: dict, layout=None, release: str = "0.5.23") -> dict:
    """Our resolution of the case (of `layout` in place of the case's model when given:
    tests/conformance/test_explicit_layouts.py passes the model as an explicit layout), by
    `release`'s rules (tests/conformance/test_release_launch.py)."""
    layout = layout if layout is not None else _layout(case["model"])
    args = ServerArgs(**case["server_args"])
    env = Env(**case["env"])
    try:
        launch = resolve(layout, args, env, gpu_memory_mib=case["gpu_mib"], draft_layers=None, needs_mfs=True, release=release)
    except PlanInputError as exc:
        return {"rejected": "PlanInputError", "message": str(exc)}
    if launch.rejections:
        return {"rejected": launch.rejections[0].exception, "message": launch.rejections[0].message}
    return launch_fields(launch)


def launch_fields(launch) -> dict:
    """The resolved values a Launch exposes, under the reference's names."""
    spec = launch.speculative_algorithm
    return {
        "rejected": None,
        "page_size": launch.page_size,
        "mem_fraction_static": launch.mem_fraction_static,
        "strategy": launch.strategy,
        "extra_buffer": launch.extra_buffer,
        "extra_buffer_lazy": launch.extra_buffer_lazy,
        "disable_overlap_schedule": launch.disable_overlap_schedule,
        "max_running_requests": launch.max_running_requests,
        "speculative_algorithm": "EAGLE" if spec == "NEXTN" else spec,
        "speculative_num_draft_tokens": launch.num_draft_tokens,
        "speculative_num_steps": launch.speculative_num_steps,
        "speculative_eagle_topk": launch.speculative_eagle_topk,
        "mamba_full_memory_ratio": launch.mamba_full_memory_ratio,
        "chunked_prefill_size": launch.chunked_prefill_size,
        "decode_cuda_graph_max_bs": launch.decode_cuda_graph_max_bs,
        "prefill_cuda_graph": launch.prefill_cuda_graph,
        "env_mamba_ssm_dtype": launch.env_mamba_ssm_dtype,
        "ssm_dtype": launch.ssm_dtype,
        "conv_dtype": launch.conv_dtype,
        "context_len": launch.context_len,
        "draft_kv_layers": launch.draft_kv_layers,
        "disable_radix_cache": launch.disable_radix_cache,
        "decode_extra_slots": launch.decode_extra_slots,
        "ep_size": launch.ep_size,
    }


_THEIRS: dict[str, dict] = {}


def theirs(case: dict) -> dict:
    from tests.conformance.launch_ref import resolve_with_sglang

    key = json.dumps([case["model"], case["server_args"], case["env"], case["gpu_mib"]], sort_keys=True)
    if key not in _THEIRS:
        _THEIRS[key] = resolve_with_sglang(MODELS[case["model"]], case["server_args"], case["env"], case["gpu_mib"])
    return _THEIRS[key]


# SGLang's bare `assert`s carry no message: our rejection must name the same check, which
# the reference reports as the failing source line.
BARE_ASSERTS = {
    "--mamba-track-interval (": ("mamba_track_interval % view.page_size", "mamba_track_interval >= view.speculative_num_draft_tokens"),
    "--speculative-eagle-topk / --speculative-num-draft-tokens need": ("speculative_num_draft_tokens is None", "speculative_eagle_topk is None"),
}


def _same_rejection(a: dict, b: dict) -> bool:
    if a["rejected"] != b["rejected"]:
        return False
    if b.get("message"):
        return a["message"].startswith(b["message"])
    checks: tuple[str, ...] = next((v for k, v in BARE_ASSERTS.items() if a["message"].startswith(k)), ())
    if "multiple of --page-size" in a["message"]:
        checks = checks[:1]
    elif "--mamba-track-interval" in a["message"]:
        checks = checks[1:]
    return any(c in b.get("check", "") for c in checks)


def diff(case: dict, layout=None) -> str | None:
    a, b = ours(case, layout), theirs(case)
    if a["rejected"] or b["rejected"]:
        if _same_rejection(a, b):
            return None
        return (
            f"rejected: ours={a['rejected']} ({a.get('message', '')[:160]}) "
            f"sglang={b['rejected']} ({b.get('message', '')[:160]} | {b.get('check', '')})"
        )
    bad = {k: (a[k], b[k]) for k in b if a.get(k) != b[k]}
    return None if not bad else "; ".join(f"{k}: ours={v[0]!r} sglang={v[1]!r}" for k, v in bad.items())


CASES = generate_cases()


@pytest.fixture(scope="module", autouse=True)
def _sglang():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed (pip install --no-deps sglang==0.5.23)")
    from tests.conformance import launch_ref

    launch_ref._load()


def test_cases_cover_every_family_and_both_outcomes():
    families = {_layout(c["model"]).family for c in CASES}
    assert families == {"qwen3_next", "qwen3_5", "kimi_linear", "nemotron_h", "falcon_h1", "granitemoehybrid", "lfm2"}
    outcomes = [theirs(c)["rejected"] for c in CASES[:200]]
    assert None in outcomes and any(o is not None for o in outcomes)


def test_prefill_graph_size_count_is_sglangs_list_length():
    """The closed-form count of prefill CUDA-graph capture sizes equals the length of the
    list SGLang builds, at every limit up to 20,000 and at scattered larger ones (the
    count is what the automatic mem_fraction_static charges 8 MiB apiece)."""
    from mambasizer.service.solver.launch import prefill_graph_size_count
    from tests.conformance import launch_ref

    with launch_ref._import_fakes():
        from sglang.srt.arg_groups.cuda_graph_hook import generate_prefill_cuda_graph_batch_sizes
    limits = list(range(-2, 20001)) + [65535, 65536, 123457, 1 << 20, 1_000_003]
    mismatches = [n for n in limits if prefill_graph_size_count(n) != len(generate_prefill_cuda_graph_batch_sizes(n))]
    assert mismatches == []
    # Past the table, one size per 512 tokens (SGLang's list would hold ~2^31 entries).
    assert prefill_graph_size_count(1 << 40) == 50 + ((1 << 40) - 4608) // 512 + 1


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_launch_resolution_matches_sglang(case):
    problem = diff(case)
    assert problem is None, f"{case['model']} {case['server_args']} env={case['env']} gpu={case['gpu_mib']}: {problem}"


if __name__ == "__main__":
    import collections
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else N_CASES
    cases = generate_cases(n)
    bad = 0
    kinds: collections.Counter = collections.Counter()
    for c in cases:
        d = diff(c)
        if d:
            bad += 1
            kinds[d.split(":")[0]] += 1
            print(c["id"], c["server_args"], c["env"], c["gpu_mib"], "->", d)
    print(f"{bad} / {len(cases)} mismatches", dict(kinds))
    rej = collections.Counter(theirs(c)["rejected"] for c in cases)
    print("sglang outcomes:", dict(rej))
