"""A speculative draft given as its own checkpoint (`--speculative-draft-model-path`): its weight
bytes on each rank, as SGLang 0.5.23 allocates them before the target's pools are sized.

SGLang builds the draft worker (a second model runner, `is_draft_worker=True`) in the target's
TP layout on the last pipeline stage, and allocates the pools only after it
(`EAGLEWorkerV2.alloc_memory_pool`; `_profile_available_bytes`: "draft weights are now counted").
The draft's own embedding and lm_head are built with it; EAGLE shares the target's only later
(`init_lm_head`, after the pools), so they are priced here. ModelConfig(is_draft_model=True)
rebuilds the checkpoints of a few architectures as their MTP class (`_config_draft_model`):
Qwen3-Next / Qwen3.5 (num_nextn_predict_layers 1 for Qwen3.5) and Nemotron-H; those are the
MTP walk of the draft's config, other families the whole model. Pure, like the rest of weights/.
"""

from __future__ import annotations

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.stages import pp_stages
from mambasizer.service.solver.weights import stage_weight_bytes

# `_config_draft_model`'s rewrites among the families walked here: architecture -> the MTP
# layers the rebuilt class gets (None: the config's own num_nextn_predict_layers, untouched).
MTP_REBUILT = {
    "Qwen3NextForCausalLM": None,
    "Qwen3_5ForConditionalGeneration": 1, "Qwen3_5MoeForConditionalGeneration": 1,
    "Qwen3_5ForCausalLM": 1, "Qwen3_5MoeForCausalLM": 1,
    "NemotronHForCausalLM": 1, "NemotronHPuzzleForCausalLM": 1,
}
FIELD = "draft_model.hf_config"


def draft_weight_bytes(hf_config: dict, *, tp_size: int, ep_size: int) -> int:
    """The draft's bytes per rank (below), its refusals naming the draft's config (the weights code names the
    target's, `model.hf_config...`)."""
    try:
        return _draft_weight_bytes(hf_config, tp_size=tp_size, ep_size=ep_size)
    except PlanInputError as exc:
        if exc.field.startswith("model.hf_config"):
            raise PlanInputError(FIELD + exc.field[len("model.hf_config"):], exc.message, exc.allowed) from None
        raise


def _draft_weight_bytes(hf_config: dict, *, tp_size: int, ep_size: int) -> int:
    """The draft model's bytes on one rank of the target's TP (x EP) layout. For an MTP-rebuilt
    architecture: the MTP draft's embedding, lm_head and layers (its rotary cache is the target's
    when both use the same rope: `get_rope` caches per process); otherwise the whole model."""
    lay = layout_from_hf_config(dict(hf_config), path=FIELD)
    stages = pp_stages(lay.num_hidden_layers, 1, None, lay.mamba_layer_ids, lay.full_attention_layer_ids)

    def one_rank(nextn: int | None) -> int:
        return stage_weight_bytes(lay, tp_size=tp_size, pp_size=1, ep_size=ep_size, stages=stages,
                                  load_nextn=nextn is not None, draft_num_layers=nextn)[0]

    arch = lay.architecture
    if arch not in MTP_REBUILT:
        return one_rank(None)
    layers = MTP_REBUILT[arch]
    if layers is None:
        layers = lay.num_nextn_predict_layers
    if layers < 1:
        raise PlanInputError(f"{FIELD}.num_nextn_predict_layers",
                             f"SGLang builds a {arch} draft as its MTP model, and this config has no MTP layers: "
                             "give the draft's config.json with num_nextn_predict_layers")
    return one_rank(layers) - one_rank(None)
