"""The unquantized method (parameters in the model dtype) and the ignore-list checks every
quant method shares (the matching itself: ignore_list.py)."""

from __future__ import annotations

from collections.abc import Sequence

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.quant.ignore_list import IgnoreList, compiled


class Quant:
    """How linear / MoE / embedding parameters are stored. Subclasses model one quant method."""

    name = "none"
    quantizes_lm_head = False  # only ModelOpt's get_quant_method takes ParallelLMHead
    n_global = 0  # the MoE layer's experts over all EP ranks (set per layer by Rank.experts)
    moe_tp = 1  # the MoE layer's TP width, tp // ep (set per layer by Rank.experts)
    kv_scale_bytes = 0  # k_scale + v_scale (float32) its KV-cache method gives each RadixAttention
    # Whether the layer being priced shards its input / output over TP (set per layer by
    # Rank._linear; block-wise fp8 checks that every shard fills whole blocks).
    sharded_in = sharded_out = False

    def __init__(self, act_bytes: int, skip: Sequence[str] | IgnoreList = ()):
        self.act = act_bytes  # the model dtype's bytes (unquantized parameters)
        self.ignore = skip if isinstance(skip, IgnoreList) else compiled(skip)
        self.skip = self.ignore.entries

    # `parts` name the module's checkpoint shards (one name for an unfused module): SGLang's
    # is_layer_skipped matches each shard of a fused module and needs them all to agree.
    def skipped(self, parts: Sequence[str]) -> bool:
        if not self.skip:
            return False
        hits = [self.ignore.matches(p) for p in parts]
        if any(hits) and not all(hits):
            raise PlanInputError(
                "model.hf_config.quantization_config",
                f"lists some but not all shards of a fused layer ({', '.join(parts)}) as unquantized; "
                "SGLang requires all shards of a fused layer to have the same precision",
            )
        return all(hits)

    def skipped_moe(self, parts: Sequence[str]) -> bool:
        """FusedMoE: also skipped when an ignore entry names a path inside the experts."""
        return self.skipped(parts) or self.ignore.names_inside(parts[0])

    def linear(self, in_pr: int, outs_pr: Sequence[int], parts: Sequence[str]) -> int:
        return in_pr * sum(outs_pr) * self.act

    def experts(self, n_local: int, w13_pr: int, hidden: int, inter_pr: int, parts: Sequence[str]) -> int:
        return n_local * (w13_pr * hidden + hidden * inter_pr) * self.act
