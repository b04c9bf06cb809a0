"""Falcon-H1 (models/falcon_h1.py)."""

from __future__ import annotations

from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.stages import StageRange
from mambasizer.service.solver.weights.blocks import gated_mlp, mamba2_mixer, rope_cache
from mambasizer.service.solver.weights.common import (
    class_config,
    get_or,
    stage_layers,
    vocab_size,
)
from mambasizer.service.solver.weights.rank import Rank


def walk_falcon(r: Rank, lay: ModelLayout, stage: StageRange, first: bool, last: bool, pp: int, nextn: int):
    c = class_config(lay)
    h = int(get_or(c, "hidden_size", 4096))
    vocab = vocab_size(lay)
    heads = int(get_or(c, "num_attention_heads", 32))
    kv = int(get_or(c, "num_key_value_heads", heads))
    hd = int(get_or(c, "head_dim", h // heads))
    st = lay.state_at(1, "float32", "float32")
    m_heads = int(get_or(c, "mamba_n_heads", 128))
    m_inter = st.temporal[0] * st.temporal[1]
    m_hd = m_inter // m_heads
    groups = int(get_or(c, "mamba_n_groups", 1))
    state = int(get_or(c, "mamba_d_state", 256))
    inter = int(c["intermediate_size"])
    tied = bool(get_or(c, "tie_word_embeddings", False))
    # FalconH1ForCausalLM calls lm_head.float(): the head (the embedding itself when tied) is float32.
    r.vocab("embed", vocab, h, "model.embed_tokens", dtype_bytes=4 if tied else None)
    for i in stage_layers(stage):
        p = f"model.layers.{i}"
        r.qkv("attention", h, hd, heads, kv, f"{p}.self_attn.qkv_proj", [f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj"])
        r.row("attention", heads * hd, h, f"{p}.self_attn.o_proj")
        mamba2_mixer(r, h=h, heads=m_heads, head_dim=m_hd, groups=groups, state=state, conv_k=int(get_or(c, "mamba_d_conv", 4)),
                      conv_bias=bool(get_or(c, "mamba_conv_bias", True)), proj_bias=bool(get_or(c, "mamba_proj_bias", False)),
                      prefix=f"{p}.mamba", use_norm=bool(get_or(c, "mamba_rms_norm", False)), quant=False)
        gated_mlp(r, h, inter, f"{p}.feed_forward")
        r.params("norms", 2 * h + 2 * hd)  # input / pre_ff layernorms, q_norm, k_norm
        g_eff = groups if groups % r.tp == 0 else r.tp
        r.params("mamba", (2 * m_inter + 2 * g_eff * state + m_heads) // r.tp)  # mup_vector buffer
    rope_cache(r, c, hd)
    r.params("norms", h)
    if not tied:
        r.vocab("lm_head", vocab, h, "lm_head", dtype_bytes=4)


