"""The vLLM pipeline against vLLM's OWN start-up sizing code, per release, on the CPU
(`vllm_ref.py` in a subprocess on the release's unpacked sources; what runs and what is stood in
is listed there). Compared per case: the block size after alignment, the unpadded mamba page
(the model class's own state-shape and dtype classmethods after the config hook), the padded
page, the KV-cache groups, num_blocks (the minimum over PP workers), the "GPU KV cache size"
token figure and the maximum concurrency, or the one-request refusal's text.

Releases: one per accounting epoch by default (EPOCH_RELEASES: 0.20.0 E4, 0.24.0 E5, 0.27.0 E6,
0.28.0 E7, 0.29.0 E8, 0.32.0 E9, 0.33.0 E10, 0.34.0 E11); MAMBASIZER_VLLM_RELEASES=all for every
release (the full run), or a comma-separated list. Cases per release: VLLM_CASES (default 16)
seeded requests over the shipped presets of every family vLLM sizes here (Qwen3-Next, Qwen3.6
dense and MoE, Nemotron-H / Nemotron-3, Granite-4.0-H, Falcon-H1, LFM2): TP 1-8, PP 1-3, prefix
caching on/off, --block-size, fp8 KV, the mamba dtype flags, max_model_len and available memory
down to the refusals, plus the two reproduced deployments (Qwen3-Next TP4 at 80 GiB,
Nemotron-3-Super TP2 at 8.32 GiB). Measured on this 2-core machine (shared): 8 releases, 144
cases, 144 equal, 338 s (the sources and dependencies already cached).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import vllm_wheels
from mambasizer.schemas.request import PlanRequest
from mambasizer.schemas.vllm_plan import VllmPlan
from mambasizer.service.planner import model_layout, plan_engine
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.vllm import pages
from mambasizer.service.solver.vllm.flags import parse_vllm_args
from mambasizer.service.solver.vllm.profiles import EPOCH_RELEASES, PROFILES, VLLM_RELEASES

HERE = Path(__file__).parent
N = int(os.environ.get("VLLM_CASES", "16"))
SEED = int(os.environ.get("MAMBASIZER_CONFORMANCE_SEED", "20261203"))
_WANT = os.environ.get("MAMBASIZER_VLLM_RELEASES", "")
RELEASES = {"all": VLLM_RELEASES, "": EPOCH_RELEASES}.get(_WANT) or tuple(_WANT.split(","))
# (preset, architecture vLLM resolves, TPs the checkpoint divides)
PRESETS = (
    ("qwen3-next-80b-a3b-instruct", "Qwen3NextForCausalLM", (1, 2, 4, 8)),
    ("qwen3.6-27b", "Qwen3_5ForConditionalGeneration", (1, 2, 4)),
    ("qwen3.6-35b-a3b", "Qwen3_5MoeForConditionalGeneration", (1, 2)),
    ("nvidia-nemotron-3-super-120b-a12b", "NemotronHForCausalLM", (1, 2, 4, 8)),
    ("nvidia-nemotron-nano-9b-v2", "NemotronHForCausalLM", (1, 2, 4)),
    ("nemotron-h-8b-base-8k", "NemotronHForCausalLM", (1, 2, 4)),
    ("granite-4.0-h-tiny", "GraniteMoeHybridForCausalLM", (1, 2, 4)),
    ("falcon-h1-0.5b", "FalconH1ForCausalLM", (1, 2)),
    ("lfm2-350m", "Lfm2ForCausalLM", (1, 2)),
)


def _request(rng: random.Random, version: str) -> dict:
    preset, arch, tps = rng.choice(PRESETS)
    args = ["-tp", str(rng.choice(tps))]
    if arch in ("NemotronHForCausalLM", "GraniteMoeHybridForCausalLM", "Qwen3_5ForConditionalGeneration") and rng.random() < 0.4:
        args += ["-pp", str(rng.choice([2, 3]))]
    if rng.random() < 0.5:
        args.append(rng.choice(["--enable-prefix-caching", "--no-enable-prefix-caching"]))
    if rng.random() < 0.3:
        args += ["--block-size", str(rng.choice([16, 32, 64, 128]))]
    if rng.random() < 0.3:
        args += ["--kv-cache-dtype", "fp8"]
    if rng.random() < 0.3:
        args += ["--mamba-ssm-cache-dtype", rng.choice(["float32", "bfloat16"])]
    if rng.random() < 0.2:
        args += ["--mamba-cache-dtype", rng.choice(["float32", "bfloat16"])]
    args += ["--max-model-len", str(rng.choice([4096, 32768, 131072, 262144, rng.randint(1000, 300000)]))]
    gib = rng.choice([0.05, 0.5, 2.0, 8.32, 20.0, 40.0, round(rng.uniform(0.01, 60), 2)])
    return {"engine": "vllm", "vllm_version": version, "model": {"preset": preset}, "budget": {"kv_cache_memory_gib": gib}, "vllm_args": args}


def _case(body: dict, arch: str) -> tuple[dict, VllmPlan]:
    req = PlanRequest.model_validate(body)
    layout = model_layout(req)
    result = plan_engine(req)
    assert isinstance(result, VllmPlan)
    r = result.resolved
    args = parse_vllm_args(req.vllm_args or [])
    hf = dict(layout.hf_text_config)
    if layout.family == "lfm2":
        # vLLM's Lfm2 reads conv_dim, which the LFM2 checkpoints set to hidden_size and the
        # shipped preset leaves out (our adapter sizes the conv state on hidden_size).
        hf.setdefault("conv_dim", hf["hidden_size"])
    return {
        "architecture": arch, "hf_config": hf, "tp": r.tp_size, "pp": r.pp_size,
        "num_kv_heads": layout.kv.total_kv_heads, "head_size": layout.kv.head_dim, "model_dtype": r.model_dtype,
        "max_model_len": r.max_model_len, "block_size": r.requested_block_size, "user_block_size": args.block_size is not None,
        "kv_cache_dtype": args.kv_cache_dtype, "mamba_cache_dtype": args.mamba_cache_dtype,
        "mamba_ssm_cache_dtype": args.mamba_ssm_cache_dtype, "align": r.mamba_cache_mode == "align",
        "checkpoint_alignment": r.prefill_checkpoint_alignment,
        "checkpoint_block": r.mamba_cache_mode == "align" and _checkpoint_block(layout.family, PROFILES[req.vllm_version]),
        "stages": [list(range(s.start_layer, s.end_layer)) for s in result.stages],
        "mamba_layers": list(layout.mamba_layer_ids), "attention_layers": list(layout.full_attention_layer_ids),
        "available": [s.kv_cache_memory_bytes for s in result.stages],
    }, result


def _checkpoint_block(family: str, profile) -> bool:
    if family in pages.GDN_FAMILIES:
        return profile.gdn_checkpoint
    return family != "lfm2" and profile.mamba2_checkpoint_block


def _oracle(version: str, cases: list[dict]) -> list[dict]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{vllm_wheels.release_source(version)}:{vllm_wheels.deps_dir()}"
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    out = subprocess.run(
        [sys.executable, str(HERE / "vllm_ref.py")], input=json.dumps(cases), capture_output=True, text=True,
        env=env, timeout=1800, cwd="/",
    )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == len(cases), f"vllm {version} oracle failed: {out.stderr[-3000:]}"
    return [json.loads(ln) for ln in lines]


def _compare(ours, ref: dict, case: dict) -> list[str]:
    if "crash" in ref:
        return [f"oracle crashed: {ref['crash']}"]
    diffs = []

    def eq(name, a, b):
        if a != b:
            diffs.append(f"{name}: ours {a!r} vLLM {b!r}")

    eq("block_size", ours.block_size, ref["block_size"])
    eq("mamba_page_raw", ours.mamba_page_bytes, ref["mamba_page_raw"])
    eq("page", ours.page_bytes, ref["page"])
    if "error" in ref:
        if ours.error is None or ours.error.kind not in ("one_request_does_not_fit", "no_memory_for_kv"):
            diffs.append(f"vLLM refused ({ref['error'][:160]}) but ours did not")
        elif not ref["error"].startswith(ours.error.message):
            diffs.append(f"message: ours {ours.error.message!r} vLLM {ref['error']!r}")
        return diffs
    if ours.num_gpu_blocks is None:
        return [f"ours refused ({ours.error.message[:120]}) but vLLM sized {ref.get('num_blocks')} blocks"]
    eq("num_blocks", ours.num_gpu_blocks, ref["num_blocks"])
    eq("num_groups", len(ours.groups), ref["num_groups"])
    eq("groups", sorted(len([x for x in g.layers if x in set(case["stages"][0])]) for g in ours.groups), ref["groups"])
    eq("concurrency", ours.max_concurrency, ref["concurrency"])
    if "tokens" in ref:
        eq("tokens", ours.kv_cache_tokens, ref["tokens"])
    else:
        eq("capacity_log", ours.capacity_log, ref["log"])  # 0.20: the two lines vLLM's own function logged
    return diffs


@pytest.mark.parametrize("version", RELEASES)
def test_vllm_release_conformance(version: str) -> None:
    rng = random.Random(f"{SEED}-{version}")
    bodies = [_request(rng, version) for _ in range(N)]
    # The reproduced public deployments ride along in every release.
    bodies.append({"engine": "vllm", "vllm_version": version, "model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"kv_cache_memory_gib": 80.0}, "vllm_args": ["-tp", "4"]})
    bodies.append({"engine": "vllm", "vllm_version": version, "model": {"preset": "nvidia-nemotron-3-super-120b-a12b"}, "budget": {"kv_cache_memory_gib": 8.32}, "vllm_args": ["-tp", "2"]})
    arch_of = {p: a for p, a, _ in PRESETS}
    cases, ours = [], []
    for body in bodies:
        try:
            c, result = _case(body, arch_of[body["model"]["preset"]])
        except PlanInputError as exc:
            pytest.fail(f"{body}: {exc}")
        cases.append(c)
        ours.append(result)
    refs = _oracle(version, cases)
    bad = []
    refused = 0
    for body, o, r, c in zip(bodies, ours, refs, cases, strict=True):
        refused += "error" in r
        d = _compare(o, r, c)
        if d:
            bad.append(f"{body['model']['preset']} {body['vllm_args']} {body['budget']}: {d}")
    print(f"vllm {version}: {len(cases)} cases, {len(cases) - len(bad)} equal, {refused} refused by vLLM's one-request check")
    assert not bad, "\n".join(bad[:15])
