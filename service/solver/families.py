"""config.json -> ModelLayout, one adapter per hybrid family SGLang 0.5.23 sizes through
its mamba path.

Each adapter reads exactly the keys SGLang's config class reads, with that class's
defaults for keys the file leaves out (a missing key means the class default in SGLang,
not an error), and builds state shapes the way `configs/mamba_utils.py` does:
  * Mamba2 / GDN: `Mamba2StateShape.create` (n_groups padded to TP when not divisible);
  * KDA: `KimiLinearStateShape.create` (conv stored as (K-1, 3*H*Dh/tp));
  * LFM2: conv-only Mamba2 shape (state_size 0).
Family detection follows the config class SGLang instantiates, i.e. the top-level
`model_type` (architectures[0] where the model_type is absent).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from mambasizer.schemas.request import MAX_CONTEXT, MAX_DIM, MAX_LAYERS
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.specs import KVSpec, StateSpec
from mambasizer.service.solver.weights.quant import check_ignore_lists

if TYPE_CHECKING:
    from mambasizer.schemas.request import Layout

# Context-length keys in SGLang's lookup order (utils/hf_transformers/common.py).
CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
DTYPES = {"float32", "bfloat16", "float16"}

# Architectures whose ModelConfig is multimodal (subset of SGLang's list that can be hybrid).
MULTIMODAL_ARCHS = {
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Lfm2VlForConditionalGeneration",
    "NemotronH_Nano_VL_V2",
}


def _divide(numerator: int, denominator: int, what: str) -> int:
    # SGLang's `divide()` asserts divisibility; a layout that fails it never starts.
    if denominator <= 0 or numerator % denominator != 0:
        raise PlanInputError(
            "server_args.tp_size",
            f"{what}={numerator} is not divisible by the TP size {denominator} "
            "(SGLang asserts this when it builds the state shapes); pick a TP size that divides it",
        )
    return numerator // denominator


def mamba2_state(
    tp: int,
    *,
    intermediate: int,
    n_groups: int,
    num_heads: int,
    head_dim: int,
    state_size: int,
    conv_kernel: int,
    conv_dtype: str,
    ssm_dtype: str,
) -> StateSpec:
    """Per-rank Mamba2 / GDN state (`Mamba2StateShape.create`)."""
    k_heads_per_tp = n_groups // tp if n_groups % tp == 0 else -(-n_groups // tp)
    if n_groups % tp != 0:
        # extra_groups_for_head_shards: groups are replicated up to tp (also when G > tp).
        n_groups = tp
    conv_dim = intermediate + 2 * n_groups * state_size
    conv = (_divide(conv_dim, tp, "conv_dim"), conv_kernel - 1)
    temporal = (_divide(num_heads, tp, "num_heads"), head_dim, state_size)
    return StateSpec(
        conv_shapes=(conv,),
        temporal=temporal,
        conv_dtype=conv_dtype,
        ssm_dtype=ssm_dtype,
        num_k_heads_per_tp=k_heads_per_tp,
        is_kda=False,
        conv_kernel=conv_kernel,
    )


def _mamba2_state_at(**dims: int) -> Callable[[int, str, str], StateSpec]:
    """A layout's `state_at` for a model whose Mamba2 / GDN dimensions are fixed by its
    config (intermediate, n_groups, num_heads, head_dim, state_size, conv_kernel)."""

    def state_at(tp: int, conv_dtype: str, ssm_dtype: str) -> StateSpec:
        return mamba2_state(tp, conv_dtype=conv_dtype, ssm_dtype=ssm_dtype, **dims)

    return state_at


def kda_state(tp: int, *, num_heads: int, head_dim: int, conv_kernel: int, conv_dtype: str, ssm_dtype: str) -> StateSpec:
    """Per-rank KDA state (`KimiLinearStateShape.create`, k heads = v heads)."""
    proj = num_heads * head_dim
    per_rank = _divide(proj, tp, "num_heads*head_dim")
    conv = (conv_kernel - 1, per_rank + 2 * per_rank)
    temporal = (_divide(num_heads, tp, "num_heads"), head_dim, head_dim)
    k_heads_per_tp = num_heads // tp if num_heads % tp == 0 else -(-num_heads // tp)
    return StateSpec(
        conv_shapes=(conv,),
        temporal=temporal,
        conv_dtype=conv_dtype,
        ssm_dtype=ssm_dtype,
        num_k_heads_per_tp=k_heads_per_tp,
        is_kda=True,
        conv_kernel=conv_kernel,
        disable_conv_window_dedup=True,
    )


class _Cfg:
    """A config dict read with a config class's defaults. Every value the adapters use goes
    through a typed, bounded accessor: a config.json is untrusted input, and one absurd
    value (1e9 layers, inf, a string) must be a clear error naming the key, never a hang
    or a crash."""

    def __init__(self, raw: dict, defaults: dict, path: str):
        self.raw = raw
        self.defaults = defaults
        self.path = path

    def get(self, key: str) -> Any:
        if key in self.raw and self.raw[key] is not None:
            return self.raw[key]
        if key in self.defaults:
            return self.defaults[key]
        return self.raw.get(key)

    def opt_int(self, key: str, minimum: int = 0, maximum: int | None = None) -> int | None:
        value = self.get(key)
        if value is None:
            return None
        hi = maximum or _limit(key)
        if type(value) is int and minimum <= value <= hi:  # the common case, without building the path
            return value
        return _check_int(value, f"{self.path}.{key}", minimum, hi)

    def need(self, key: str) -> int:
        value = self.opt_int(key)
        if value is None:
            raise PlanInputError(f"{self.path}.{key}", "is required by SGLang's config for this family but missing")
        return value

    def pos(self, key: str) -> int:
        value = self.need(key)
        if value <= 0:
            raise PlanInputError(f"{self.path}.{key}", f"must be > 0, got {value}")
        return value


@lru_cache(maxsize=512)  # a handful of config keys, read on every plan
def _limit(key: str) -> int:
    return MAX_LAYERS if "layers" in key or key.endswith("interval") else MAX_DIM


def _check_int(value: Any, path: str, minimum: int = 0, maximum: int = MAX_DIM) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanInputError(path, f"must be an integer, got {value!r}"[:200])
    if not minimum <= value <= maximum:
        raise PlanInputError(path, f"must be between {minimum} and {maximum}, got {value}")
    return value


# The config keys SGLang 0.5.23 reads as integers to size a model (its state shapes, KV
# heads, parameter shapes: here and in weights.py), wherever they sit in the config
# (top level, text_config, linear_attn_config, vision_config). Each must be a finite JSON
# integer within its bound: 4096.5 or 1e308 is refused naming the key, never rounded by
# an int() or overflowed in a float product. POSITIVE keys SGLang divides by or builds a
# tensor dimension from; the others may be 0 (no shared expert, no dense prefix, ...).
POSITIVE_CONFIG_INTS = frozenset({
    "hidden_size", "intermediate_size", "vocab_size", "num_attention_heads", "num_hidden_layers", "head_dim",
    "moe_intermediate_size", "num_experts", "n_routed_experts", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "mamba_num_heads", "mamba_head_dim",
    "mamba_n_heads", "mamba_d_head", "mamba_d_ssm", "mamba_expand", "mamba_d_conv", "mamba_n_groups", "n_groups",
    "num_heads", "short_conv_kernel_size", "conv_kernel", "conv_L_cache", "full_attention_interval",
    "num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num", "num_attention_groups",
    "max_position_embeddings", "max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
    "original_max_position_embeddings", "mamba_chunk_size", "chunk_size", "moe_layer_freq", "block_multiple_of",
    "routed_expert_hidden_size", "vt_hidden_size", "vt_intermediate_size", "vt_num_hidden_layers", "depth",
    "patch_size", "temporal_patch_size", "spatial_merge_size", "in_channels", "out_hidden_size", "num_position_embeddings",
    "init_pos_emb_height", "init_pos_emb_width", "init_pos_emb_time",
})
NONNEGATIVE_CONFIG_INTS = frozenset({
    "num_shared_experts", "n_shared_experts", "num_local_experts", "first_k_dense_replace", "num_nextn_predict_layers",
    "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size",
    "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "moe_latent_size",
    "ssm_state_size", "mamba_d_state", "attn_res_block_size", "qkv_hidden_size",
})
# String values a config class accepts for one of those keys.
_CONFIG_INT_WORDS = {"mamba_d_head": frozenset({"auto"})}
# Sub-configs another reader owns (the quantization schemes: weights.py validates them).
_NOT_SIZING_SUBCONFIGS = frozenset({"quantization_config", "quantization", "compression_config"})
_CONTEXT_KEYS = frozenset({*CONTEXT_LENGTH_KEYS, "original_max_position_embeddings"})


def check_config_integers(cfg: dict, path: str, depth: int = 0) -> None:
    """Every integer key SGLang sizes from (POSITIVE_CONFIG_INTS / NONNEGATIVE_CONFIG_INTS),
    in `cfg` and its sub-configs, is a finite integer within its bound; other values (floats,
    strings, Infinity: `time_step_limit: [0.0, Infinity]` in Nemotron-H) are left to the
    readers that use them. PlanInputError naming `<path>.<key>` otherwise."""
    for key, value in cfg.items():
        if isinstance(value, dict):
            if depth < 4 and key not in _NOT_SIZING_SUBCONFIGS:
                check_config_integers(value, f"{path}.{key}", depth + 1)
            continue
        positive = key in POSITIVE_CONFIG_INTS
        if value is None or not (positive or key in NONNEGATIVE_CONFIG_INTS):
            continue
        if type(value) is int and (value >= 1 if positive else value >= 0) and value <= _config_int_limit(key):
            continue  # the common case, without building the path
        if isinstance(value, str) and value in _CONFIG_INT_WORDS.get(key, ()):
            continue
        where = f"{path}.{key}"
        if isinstance(value, float) and not math.isfinite(value):
            raise PlanInputError(where, f"must be a finite integer, got {value}: SGLang sizes the model from it")
        if isinstance(value, bool) or not isinstance(value, int):
            raise PlanInputError(where, f"must be an integer (SGLang sizes the model from it), got {value!r}"[:200])
        _check_int(value, where, 1 if positive else 0, _config_int_limit(key))


def _config_int_limit(key: str) -> int:
    return MAX_CONTEXT if key in _CONTEXT_KEYS else _limit(key)


def _int_list(value: Any, path: str, maximum: int = MAX_LAYERS) -> list[int]:
    if not isinstance(value, list) or len(value) > maximum:
        raise PlanInputError(path, f"must be a list of at most {maximum} layer numbers")
    # The common case (all valid) in one pass; an element's own path only for the error.
    if all(type(v) is int and 0 <= v <= maximum for v in value):
        return value
    return [_check_int(v, f"{path}[{i}]", 0, maximum) for i, v in enumerate(value)]


def _str_list(value: Any, path: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_LAYERS or not all(isinstance(v, str) for v in value):
        raise PlanInputError(path, f"must be a list of at most {MAX_LAYERS} layer-type strings")
    return value


def _context_length(cfg: _Cfg) -> int:
    rope = cfg.get("rope_scaling")
    factor: Any = 1
    if rope:
        if not isinstance(rope, dict):
            raise PlanInputError(f"{cfg.path}.rope_scaling", "must be an object")
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1024:
            raise PlanInputError(f"{cfg.path}.rope_scaling.factor", f"must be a number in (0, 1024], got {factor!r}"[:200])
    for key in CONTEXT_LENGTH_KEYS:
        value = cfg.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= MAX_CONTEXT:
                raise PlanInputError(f"{cfg.path}.{key}", f"must be a number between 1 and {MAX_CONTEXT}, got {value!r}"[:200])
            context = int(factor * value)
            if not 1 <= context <= MAX_CONTEXT:
                raise PlanInputError(f"{cfg.path}.{key}", f"with the rope scaling factor gives a context length of {context}, outside [1, {MAX_CONTEXT}]")
            return context
    return 2048


def _config_ssm_dtype(cfg: _Cfg, wrapper: dict | None) -> str | None:
    """`mamba2_state_dtype(config)`: text_config's mamba_ssm_dtype wins over the top level.
    An invalid value is ignored (SGLang logs a warning and keeps float32)."""
    value = None
    if wrapper is not None and isinstance(wrapper.get("text_config"), dict) and "mamba_ssm_dtype" in wrapper["text_config"]:
        value = wrapper["text_config"]["mamba_ssm_dtype"]
    elif "mamba_ssm_dtype" in cfg.raw:
        value = cfg.raw["mamba_ssm_dtype"]
    return value if isinstance(value, str) and value in DTYPES else None


def _model_dtype(raw: dict, wrapper: dict | None) -> str:
    value = raw.get("dtype") or raw.get("torch_dtype")
    if value is None and wrapper is not None:
        value = wrapper.get("dtype") or wrapper.get("torch_dtype")
    if not isinstance(value, str):
        value = None
    # kv_cache_dtype=auto uses the model dtype; float32 (or none) is downcast to float16.
    return value if value in ("bfloat16", "float16") else "float16"


def _mha(cfg: _Cfg, *, kv_default: int | None = None) -> KVSpec:
    heads = None
    for key in ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups"):
        heads = cfg.opt_int(key, minimum=1)
        if heads is not None:
            break
    if heads is None:
        heads = kv_default if kv_default is not None else cfg.opt_int("num_attention_heads", minimum=1)
    if heads is None:
        raise PlanInputError(f"{cfg.path}.num_key_value_heads", "is missing and there is no num_attention_heads to fall back on")
    head_dim = cfg.opt_int("head_dim", minimum=1)
    if head_dim is None:
        head_dim = cfg.pos("hidden_size") // cfg.pos("num_attention_heads")
        if head_dim <= 0:
            raise PlanInputError(f"{cfg.path}.hidden_size", "hidden_size // num_attention_heads must be >= 1 (the derived head_dim)")
    v_head_dim = cfg.opt_int("v_head_dim") or head_dim
    return KVSpec(kind="mha", total_kv_heads=heads, head_dim=head_dim, v_head_dim=v_head_dim)


@dataclass(frozen=True)
class Family:
    name: str
    model_types: tuple[str, ...]
    label: str
    # (text config, wrapper config or None, field path, architecture) -> ModelLayout fields but
    # name and is_multimodal, which layout_from_hf_config decides.
    build: Callable[[dict, dict | None, str, str], dict]


# --------------------------------------------------------------------------- Qwen3-Next / Qwen3.5 (GDN)

_QWEN3_NEXT_DEFAULTS = dict(
    hidden_size=2048, num_hidden_layers=48, num_attention_heads=16, num_key_value_heads=2,
    max_position_embeddings=32768, head_dim=256, linear_conv_kernel_dim=4, linear_key_head_dim=128,
    linear_value_head_dim=128, linear_num_key_heads=16, linear_num_value_heads=32,
)


def _qwen_gdn(raw: dict, wrapper: dict | None, path: str, arch: str) -> dict:
    cfg = _Cfg(raw, _QWEN3_NEXT_DEFAULTS, path)
    is_qwen3_5 = wrapper is not None or str(raw.get("model_type", "")).startswith("qwen3_5")
    if is_qwen3_5 and raw.get("rope_scaling") is None and raw.get("rope_parameters") is not None:
        # Qwen3_5TextConfig aliases rope_parameters to rope_scaling (read by the context length).
        cfg = _Cfg({**raw, "rope_scaling": raw["rope_parameters"]}, _QWEN3_NEXT_DEFAULTS, path)
    n = cfg.pos("num_hidden_layers")
    interval = cfg.pos("full_attention_interval")
    # Every interval-th layer is full attention ((i + 1) % interval == 0), the rest linear.
    full = tuple(range(interval - 1, n, interval))
    linear = tuple([i for i in range(n) if i % interval != interval - 1])
    kh, vh = cfg.pos("linear_num_key_heads"), cfg.pos("linear_num_value_heads")
    kd, vd, ck = cfg.pos("linear_key_head_dim"), cfg.pos("linear_value_head_dim"), cfg.pos("linear_conv_kernel_dim")

    state_at = _mamba2_state_at(intermediate=vd * vh, n_groups=kh, num_heads=vh, head_dim=vd, state_size=kd, conv_kernel=ck)

    return dict(
        family="qwen3_next" if raw.get("model_type") == "qwen3_next" else "qwen3_5",
        architecture=arch, num_hidden_layers=n, mamba_layer_ids=linear, full_attention_layer_ids=full,
        kv=_mha(cfg), derived_context_len=_context_length(cfg), model_dtype=_model_dtype(raw, wrapper),
        linear_kind="gdn", state_at=state_at, state_tp="linear_attn_tp",
        config_ssm_dtype=_config_ssm_dtype(cfg, wrapper),
        # Qwen configs carry no num_nextn_predict_layers (SIZING_SPEC §8.5).
        num_nextn_predict_layers=cfg.opt_int("num_nextn_predict_layers") or 0,
        pp_supported=raw.get("model_type") != "qwen3_next",
        hf_text_config=raw, hf_config=wrapper or raw,
    )


# --------------------------------------------------------------------------- Kimi-Linear / Kimi-K3 (KDA, MLA)

_KIMI_DEFAULTS = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, max_position_embeddings=4096)


def _kimi(raw: dict, wrapper: dict | None, path: str, arch: str) -> dict:
    cfg = _Cfg(raw, _KIMI_DEFAULTS, path)
    lac = raw.get("linear_attn_config")
    if not isinstance(lac, dict):
        raise PlanInputError(f"{path}.linear_attn_config", "is required for a Kimi-Linear model (kda_layers, full_attn_layers, num_heads, head_dim, short_conv_kernel_size)")
    lcfg = _Cfg(lac, {"short_conv_kernel_size": None}, f"{path}.linear_attn_config")
    if lac.get("kda_layers") is None or lac.get("full_attn_layers") is None:
        raise PlanInputError(f"{path}.linear_attn_config.kda_layers", "kda_layers and full_attn_layers must both be lists (1-based layer numbers)")
    kda_layers = _int_list(lac["kda_layers"], f"{path}.linear_attn_config.kda_layers")
    n = cfg.pos("num_hidden_layers")
    kda_set = set(kda_layers)
    # kda_layers are 1-based; every layer that is not KDA is full (MLA) attention.
    linear = tuple([i for i in range(n) if (i + 1) in kda_set])
    full = tuple([i for i in range(n) if (i + 1) not in kda_set])
    heads, hd, ck = lcfg.pos("num_heads"), lcfg.pos("head_dim"), lcfg.pos("short_conv_kernel_size")
    rank = cfg.opt_int("kv_lora_rank", minimum=1)
    rope = cfg.opt_int("qk_rope_head_dim")
    if rank is None or rope is None:
        raise PlanInputError(f"{path}.kv_lora_rank", "Kimi-Linear's full-attention layers are MLA: kv_lora_rank and qk_rope_head_dim are required")

    def state_at(tp: int, conv_dtype: str, ssm_dtype: str) -> StateSpec:
        return kda_state(tp, num_heads=heads, head_dim=hd, conv_kernel=ck, conv_dtype=conv_dtype, ssm_dtype=ssm_dtype)

    return dict(
        family="kimi_linear", architecture=arch, num_hidden_layers=n,
        mamba_layer_ids=linear, full_attention_layer_ids=full,
        kv=KVSpec(kind="mla", kv_lora_rank=int(rank), qk_rope_head_dim=int(rope)),
        derived_context_len=_context_length(cfg), model_dtype=_model_dtype(raw, wrapper),
        linear_kind="kda", state_at=state_at, state_tp="attn_tp",
        config_ssm_dtype=None,  # KimiLinearCacheParams never passes its config
        num_nextn_predict_layers=cfg.opt_int("num_nextn_predict_layers") or 0,
        hf_text_config=raw, hf_config=wrapper or raw,
    )


# --------------------------------------------------------------------------- Nemotron-H (Mamba2)

_NEMOTRON_DEFAULTS = dict(
    hidden_size=4096, num_attention_heads=32, head_dim=128, num_key_value_heads=8,
    max_position_embeddings=4096, ssm_state_size=128, mamba_num_heads=128, mamba_head_dim=64,
    hybrid_override_pattern="M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
)
_NEMOTRON_BLOCK = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


def _nemotron_h(raw: dict, wrapper: dict | None, path: str, arch: str) -> dict:
    cfg = _Cfg(raw, _NEMOTRON_DEFAULTS, path)
    blocks = raw.get("layers_block_type")
    if blocks is None:
        pattern = cfg.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or len(pattern) > MAX_LAYERS or not set(pattern) <= _NEMOTRON_BLOCK.keys():
            raise PlanInputError(f"{path}.hybrid_override_pattern", "must only contain the characters 'M', '*', '-' or 'E'")
        blocks = [_NEMOTRON_BLOCK[c] for c in pattern]
    blocks = _str_list(blocks, f"{path}.layers_block_type")
    n = len(blocks)  # num_hidden_layers is derived from the block list
    linear = tuple([i for i, b in enumerate(blocks) if b == "mamba"])
    full = tuple([i for i, b in enumerate(blocks) if b == "attention"])
    heads, hd, ss = cfg.pos("mamba_num_heads"), cfg.pos("mamba_head_dim"), cfg.need("ssm_state_size")
    groups = cfg.pos("n_groups")
    # config.json's conv_kernel overrides the class's mamba_d_conv (default 4).
    ck = cfg.opt_int("conv_kernel", minimum=1) or cfg.opt_int("mamba_d_conv", minimum=1) or 4

    state_at = _mamba2_state_at(intermediate=heads * hd, n_groups=groups, num_heads=heads, head_dim=hd, state_size=ss, conv_kernel=ck)

    return dict(
        family="nemotron_h", architecture=arch, num_hidden_layers=n,
        mamba_layer_ids=linear, full_attention_layer_ids=full, kv=_mha(cfg),
        derived_context_len=_context_length(cfg), model_dtype=_model_dtype(raw, wrapper),
        linear_kind="mamba2", state_at=state_at, config_ssm_dtype=_config_ssm_dtype(cfg, wrapper),
        num_nextn_predict_layers=cfg.opt_int("num_nextn_predict_layers") or 0,
        hf_text_config=raw, hf_config=wrapper or raw,
    )


# --------------------------------------------------------------------------- Falcon-H1 (parallel hybrid)

_FALCON_DEFAULTS = dict(
    hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
    max_position_embeddings=8192, mamba_d_ssm=1024, mamba_n_heads=128, mamba_n_groups=1,
    mamba_d_state=256, mamba_d_conv=4, mamba_expand=2,
)


def _falcon_h1(raw: dict, wrapper: dict | None, path: str, arch: str) -> dict:
    cfg = _Cfg(raw, _FALCON_DEFAULTS, path)
    n = cfg.pos("num_hidden_layers")
    # mamba_d_ssm defaults to 1024 in the config class; only an explicit null uses expand*hidden.
    d_ssm = _check_int(raw["mamba_d_ssm"], f"{path}.mamba_d_ssm", 1) if raw.get("mamba_d_ssm") is not None else (None if "mamba_d_ssm" in raw else 1024)
    intermediate = cfg.pos("mamba_expand") * cfg.pos("hidden_size") if d_ssm is None else d_ssm
    heads = cfg.pos("mamba_n_heads")
    if intermediate % heads != 0:
        raise PlanInputError(f"{path}.mamba_n_heads", "must divide mamba_d_ssm (or mamba_expand * hidden_size)")
    d_head = raw.get("mamba_d_head", "auto")
    if d_head == "auto" or d_head is None:
        d_head = intermediate // heads
    d_head = _check_int(d_head, f"{path}.mamba_d_head", 1)
    if d_head * heads != intermediate:
        raise PlanInputError(f"{path}.mamba_d_head", "mamba_d_head * mamba_n_heads must equal the mamba intermediate size")
    groups, ss, ck = cfg.pos("mamba_n_groups"), cfg.pos("mamba_d_state"), cfg.pos("mamba_d_conv")
    # An explicit null num_key_value_heads means one KV head per attention head.
    kv_heads = raw["num_key_value_heads"] if "num_key_value_heads" in raw else 8
    if kv_heads is None:
        kv_heads = cfg.pos("num_attention_heads")
    kv_heads = _check_int(kv_heads, f"{path}.num_key_value_heads", 1)
    kv = _mha(_Cfg({**raw, "num_key_value_heads": kv_heads}, _FALCON_DEFAULTS, path))

    state_at = _mamba2_state_at(intermediate=intermediate, n_groups=groups, num_heads=heads, head_dim=d_head, state_size=ss, conv_kernel=ck)

    every = tuple(range(n))  # every layer has both an SSM and attention
    return dict(
        family="falcon_h1", architecture=arch, num_hidden_layers=n,
        mamba_layer_ids=every, full_attention_layer_ids=every, kv=kv,
        derived_context_len=_context_length(cfg), model_dtype=_model_dtype(raw, wrapper),
        linear_kind="mamba2", state_at=state_at, config_ssm_dtype=_config_ssm_dtype(cfg, wrapper),
        pp_supported=False, hf_text_config=raw, hf_config=wrapper or raw,
    )


# --------------------------------------------------------------------------- Granite-4.0-H

_GRANITE_DEFAULTS = dict(
    hidden_size=2048, num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=8,
    max_position_embeddings=131072, mamba_d_state=128, mamba_d_conv=4, mamba_expand=2,
    mamba_d_head=64, mamba_n_heads=64, mamba_n_groups=1,
)
_GRANITE_ALIASES = {"linear_attention": "mamba", "full_attention": "attention"}


def _granite(raw: dict, wrapper: dict | None, path: str, arch: str) -> dict:
    cfg = _Cfg(raw, _GRANITE_DEFAULTS, path)
    n = cfg.pos("num_hidden_layers")
    types = raw.get("layer_types")
    if types is None:
        types = ["attention" if (i + 1) % 6 == 0 else "mamba" for i in range(n)]
    types = _str_list(types, f"{path}.layer_types")
    if len(types) != n:
        raise PlanInputError(f"{path}.layer_types", f"must be a list of length num_hidden_layers ({n})")
    types = [_GRANITE_ALIASES.get(t, t) for t in types]
    if any(t not in ("mamba", "attention") for t in types):
        raise PlanInputError(f"{path}.layer_types", "each element must be 'mamba' or 'attention'")
    linear = tuple([i for i, t in enumerate(types) if t == "mamba"])
    full = tuple([i for i, t in enumerate(types) if t == "attention"])
    if not linear:
        raise PlanInputError(f"{path}.layer_types", "has no 'mamba' layer: SGLang sizes this model as a plain transformer, not through the hybrid path")
    intermediate = cfg.pos("mamba_expand") * cfg.pos("hidden_size")
    heads, d_head = cfg.pos("mamba_n_heads"), cfg.pos("mamba_d_head")
    if intermediate % heads != 0 or d_head * heads != intermediate:
        raise PlanInputError(f"{path}.mamba_d_head", "mamba_d_head * mamba_n_heads must equal mamba_expand * hidden_size")
    groups, ss, ck = cfg.pos("mamba_n_groups"), cfg.pos("mamba_d_state"), cfg.pos("mamba_d_conv")

    state_at = _mamba2_state_at(intermediate=intermediate, n_groups=groups, num_heads=heads, head_dim=d_head, state_size=ss, conv_kernel=ck)

    return dict(
        family="granitemoehybrid", architecture=arch, num_hidden_layers=n,
        mamba_layer_ids=linear, full_attention_layer_ids=full, kv=_mha(cfg),
        derived_context_len=_context_length(cfg), model_dtype=_model_dtype(raw, wrapper),
        linear_kind="mamba2", state_at=state_at,
        config_ssm_dtype=None,  # GraniteMoeHybrid never passes its config to mamba2_state_dtype
        hf_text_config=raw, hf_config=wrapper or raw,
    )


# --------------------------------------------------------------------------- LFM2 (ShortConv)

_LFM2_DEFAULTS = dict(
    hidden_size=2560, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
    max_position_embeddings=128000, conv_L_cache=3,
)


def _lfm2(raw: dict, wrapper: dict | None, path: str, arch: str) -> dict:
    cfg = _Cfg(raw, _LFM2_DEFAULTS, path)
    n = cfg.pos("num_hidden_layers")
    types = raw.get("layer_types")
    if types is None:
        full_idxs = raw.get("full_attn_idxs")
        full_set = set(range(n)) if full_idxs is None else set(_int_list(full_idxs, f"{path}.full_attn_idxs"))
        types = ["full_attention" if i in full_set else "conv" for i in range(n)]
    types = _str_list(types, f"{path}.layer_types")
    linear = tuple([i for i, t in enumerate(types) if t in ("conv", "short_conv")])
    full = tuple([i for i, t in enumerate(types) if t == "full_attention"])
    if not linear:
        raise PlanInputError(f"{path}.layer_types", "has no conv layer: SGLang does not size it through the hybrid path")
    hidden, ck = cfg.pos("hidden_size"), cfg.pos("conv_L_cache")
    honours = raw.get("model_type", "lfm2") == "lfm2"

    def state_at(tp: int, conv_dtype: str, ssm_dtype: str) -> StateSpec:
        # num_heads=tp and state_size=0: conv state only, temporal state is empty.
        return mamba2_state(
            tp, intermediate=hidden, n_groups=1, num_heads=tp, head_dim=hidden, state_size=0,
            conv_kernel=ck, conv_dtype=conv_dtype, ssm_dtype=ssm_dtype,
        )

    return dict(
        family="lfm2", architecture=arch, num_hidden_layers=n,
        mamba_layer_ids=linear, full_attention_layer_ids=full, kv=_mha(cfg),
        derived_context_len=_context_length(cfg), model_dtype=_model_dtype(raw, wrapper),
        linear_kind="mamba2", state_at=state_at,
        config_ssm_dtype=_config_ssm_dtype(cfg, wrapper) if honours else None,
        pp_supported=False, hf_text_config=raw, hf_config=wrapper or raw,
    )


# --------------------------------------------------------------------------- registry

FAMILIES: tuple[Family, ...] = (
    Family("qwen3_next", ("qwen3_next",), "Qwen3-Next (GDN)", _qwen_gdn),
    Family("qwen3_5", ("qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"), "Qwen3.5 / 3.6 / 3.8 (GDN)", _qwen_gdn),
    Family("kimi_linear", ("kimi_linear", "kimi_k3"), "Kimi-Linear / Kimi-K3 (KDA, MLA KV)", _kimi),
    Family("nemotron_h", ("nemotron_h",), "Nemotron-H / Nemotron-Nano-v2 / Nemotron-3 (Mamba2)", _nemotron_h),
    Family("falcon_h1", ("falcon_h1",), "Falcon-H1 (Mamba2, every layer hybrid)", _falcon_h1),
    Family("granitemoehybrid", ("granitemoehybrid",), "Granite-4.0-H (Mamba2)", _granite),
    Family("lfm2", ("lfm2", "lfm2_moe"), "LFM2 / LFM2-MoE (ShortConv)", _lfm2),
)
_BY_MODEL_TYPE = {mt: fam for fam in FAMILIES for mt in fam.model_types}
_ARCH_TO_MODEL_TYPE = {
    "Qwen3NextForCausalLM": "qwen3_next",
    "Qwen3_5ForConditionalGeneration": "qwen3_5",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Qwen3_5ForCausalLM": "qwen3_5_text",
    "Qwen3_5MoeForCausalLM": "qwen3_5_moe_text",
    "KimiLinearForCausalLM": "kimi_linear",
    "KimiK3ForConditionalGeneration": "kimi_k3",
    "NemotronHForCausalLM": "nemotron_h",
    "FalconH1ForCausalLM": "falcon_h1",
    "GraniteMoeHybridForCausalLM": "granitemoehybrid",
    "Lfm2ForCausalLM": "lfm2",
    "Lfm2MoeForCausalLM": "lfm2_moe",
}
# Model classes that assert pp_size == 1 in SGLang 0.5.23 (the adapters set pp_supported so).
_PP_UNSUPPORTED_ARCHS = frozenset({"Qwen3NextForCausalLM", "FalconH1ForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM"})
# Wrappers whose layout lives in a sub-config SGLang reads as hf_text_config.
_TEXT_CONFIG_WRAPPERS = {"qwen3_5", "qwen3_5_moe", "kimi_k3"}


def supported_families() -> list[str]:
    return [f"{f.label} [model_type: {', '.join(f.model_types)}]" for f in FAMILIES]


# The multimodal wrappers of MULTIMODAL_ARCHS that no model_type above names, by family.
_WRAPPER_FAMILY = {"Lfm2VlForConditionalGeneration": "lfm2", "NemotronH_Nano_VL_V2": "nemotron_h"}


def _family_architectures(family: Family) -> list[str]:
    """The model classes SGLang 0.5.23 loads a config of this family as."""
    own = [a for a, mt in _ARCH_TO_MODEL_TYPE.items() if _BY_MODEL_TYPE[mt] is family]
    return sorted(own + [a for a, name in _WRAPPER_FAMILY.items() if name == family.name])


def _check_architecture(arch: str, family: Family, path: str) -> None:
    """architectures[0] is the model class SGLang 0.5.23 loads, and its launch rules (radix
    strategy, extra_buffer, PP support) are looked up by that name. A name it has no class
    for sends it to its Transformers fallback, which it does not size through the mamba
    path; a class of another family would be built from a config it cannot read. Either
    way the model does not start as this family, so the name must be one of the family's."""
    known = _family_architectures(family)
    if arch in known:
        return
    other = _BY_MODEL_TYPE.get(_ARCH_TO_MODEL_TYPE.get(arch, ""))
    why = (f"is the {other.label} class, not the model_type's {family.label}" if other is not None else
           "is not a model class SGLang 0.5.23 sizes through its mamba path (it would load it through its "
           "Transformers fallback)")
    raise PlanInputError(f"{path}.architectures", f"{arch[:100]!r} {why}; for this model_type use one of {', '.join(known)}", allowed=known)


def layout_from_hf_config(hf_config: dict, name: str = "", path: str = "model.hf_config") -> ModelLayout:
    if not isinstance(hf_config, dict):
        raise PlanInputError(path, "must be a JSON object (a model's config.json)")
    check_config_integers(hf_config, path)
    archs = hf_config.get("architectures")
    if archs is not None and (not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)):
        raise PlanInputError(f"{path}.architectures", 'must be a list of model class names, as in config.json (e.g. ["NemotronHForCausalLM"])')
    arch = archs[0] if archs else ""
    model_type = hf_config.get("model_type") or _ARCH_TO_MODEL_TYPE.get(arch)
    family = _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if family is None or not isinstance(model_type, str):  # a family implies a str model_type; said for mypy
        got = f"model_type={model_type!r}" if model_type else f"architectures={archs!r}"
        raise PlanInputError(
            f"{path}.model_type",
            f"{got} is not a hybrid family SGLang 0.5.23 sizes through its mamba path; supported: "
            + "; ".join(supported_families()),
            allowed=sorted(_BY_MODEL_TYPE),
        )
    if arch:
        _check_architecture(arch, family, path)
    wrapper = None
    raw = hf_config
    top_path = path
    if model_type in _TEXT_CONFIG_WRAPPERS:
        text = hf_config.get("text_config")
        if not isinstance(text, dict):
            raise PlanInputError(f"{path}.text_config", f"model_type {model_type!r} keeps its layout in text_config, which is missing")
        wrapper, raw, path = hf_config, text, f"{path}.text_config"
    if not arch:
        arch = next((a for a, mt in _ARCH_TO_MODEL_TYPE.items() if mt == model_type), model_type)
    fields = family.build(raw, wrapper, path, arch)
    # A client's ignore lists are bounded and compiled (linear-time matching) before any route
    # prices a layout with them: an entry SGLang refuses is a 422 naming it.
    check_ignore_lists(hf_config, raw, top_path)
    # hf_config is not hf_text_config (a text sub-config) makes SGLang treat the model as multimodal.
    multimodal = arch in MULTIMODAL_ARCHS or wrapper is not None
    return ModelLayout(name=name or arch, is_multimodal=multimodal, **fields)


def layout_from_explicit(lay: Layout) -> ModelLayout:
    """An explicit layout (schemas.Layout): shapes are already per TP rank."""
    shapes = lay.state

    def state_at(tp: int, conv_dtype: str, ssm_dtype: str) -> StateSpec:
        # Explicit shapes are already per TP rank.
        return StateSpec(
            conv_shapes=tuple((a, b) for a, b in shapes.conv_shapes),
            temporal=(*shapes.temporal_shape,),
            conv_dtype=conv_dtype,
            ssm_dtype=ssm_dtype,
            num_k_heads_per_tp=shapes.num_k_heads_per_tp or 1,
            is_kda=lay.linear_kind == "kda",
            conv_kernel=(shapes.conv_shapes[0][0] + 1) if lay.linear_kind == "kda" else shapes.conv_shapes[0][1] + 1,
            disable_conv_window_dedup=lay.linear_kind == "kda",
        )

    if lay.kv.type == "mla":
        kvspec = KVSpec(kind="mla", kv_lora_rank=lay.kv.kv_lora_rank, qk_rope_head_dim=lay.kv.qk_rope_head_dim)
    else:
        kvspec = KVSpec(kind="mha", total_kv_heads=lay.kv.num_kv_heads, head_dim=lay.kv.head_dim, v_head_dim=lay.kv.v_head_dim or lay.kv.head_dim)
    arch = lay.resolved_architecture
    family = _BY_MODEL_TYPE[_ARCH_TO_MODEL_TYPE[arch]].name
    return ModelLayout(
        # Resolved as a real architecture (its family's launch rules: PP support, chunk size,
        # LFM2's backend check), so the radix-cache strategy step runs as SGLang runs it.
        name="explicit-layout", family=family, architecture=arch,
        pp_supported=arch not in _PP_UNSUPPORTED_ARCHS,
        num_hidden_layers=lay.num_hidden_layers,
        mamba_layer_ids=tuple(sorted(lay.mamba_layer_ids)),
        full_attention_layer_ids=tuple(sorted(lay.full_attention_layer_ids)),
        kv=kvspec, derived_context_len=lay.context_length, model_dtype=lay.dtype if lay.dtype != "float32" else "float16",
        linear_kind=lay.linear_kind, state_at=state_at, config_ssm_dtype=lay.mamba_ssm_dtype,
        num_nextn_predict_layers=lay.num_nextn_predict_layers, is_multimodal=lay.is_multimodal,
        # The only config key a layout states that resolution reads (launch.mamba_chunk_size).
        hf_config={} if lay.mamba_chunk_size is None else {"mamba_chunk_size": lay.mamba_chunk_size},
    )

