"""What every part of the weights walk shares: the config classes' defaults, the config as
the class sees it, vocabulary padding, the per-stage result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from mambasizer.service.solver.config_aliases import as_config_class_sees
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange

# Lfm2Config), for configs that leave a key out. Qwen3.5's text configs inherit Qwen3-Next's.
_QWEN_DEFAULTS = {"hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 16, "num_key_value_heads": 2,
                  "max_position_embeddings": 32768, "tie_word_embeddings": False, "partial_rotary_factor": 0.25,
                  "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                  "linear_num_key_heads": 16, "linear_num_value_heads": 32, "moe_intermediate_size": 512,
                  "shared_expert_intermediate_size": 512}
CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen3_next": {**_QWEN_DEFAULTS, "num_experts": 512},
    "qwen3_5": _QWEN_DEFAULTS,
    "nemotron_h": {"tie_word_embeddings": False, "hidden_size": 4096, "intermediate_size": 21504, "num_attention_heads": 32,
                   "head_dim": 128, "num_key_value_heads": 8, "mlp_bias": False, "use_bias": False, "max_position_embeddings": 4096,
                   "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "use_conv_bias": True,
                   "n_routed_experts": 8, "n_shared_experts": 1, "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688},
    "falcon_h1": {"tie_word_embeddings": False, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "max_position_embeddings": 8192, "mamba_n_heads": 128, "mamba_n_groups": 1,
                  "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_conv_bias": True, "mamba_proj_bias": False},
    "kimi_linear": {"hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32, "tie_word_embeddings": False,
                    "num_shared_experts": 0, "first_k_dense_replace": 0, "moe_layer_freq": 1, "max_position_embeddings": 4096},
    "granitemoehybrid": {"tie_word_embeddings": True, "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
                         "num_key_value_heads": 8, "max_position_embeddings": 131072, "attention_bias": False,
                         "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_n_heads": 64, "mamba_n_groups": 1,
                         "mamba_conv_bias": True, "mamba_proj_bias": False, "num_local_experts": 0, "shared_intermediate_size": 8192},
    "lfm2": {"hidden_size": 2560, "intermediate_size": 12288, "num_attention_heads": 32, "num_key_value_heads": 8,
             "max_position_embeddings": 128000, "tie_word_embeddings": True, "conv_bias": False, "conv_L_cache": 3,
             "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": True},
}
# The config classes' vocab_size defaults (SGLang's configs/<family>.py; transformers' Lfm2Config).
VOCAB_DEFAULT = {"qwen3_next": 151936, "nemotron_h": 131072, "falcon_h1": 128000, "kimi_linear": 163840,
                  "granitemoehybrid": 100352, "lfm2": 65536}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
VOCAB_PADDING = 64  # vocab_parallel_embedding.DEFAULT_VOCAB_PADDING_SIZE


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, m: int) -> int:
    return cdiv(a, m) * m


def pad_vocab(vocab: int, tp: int) -> int:
    """`VocabParallelEmbedding`'s padded vocabulary (all ranks together)."""
    pad = VOCAB_PADDING
    if cdiv(vocab, pad) * pad % tp != 0:
        pad *= tp
    return cdiv(vocab, pad) * pad


class StageWeights(NamedTuple):
    """One PP stage's weights on its largest TP rank, by parameter group."""

    pp_rank: int
    total_bytes: int
    groups: tuple[tuple[str, int], ...]  # (group, bytes), e.g. ("embed", ...), ("experts", ...)



def stage_layers(stage: StageRange) -> range:
    return range(stage.start, stage.end)


def get_or(cfg: Mapping[str, Any], key: str, default: Any = None) -> Any:
    v = cfg.get(key)
    return default if v is None else v


def class_config(lay: ModelLayout) -> dict:
    """The text config as SGLang's config class sees it: the file's keys with their aliases
    resolved (config_aliases, the one place), over the class defaults."""
    return {**CLASS_DEFAULTS.get(lay.family, {}), **as_config_class_sees(lay.family, lay.hf_text_config)}





def vocab_size(lay: ModelLayout) -> int:
    v = lay.hf_text_config.get("vocab_size")
    if v is None:
        v = VOCAB_DEFAULT.get(lay.family)
    if v is None:
        raise KeyError("vocab_size")
    return int(v)

