"""The tensor inventory against SGLang's model classes: what the checkpoint stores (safetensors
headers) beside what SGLang 0.5.23 allocates for the whole model on one rank (tp 1, pp 1; the
project's weights figures, proven on the meta device by the conformance suite).

The plan's per-rank weights stay the model classes' figures. This only says whether the files
agree: the MTP head (`mtp.*`) is stored but loaded only by an MTP draft, so it is set apart;
anything else that differs (repacked or fused shards, dequantized or dropped layers, tensors
SGLang creates that the checkpoint lacks) is reported as unexplained, never hidden."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambasizer.service.checkpoints.inventory import Inventory

# Under this share of the model's bytes a difference is rounding between two layouts of the
# same weights (norm copies, a scale or bias kept in another dtype); above it, reported.
AGREE_FRACTION = 0.001
# Weight groups SGLang allocates at load that no checkpoint stores: the RoPE cos/sin cache
# buffers (service/solver/weights: group `rope_cache`).
BUILT_AT_LOAD = ("rope_cache",)


def cross_check(config: Mapping[str, Any], inventory: Inventory) -> dict:
    """{model_bytes_tp1, checkpoint_bytes, mtp_bytes, difference_bytes, difference_fraction, agrees, note}."""
    from mambasizer.service.solver.errors import PlanInputError
    from mambasizer.service.solver.families import layout_from_hf_config
    from mambasizer.service.solver.stages import pp_stages
    from mambasizer.service.solver.weights import stage_weight_breakdown

    try:
        lay = layout_from_hf_config(dict(config))
        stages = pp_stages(lay.num_hidden_layers, 1, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)
        whole = stage_weight_breakdown(lay, tp_size=1, pp_size=1, ep_size=1, stages=stages, load_nextn=False)[0]
    except PlanInputError as exc:
        return {"checkpoint_bytes": inventory.total_bytes, "mtp_bytes": inventory.mtp_bytes, "model_bytes_tp1": None,
                "agrees": None, "note": f"not compared: the model's weights cannot be derived ({exc.message})"}
    model = whole.total_bytes
    built = sum(b for g, b in whole.groups if g in BUILT_AT_LOAD)
    stored = inventory.total_bytes - inventory.mtp_bytes
    diff = model - built - stored
    frac = diff / stored if stored else 0.0
    agrees = abs(frac) <= AGREE_FRACTION
    note = (f"SGLang's model classes allocate {model:,} bytes at tp 1, {built:,} of them RoPE cos/sin caches built at load; "
            f"the checkpoint stores {stored:,} bytes the target loads (+{inventory.mtp_bytes:,} bytes of MTP head, loaded "
            "only by an MTP draft)")
    if agrees:
        note += f"; they agree within {AGREE_FRACTION:.1%} ({frac:+.3%})"
    else:
        note += (f"; a {frac:+.2%} difference ({diff:+,} bytes) that loading the same tensors does not explain "
                 "(repacked or fused shards, dequantized or dropped layers, or a quant config that does not describe "
                 "these files): the plan keeps the model classes' figure")
    return {"checkpoint_bytes": inventory.total_bytes, "mtp_bytes": inventory.mtp_bytes, "model_bytes_tp1": model,
            "built_at_load_bytes": built, "difference_bytes": diff, "difference_fraction": round(frac, 6), "agrees": agrees, "note": note}
