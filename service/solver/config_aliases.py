"""A config.json as the config class SGLang 0.5.23 builds from it sees it: the one place that
maps a file's key spellings to the attributes the model classes read.

Audited against the config classes each family loads with (SGLang's own configs/<family>.py,
and transformers==5.19.0's where SGLang extends one):
* LFM2 (`Lfm2Config(transformers.Lfm2Config)`): `__post_init__` takes `block_ff_dim` as
  intermediate_size and `tie_embedding` as tie_word_embeddings (LiquidAI's files use both);
* Qwen3-Next / Qwen3.5 / 3.6, Nemotron-H / Nemotron-3, Falcon-H1, Granite-4.0-H, Kimi-Linear,
  Kimi-K3: SGLang's own PretrainedConfig subclasses with no aliases for the keys the weights
  read (Nemotron-H's hybrid_override_pattern / layers_block_type and Qwen3.5's
  rope_parameters are read as such where they are used). Kimi-Linear's
  num_experts_per_tok -> num_experts_per_token alias does not reach the weights.
A key the file spells both ways keeps the class attribute's own spelling where the class
pops the alias only as a fallback (`kwargs.pop(alias, self.attr)`): the alias wins there,
as it does in the class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# family -> {alias in the file: the attribute the config class sets from it}
ALIASES: Mapping[str, Mapping[str, str]] = {
    "lfm2": {"block_ff_dim": "intermediate_size", "tie_embedding": "tie_word_embeddings"},
}


def as_config_class_sees(family: str, cfg: Mapping[str, Any]) -> dict:
    """`cfg` with each alias the family's config class takes moved onto its attribute."""
    out = dict(cfg)
    for alias, attr in ALIASES.get(family, {}).items():
        if alias in out:
            # Lfm2Config: `self.attr = kwargs.pop(alias, self.attr)`: the alias, when given, wins.
            out[attr] = out.pop(alias)
    return out
