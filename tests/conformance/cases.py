"""Seeded generator of conformance requests (our wire shape, launch values resolved).

`generate_cases(n, seed)` returns `n` requests. Each is a PlanRequest dict plus bookkeeping
keys that start with "_" (`_resolved`, `_family`, `_id`, `_expect`); `wire(case)` drops them.

The hf_config dicts are real config.json files from the shipped presets (their values, not
their "_" notes) and randomised variants of them. Variants keep the checks transformers and
SGLang run when they LOAD a config (Falcon-H1 / Granite: heads x head_dim == intermediate) so
that every case reaches the sizing code, but they deliberately do NOT keep TP divisibility:
some (config, TP) pairs make SGLang's state-shape `divide()` raise, and both sides must raise.

Launch values are emitted resolved, as SGLang's argument resolution leaves them (so they pass
its resolution-time checks): explicit page_size, strategy (no_buffer for LFM2, which is not an
extra-buffer arch; page 1 with no_buffer), disable_overlap_schedule (True whenever pp > 1 or
no_buffer), mamba_full_memory_ratio, speculative (steps, topk=1, D=steps+1) only at PP 1, no
STANDALONE with attention DP, max_running_requests = 48 when speculative decoding is on and none was
given, mamba_ssm_dtype = "float32" under ReplaySSM spec when none was given. The one
deliberate start-up failure past resolution: extra_buffer_lazy with PP > 1 (§8.3), which
reaches the sizing code's own assertion.
"""

from __future__ import annotations

import copy
import json
import os
import random
import sys
from typing import Any

sys.modules.setdefault("cases", sys.modules[__name__])
sys.modules.setdefault("tests.conformance.cases", sys.modules[__name__])

# The project's own copies of the real configs (never ../shared: CI runs from the repo alone).
MODELS_DIR = os.environ.get(
    "MAMBASIZER_MODELS_DIR",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "service", "presets", "models"),
)

# Families SGLang 0.5.23 sizes on this path, and whether their model class accepts PP > 1.
FAMILIES = {
    "qwen3_next": False,
    "qwen3_5": True,
    "qwen3_5_moe": True,
    "kimi_linear": True,
    "kimi_k3": True,
    "nemotron_h": True,
    "falcon_h1": False,
    "granitemoehybrid": True,
    "lfm2": False,
}

# Real configs per family (file stems under MODELS_DIR) that load as they are.
PRESETS = {
    "qwen3_next": ["qwen3-next-80b-a3b-instruct", "qwen3-next-80b-a3b-thinking"],
    "qwen3_5": ["qwen3.5-27b", "qwen3.6-27b"],
    "qwen3_5_moe": [
        "qwen3.5-35b-a3b",
        "qwen3.5-122b-a10b",
        "qwen3.5-397b-a17b",
        "qwen3.6-35b-a3b",
        "qwen3.8-2.4t-a95b",
    ],
    "kimi_linear": ["kimi-linear-48b-a3b-instruct"],
    "kimi_k3": ["kimi-k3"],
    "nemotron_h": [
        "nemotron-h-8b-base-8k",
        "nemotron-h-47b-base-8k",
        "nemotron-h-56b-base-8k",
        "nvidia-nemotron-3-nano-30b-a3b",
        "nvidia-nemotron-3-super-120b-a12b",
        "nvidia-nemotron-3-ultra-550b-a55b",
        "nvidia-nemotron-3.5-lightning-30b-a3b",
        "nvidia-nemotron-nano-12b-v2",
        "nvidia-nemotron-nano-9b-v2",
    ],
    "falcon_h1": ["falcon-h1-0.5b"],
    "granitemoehybrid": ["granite-4.0-h-small", "granite-4.0-h-tiny"],
    "lfm2": ["lfm2-2.6b", "lfm2-350m"],
}

SPEC_ALGOS = ("EAGLE", "NEXTN", "EAGLE3", "STANDALONE")


def load_preset(stem: str) -> dict:
    with open(os.path.join(MODELS_DIR, stem + ".json")) as f:
        d = json.load(f)
    return {k: v for k, v in d.items() if not k.startswith("_")}


def wire(case: dict) -> dict:
    """The PlanRequest part of a case (bookkeeping keys removed)."""
    return {k: v for k, v in case.items() if not k.startswith("_")}


# --------------------------------------------------------------------------- completed configs
# Configs whose shared file lacks keys SGLang needs (values as SIZING_SPEC §3.3 states them).


def falcon_h1_1_5b() -> dict:
    """Falcon-H1-1.5B-class (SIZING_SPEC §3.3 / E8)."""
    return {
        "architectures": ["FalconH1ForCausalLM"],
        "model_type": "falcon_h1",
        "num_hidden_layers": 24,
        "hidden_size": 2048,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "mamba_d_ssm": 3072,
        "mamba_n_heads": 48,
        "mamba_d_head": 64,
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "max_position_embeddings": 131072,
    }


def granite_4_h_small_class() -> dict:
    """Granite-4.0-H-Small-class (SIZING_SPEC §3.3 / E9): 40 layers, 4 attention."""
    d = load_preset("granite-4.0-h-small")
    d.setdefault("max_position_embeddings", 131072)
    return d


def lfm2_1_2b() -> dict:
    """LFM2-1.2B (SIZING_SPEC §3.3 / E10): attention at 2, 5, 8, 10, 12, 14."""
    full = {2, 5, 8, 10, 12, 14}
    return {
        "architectures": ["Lfm2ForCausalLM"],
        "model_type": "lfm2",
        "num_hidden_layers": 16,
        "hidden_size": 2048,
        "intermediate_size": 12288,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "conv_L_cache": 3,
        "layer_types": ["full_attention" if i in full else "conv" for i in range(16)],
        "max_position_embeddings": 128000,
        "vocab_size": 65536,
    }


# --------------------------------------------------------------------------- random variants


def _qwen_text(rng: random.Random, t: dict) -> dict:
    t = copy.deepcopy(t)
    layers = rng.choice([4, 8, 12, 16, 24, 36, 40, 48, 60, 64, 92])
    interval = rng.choice([2, 3, 4, 4, 4, 5, 6])
    t["num_hidden_layers"] = layers
    t["full_attention_interval"] = interval
    t["layer_types"] = [
        "full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)
    ]
    kh = rng.choice([2, 4, 6, 8, 12, 16, 16, 16, 32])
    t["linear_num_key_heads"] = kh
    t["linear_num_value_heads"] = kh * rng.choice([1, 2, 2, 3, 4, 8])
    t["linear_key_head_dim"] = rng.choice([64, 128, 128, 192])
    t["linear_value_head_dim"] = rng.choice([64, 128, 128, 256])
    t["linear_conv_kernel_dim"] = rng.choice([2, 3, 4, 4, 4])
    t["num_key_value_heads"] = rng.choice([1, 2, 2, 4, 8, 16])
    t["num_attention_heads"] = t["num_key_value_heads"] * rng.choice([1, 2, 4, 8])
    t["head_dim"] = rng.choice([64, 128, 256])
    t["max_position_embeddings"] = rng.choice([32768, 65536, 131072, 262144])
    r = rng.random()
    if r < 0.15:
        t["mamba_ssm_dtype"] = "bfloat16"
    elif r < 0.2:
        t["mamba_ssm_dtype"] = "float16"
    elif r < 0.4:
        t["mamba_ssm_dtype"] = "float32"
    else:
        t.pop("mamba_ssm_dtype", None)
    return t


def _kimi_text(rng: random.Random, t: dict) -> dict:
    t = copy.deepcopy(t)
    layers = rng.choice([6, 12, 20, 27, 40, 61, 93])
    if rng.random() < 0.6:
        every = rng.choice([2, 3, 4, 4, 5])
        full = [i for i in range(1, layers + 1) if i % every == 0]
        if layers not in full:
            full.append(layers)
    else:
        full = sorted(rng.sample(range(1, layers + 1), rng.randint(1, max(1, layers // 3))))
    kda = [i for i in range(1, layers + 1) if i not in full]
    lac = dict(t["linear_attn_config"])
    lac["full_attn_layers"] = full
    lac["kda_layers"] = kda
    lac["num_heads"] = rng.choice([8, 12, 16, 24, 32, 32, 48, 64, 96])
    lac["head_dim"] = rng.choice([64, 128, 128])
    lac["short_conv_kernel_size"] = rng.choice([2, 3, 4, 4])
    t["linear_attn_config"] = lac
    t["num_hidden_layers"] = layers
    t["kv_lora_rank"] = rng.choice([256, 512, 512])
    t["qk_rope_head_dim"] = rng.choice([32, 64, 64])
    if rng.random() < 0.2:
        t["mamba_ssm_dtype"] = "bfloat16"  # ignored by Kimi (cfg dtype not honoured)
    return t


def _nemotron(rng: random.Random, d: dict) -> dict:
    d = copy.deepcopy(d)
    layers = rng.choice([8, 16, 28, 42, 52, 56, 62, 88])
    chars = []
    for _ in range(layers):
        r = rng.random()
        chars.append("M" if r < 0.45 else "*" if r < 0.58 else "-" if r < 0.8 else "E")
    if "M" not in chars:
        chars[0] = "M"
    d.pop("layers_block_type", None)  # takes priority over the legacy pattern string
    d.pop("mtp_layers_block_type", None)
    d["hybrid_override_pattern"] = "".join(chars)
    d["num_hidden_layers"] = layers
    heads = rng.choice([24, 48, 64, 80, 96, 128, 128])
    d["mamba_num_heads"] = heads
    d["mamba_head_dim"] = rng.choice([32, 64, 64, 80])
    d["n_groups"] = rng.choice([1, 2, 3, 4, 8, 8, 16])
    d["ssm_state_size"] = rng.choice([64, 128, 128, 256])
    d["conv_kernel"] = rng.choice([2, 4, 4])
    d["num_key_value_heads"] = rng.choice([1, 2, 4, 8, 8])
    d["num_attention_heads"] = d["num_key_value_heads"] * rng.choice([2, 4, 8])
    d["head_dim"] = rng.choice([64, 128, 128])
    d["max_position_embeddings"] = rng.choice([4096, 8192, 131072, 262144])
    if rng.random() < 0.25:
        d["num_nextn_predict_layers"] = 1
        d["mtp_hybrid_override_pattern"] = "*E"
    else:
        d.pop("num_nextn_predict_layers", None)
        d.pop("mtp_hybrid_override_pattern", None)
    r = rng.random()
    if r < 0.2:
        d["mamba_ssm_dtype"] = "bfloat16"
    elif r < 0.3:
        d["mamba_ssm_dtype"] = "float32"
    return d


def _falcon(rng: random.Random, d: dict) -> dict:
    d = copy.deepcopy(d)
    d["num_hidden_layers"] = rng.choice([12, 24, 32, 36, 44, 66, 72])
    heads = rng.choice([12, 16, 24, 32, 48, 64, 96])
    dh = rng.choice([32, 64, 64, 128])
    d["mamba_n_heads"] = heads
    d["mamba_d_head"] = dh
    d["mamba_d_ssm"] = heads * dh
    d["mamba_n_groups"] = rng.choice([1, 1, 1, 2, 4])
    d["mamba_d_state"] = rng.choice([16, 64, 128, 256])
    d["mamba_d_conv"] = rng.choice([2, 4])
    d["num_key_value_heads"] = rng.choice([1, 2, 4, 8])
    d["num_attention_heads"] = d["num_key_value_heads"] * rng.choice([2, 4])
    d["head_dim"] = rng.choice([64, 128])
    d["max_position_embeddings"] = rng.choice([16384, 32768, 131072, 262144])
    if rng.random() < 0.25:
        d["mamba_ssm_dtype"] = "bfloat16"
    return d


def _granite(rng: random.Random, d: dict) -> dict:
    d = copy.deepcopy(d)
    layers = rng.choice([10, 20, 28, 40, 40, 52])
    every = rng.choice([4, 5, 6, 6, 10])
    types = ["attention" if (i + 1) % every == 0 else "mamba" for i in range(layers)]
    if "attention" not in types:
        types[-1] = "attention"
    d["num_hidden_layers"] = layers
    d["layer_types"] = types
    hidden = rng.choice([768, 1024, 1536, 2048, 3072, 4096])
    dh = rng.choice([32, 64, 64])
    intermediate = 2 * hidden
    heads = intermediate // dh
    d["hidden_size"] = hidden
    d["mamba_expand"] = 2
    d["mamba_d_head"] = dh
    d["mamba_n_heads"] = heads
    d["mamba_n_groups"] = rng.choice([1, 1, 2, 4])
    d["mamba_d_state"] = rng.choice([64, 128, 128])
    d["mamba_d_conv"] = rng.choice([2, 4, 4])
    d["num_key_value_heads"] = rng.choice([1, 2, 4, 8])
    d["num_attention_heads"] = rng.choice([8, 12, 16, 32])
    d["num_attention_heads"] -= d["num_attention_heads"] % d["num_key_value_heads"]
    d["max_position_embeddings"] = rng.choice([8192, 32768, 131072])
    return d


def _lfm2(rng: random.Random, d: dict) -> dict:
    d = copy.deepcopy(d)
    layers = rng.choice([10, 16, 16, 24, 30])
    full = sorted(rng.sample(range(layers), rng.randint(1, max(1, layers // 2))))
    d["num_hidden_layers"] = layers
    d["layer_types"] = ["full_attention" if i in full else "conv" for i in range(layers)]
    d.pop("full_attn_idxs", None)
    d["hidden_size"] = rng.choice([768, 1024, 1536, 2048, 2048, 2560, 3000])
    d["conv_L_cache"] = rng.choice([2, 3, 3, 4])
    d["num_key_value_heads"] = rng.choice([2, 4, 8])
    d["num_attention_heads"] = d["num_key_value_heads"] * rng.choice([2, 4])
    d["max_position_embeddings"] = rng.choice([32768, 128000])
    return d


def random_hf_config(rng: random.Random, family: str) -> dict:
    """A real preset of the family, or a randomised variant of one."""
    stem = rng.choice(PRESETS[family])
    base = load_preset(stem)
    if family == "falcon_h1" and rng.random() < 0.3:
        base = falcon_h1_1_5b()
    if family == "lfm2" and rng.random() < 0.3:
        base = lfm2_1_2b()
    if rng.random() < 0.25:
        return base
    if family == "qwen3_next":
        return _qwen_text(rng, base)
    if family in ("qwen3_5", "qwen3_5_moe"):
        if "text_config" in base:
            base["text_config"] = _qwen_text(rng, base["text_config"])
            return base
        return _qwen_text(rng, base)
    if family == "kimi_linear":
        return _kimi_text(rng, base)
    if family == "kimi_k3":
        base["text_config"] = _kimi_text(rng, base["text_config"])
        return base
    if family == "nemotron_h":
        return _nemotron(rng, base)
    if family == "falcon_h1":
        return _falcon(rng, base)
    if family == "granitemoehybrid":
        return _granite(rng, base)
    if family == "lfm2":
        return _lfm2(rng, base)
    raise KeyError(family)


def num_layers_of(hf: dict) -> int:
    t = hf.get("text_config") or hf
    if "layers_block_type" in t:  # Nemotron-H's newer spelling; it sets the layer count
        return len(t["layers_block_type"])
    if "num_hidden_layers" in t:
        return int(t["num_hidden_layers"])
    return len(t["hybrid_override_pattern"])


def context_of(hf: dict) -> int | None:
    t = hf.get("text_config") or hf
    for k in ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings"):
        if t.get(k):
            return int(t[k])
    return None


# --------------------------------------------------------------------------- launch values


def _tp(rng):
    return rng.choices([1, 2, 3, 4, 5, 6, 7, 8], weights=[20, 20, 3, 20, 2, 4, 2, 15])[0]


def _partition(rng, layers: int, pp: int) -> str:
    """A valid SGLANG_PP_LAYER_PARTITION: pp positive counts summing to layers."""
    cuts = sorted(rng.sample(range(1, layers), pp - 1))
    parts = [b - a for a, b in zip([0] + cuts, cuts + [layers], strict=True)]
    return ",".join(str(p) for p in parts)


def _bad_partition(rng, layers: int, pp: int) -> str:
    kind = rng.randrange(3)
    if kind == 0:  # wrong count
        return ",".join(str(layers // (pp + 1)) for _ in range(pp + 1))
    if kind == 1:  # wrong sum
        return ",".join(str(max(1, layers // pp)) for _ in range(pp - 1)) + "," + str(layers + 1)
    return "a," * (pp - 1) + "1"  # not integers


def _budget(rng, sa: dict, tier: str) -> dict:
    """rest_gib, or the profiler's free_gib_before/after_load with mem_fraction_static."""
    if tier == "tiny":
        rest = rng.choice([-5.0, -0.5, 0.0, 0.001, 0.01, 0.05, 0.2, 0.5, 1.0, 2.0])
    elif tier == "small":
        rest = round(rng.uniform(1.0, 12.0), rng.choice([1, 3, 6]))
    else:
        rest = round(rng.uniform(8.0, 130.0), rng.choice([1, 2, 4, 7]))
    if rng.random() < 0.5:
        return {"rest_gib": rest}
    f_pre = round(rng.uniform(20.0, 141.0), rng.choice([1, 2, 3]))
    mfs = round(rng.uniform(0.6, 0.95), 3)
    slack = f_pre * (1 - mfs)
    f_post = max(0.0, round(rest + slack, rng.choice([1, 2, 3])))
    if f_post > f_pre:
        # Loading weights cannot free memory: such figures are a 422 (free_gib_after_load),
        # so this rest is given directly (the draws above keep the seeded sequence).
        return {"rest_gib": rest}
    sa["mem_fraction_static"] = mfs
    return {"free_gib_before_load": f_pre, "free_gib_after_load": f_post}


def random_case(rng: random.Random, family: str, hf: dict) -> dict:
    layers = num_layers_of(hf)
    sa: dict[str, Any] = {}
    env: dict[str, Any] = {}
    draft = None
    tags = []

    tp = _tp(rng)
    divisors = [d for d in range(1, tp + 1) if tp % d == 0]
    dp = 1 if rng.random() < 0.75 else rng.choice(divisors)
    pp = 1
    if FAMILIES[family] and rng.random() < 0.4:
        pp = rng.choice([2, 2, 3, 4, 4, 5, 6, 7, 8])
        pp = min(pp, layers)
    sa.update(tp_size=tp, pp_size=pp, attn_dp_size=dp)
    if pp > 1:
        r = rng.random()
        if r < 0.25:
            env["SGLANG_PP_LAYER_PARTITION"] = _partition(rng, layers, pp) if pp > 1 else None
            tags.append("pp_partition")
        elif r < 0.32:
            env["SGLANG_PP_LAYER_PARTITION"] = _bad_partition(rng, layers, pp)
            tags.append("pp_partition_invalid")
    elif rng.random() < 0.03:
        env["SGLANG_PP_LAYER_PARTITION"] = "999"  # ignored at pp == 1

    # Mamba split branch and radix strategy, as SGLang's resolution leaves them:
    # no_buffer forces overlap off and needs page 1; LFM2 is not an extra-buffer arch;
    # PP forces overlap off after the strategy resolved (so lazy + PP reaches the sizing
    # code's own "lazy needs overlap" assertion, SIZING_SPEC §8.3).
    branch = rng.choices(["auto", "explicit", "radix_off"], weights=[60, 20, 20])[0]
    page = rng.choice([1, 1, 1, 16, 64, 256])
    if branch == "radix_off":
        sa["disable_radix_cache"] = True
        strategy = rng.choice(["no_buffer", "extra_buffer"])  # inert with radix off
    else:
        sa["disable_radix_cache"] = False
        if family == "lfm2":
            strategy = "no_buffer"
        else:
            weights = [60, 25, 15] if pp == 1 else [85, 12, 3]
            strategy = rng.choices(["extra_buffer", "no_buffer", "extra_buffer_lazy"], weights=weights)[0]
    if strategy == "no_buffer" and not sa["disable_radix_cache"]:
        page = 1
    sa["page_size"] = page
    if dp > 1 and page > 1:
        # Resolution divides chunked_prefill_size by attention DP and asserts the result is
        # a page multiple: state one that passes.
        sa["chunked_prefill_size"] = page * dp * max(1, 8192 // (page * dp))
    sa["mamba_radix_cache_strategy"] = strategy
    if strategy == "extra_buffer_lazy" and pp == 1:
        overlap_off = False
    else:
        overlap_off = pp > 1 or strategy == "no_buffer" or rng.random() < 0.2
    sa["disable_overlap_schedule"] = overlap_off
    sa["mamba_full_memory_ratio"] = 0.9 if rng.random() < 0.7 else round(rng.uniform(0.05, 4.0), 3)

    # Speculative decoding (+ ReplaySSM): topk 1, so D = steps + 1. Not with PP: SGLang's
    # validation allows PP + spec only on PD prefill nodes or under SGLANG_ENABLE_PP_SPEC.
    if pp == 1 and rng.random() < 0.4:
        algos = SPEC_ALGOS if dp == 1 else tuple(a for a in SPEC_ALGOS if a != "STANDALONE")
        sa["speculative_algorithm"] = rng.choice(algos)
        steps = rng.randint(1, 7)
        sa["speculative_num_steps"] = steps
        sa["speculative_eagle_topk"] = 1
        sa["speculative_num_draft_tokens"] = steps + 1
        if rng.random() < 0.4:
            draft = {"num_layers": rng.choice([0, 1, 1, 2, 4])}
        if rng.random() < 0.35:
            sa["enable_linear_replayssm_spec"] = True
            sa["linear_replayssm_cache_len"] = rng.choice([4, 8, 16, 16, 32])
        tags.append("spec")

    if branch == "explicit":
        sa["max_mamba_cache_size"] = rng.choice(
            [0, 1, dp - 1 if dp > 1 else 1, 3, 5, 8, 50, 200, 1000, 3000, rng.randint(1, 6000)]
        )
    if branch == "radix_off" or rng.random() < 0.3:
        sa["max_running_requests"] = rng.choice([1, 2, 8, 32, 48, 64, 128, 256, 1024, rng.randint(1, 4096)])
    if sa.get("speculative_algorithm") and sa.get("max_running_requests") is None:
        sa["max_running_requests"] = 48  # speculative_hook default
    if sa.get("enable_linear_replayssm_spec"):
        # attention_hook resolves an unset --mamba-ssm-dtype to float32 under ReplaySSM spec;
        # an explicit other value is kept (with a warning).
        sa["mamba_ssm_dtype"] = "float32" if rng.random() < 0.8 else "bfloat16"
    elif rng.random() < 0.15:
        sa["mamba_ssm_dtype"] = rng.choice(["bfloat16", "float16", "float32"])

    if rng.random() < 0.15:
        sa["max_total_tokens"] = rng.choice(
            [1, max(1, page - 1), page, 1000, 50000, 10**6, 10**8, rng.randint(1, 5 * 10**6)]
        )
    sa["kv_cache_dtype"] = rng.choices(
        ["auto", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2"], weights=[60, 10, 5, 20, 5]
    )[0]
    if rng.random() < 0.1:
        ctx = context_of(hf)
        if ctx:
            sa["context_length"] = rng.choice([2048, 4096, 32768, ctx])
            sa["context_length"] = min(sa["context_length"], ctx)
    if rng.random() < 0.1:
        sa["pp_max_micro_batch_size"] = rng.randint(1, 512)

    if rng.random() < 0.25:
        env["SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK"] = True
    if rng.random() < 0.15:
        env["SGLANG_MAMBA_SSM_DTYPE"] = rng.choice(["bfloat16", "float16", "float32"])
    if rng.random() < 0.1:
        env["SGLANG_MAMBA_CONV_DTYPE"] = rng.choice(["bfloat16", "float16", "float32"])

    tier = rng.choices(["tiny", "small", "normal"], weights=[12, 18, 70])[0]
    budget = _budget(rng, sa, tier)
    tags.append(f"budget_{tier}")
    tags.append(f"branch_{branch}")
    env = {k: v for k, v in env.items() if v is not None}
    return {
        "model": {"hf_config": hf},
        "server_args": sa,
        "env": env,
        "budget": budget,
        "draft_model": draft,
        "_resolved": True,
        "_family": family,
        "_tags": tags,
    }


def generate_cases(n: int, seed: int) -> list[dict]:
    """`n` resolved requests, every family represented, deterministic in `seed`.

    Model configs come from a pool of about n/6 (so SGLang's ModelConfig cache is reused)."""
    rng = random.Random(seed)
    families = list(FAMILIES)
    pool_size = max(len(families), n // 6)
    pool = []
    for i in range(pool_size):
        fam = families[i % len(families)]
        pool.append((fam, random_hf_config(rng, fam)))
    cases = []
    for i in range(n):
        fam, hf = pool[i % len(pool)] if i < len(pool) else rng.choice(pool)
        case = random_case(rng, fam, copy.deepcopy(hf))
        case["_id"] = f"s{seed}-{i}"
        cases.append(case)
    return cases
