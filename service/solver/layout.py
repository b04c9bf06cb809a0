"""ModelLayout: what the sizing pipeline needs to know about a model, whatever form it
came in (HF config.json, preset, explicit layout). Produced by `families.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Optional

from service.solver.specs import KVSpec, StateSpec

LinearKind = Literal["mamba2", "gdn", "kda"]
# Which TP group shards the state: SGLang's configs use attn_tp for most families,
# linear_attn_tp (== attn_tp unless CP/TP group sharing) for Qwen3-Next / 3.5.
StateTP = Literal["attn_tp", "linear_attn_tp", "tp"]


@dataclass(frozen=True)
class ModelLayout:
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
    state_at: Callable[[int, str, str], StateSpec] = field(repr=False, compare=False)
    state_tp: StateTP = "attn_tp"
    config_ssm_dtype: Optional[str] = None  # honoured only where the family passes its config
    num_nextn_predict_layers: int = 0
    is_multimodal: bool = False
    pp_supported: bool = True
    # Raw text config, for the launch-flag resolution rules that read more keys.
    hf_text_config: dict = field(default_factory=dict, repr=False, compare=False)
    hf_config: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Stage slicing (stages._in_range) relies on ascending, duplicate-free id tuples.
        for name in ("mamba_layer_ids", "full_attention_layer_ids"):
            object.__setattr__(self, name, tuple(sorted(set(getattr(self, name)))))

