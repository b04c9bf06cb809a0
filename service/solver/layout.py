"""ModelLayout: what the sizing pipeline needs to know about a model, whatever form it
came in (HF config.json, preset, explicit layout). Produced by `families.py`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from mambasizer.service.solver.specs import KVSpec, StateSpec

LinearKind = Literal["mamba2", "gdn", "kda"]
# Which TP group shards the state: SGLang's configs use attn_tp for most families,
# linear_attn_tp (== attn_tp unless CP/TP group sharing) for Qwen3-Next / 3.5.
StateTP = Literal["attn_tp", "linear_attn_tp", "tp"]
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class ModelLayout(NamedTuple):
    # Layer id tuples are ascending and duplicate-free (stages._in_range slices them): the
    # families.py adapters build them so and the explicit-layout schema rejects duplicates;
    # tests/solver/test_layout_ids.py checks every family.
    name: str
    family: str  # e.g. "qwen3_next", "kimi_linear", "nemotron_h"
    architecture: str  # hf_config.architectures[0]
    num_hidden_layers: int
    mamba_layer_ids: tuple[int, ...]
    full_attention_layer_ids: tuple[int, ...]
    kv: KVSpec
    derived_context_len: int
    model_dtype: str  # "bfloat16" / "float16" / "float32": what kv_cache_dtype=auto uses
    linear_kind: LinearKind
    # state_at(tp, conv_dtype, ssm_dtype) -> per-rank StateSpec (asserts divisibility like SGLang)
    state_at: Callable[[int, str, str], StateSpec]
    state_tp: StateTP = "attn_tp"
    config_ssm_dtype: str | None = None  # honoured only where the family passes its config
    num_nextn_predict_layers: int = 0
    is_multimodal: bool = False
    pp_supported: bool = True
    # Raw text config, for the launch-flag resolution rules that read more keys.
    hf_text_config: Mapping[str, Any] = _EMPTY
    hf_config: Mapping[str, Any] = _EMPTY
    # `--kv-cache-dtype auto` as this checkpoint resolves it (dtype, why), when computed once
    # for a layout kept for the process (a preset's); None: launch.py derives it per call.
    kv_auto: tuple[str, str] | None = None

    def __repr__(self) -> str:  # the raw configs and the closure are noise in a repr
        return f"ModelLayout(name={self.name!r}, family={self.family!r}, layers={self.num_hidden_layers})"
