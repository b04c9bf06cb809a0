"""Building blocks several families share: gated MLP, rotary cache, Mamba2 mixer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.common import (
    get_or,
)
from mambasizer.service.solver.weights.rank import Rank


def gated_mlp(r: Rank, h: int, inter: int, prefix: str, group: str = "mlp", bias=False):
    r.column(group, h, [inter, inter], f"{prefix}.gate_up_proj", [f"{prefix}.gate_proj", f"{prefix}.up_proj"], bias)
    r.row(group, inter, h, f"{prefix}.down_proj", bias)



def rope_cache(r: Rank, c: Mapping[str, Any], head_dim: int) -> None:
    """The attention layers' shared rotary cache (`get_rope`, one per distinct config and
    process): float32 on CUDA, (max_position [* YaRN factor], rotary_dim)."""
    rope = c.get("rope_scaling") or c.get("rope_parameters") or {}
    factor = c.get("partial_rotary_factor", rope.get("partial_rotary_factor", 1.0) if isinstance(rope, dict) else 1.0)
    rotary = int(head_dim * factor) if factor and factor < 1.0 else head_dim
    positions = int(get_or(c, "max_position_embeddings", 2048))
    kind = (rope.get("rope_type") or rope.get("type")) if isinstance(rope, dict) else None
    if kind == "yarn":
        positions = int(positions * float(rope.get("factor", 1.0)))
    r.add("rope_cache", positions * rotary * 4)
    if isinstance(rope, dict) and rope.get("mrope_section"):
        r.add("rope_cache", rotary // 2 * 8)  # MRotaryEmbedding.axis_map (int64 per rotary pair)


def mamba2_mixer(r: Rank, *, h: int, heads: int, head_dim: int, groups: int, state: int, conv_k: int,
                  conv_bias: bool, proj_bias: bool, prefix: str, use_norm: bool = True, quant: bool = True):
    inter = heads * head_dim
    if groups % r.tp == 0:
        gss = groups * state
        r.column("mamba", conv_k, [inter, gss, gss], f"{prefix}.conv1d", bias=conv_bias, quant=False)
        r.column("mamba", h, [inter, inter, gss, gss, heads], f"{prefix}.in_proj", bias=proj_bias, quant=quant)
    else:
        if groups != 1:
            raise PlanInputError("server_args.tp_size", f"mamba n_groups={groups} does not split over the TP size {r.tp} and is not 1 (SGLang asserts this)")
        conv_dim = inter + 2 * r.tp * state  # the one group is replicated to every rank
        r.column("mamba", conv_k, [conv_dim], f"{prefix}.conv1d", bias=conv_bias, quant=False)
        r.column("mamba", h, [inter + conv_dim + heads], f"{prefix}.in_proj", bias=proj_bias, quant=quant)
    hp = r._shard(heads, "mamba num_heads")
    r.params("mamba", hp, 4)  # A float32
    r.params("mamba", 2 * hp)  # D, dt_bias
    r.row("mamba", inter, h, f"{prefix}.out_proj", bias=proj_bias, quant=quant)
    if use_norm:
        r.params("mamba", inter // r.tp)


