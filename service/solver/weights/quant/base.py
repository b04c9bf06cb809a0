"""The unquantized method (parameters in the model dtype) and the ignore-list matching every
quant method shares."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from mambasizer.service.solver.errors import PlanInputError


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

    def __init__(self, act_bytes: int, skip: Sequence[str] = ()):
        self.act = act_bytes  # the model dtype's bytes (unquantized parameters)
        self.skip = tuple(skip)

    # `parts` name the module's checkpoint shards (one name for an unfused module): SGLang's
    # is_layer_skipped matches each shard of a fused module and needs them all to agree.
    def skipped(self, parts: Sequence[str]) -> bool:
        if not self.skip:
            return False
        hits = [matches(p, self.skip) for p in parts]
        if any(hits) and not all(hits):
            raise PlanInputError(
                "model.hf_config.quantization_config",
                f"lists some but not all shards of a fused layer ({', '.join(parts)}) as unquantized; "
                "SGLang requires all shards of a fused layer to have the same precision",
            )
        return all(hits)

    def skipped_moe(self, parts: Sequence[str]) -> bool:
        """FusedMoE: also skipped when an ignore entry names a path inside the experts."""
        return self.skipped(parts) or any(parts[0] in pat for pat in self.skip)

    def linear(self, in_pr: int, outs_pr: Sequence[int], parts: Sequence[str]) -> int:
        return in_pr * sum(outs_pr) * self.act

    def experts(self, n_local: int, w13_pr: int, hidden: int, inter_pr: int, parts: Sequence[str]) -> int:
        return n_local * (w13_pr * hidden + hidden * inter_pr) * self.act


def _path_match(ignored: str, name: str) -> bool:
    """An ignore entry matches on dotted module-path boundaries (`mlp.gate` is not
    `mlp.gate_up_proj`), like SGLang's quantization.utils._module_path_match."""
    ignored, name = ignored.rstrip("."), name.rstrip(".")
    return ignored == name or name.startswith(ignored + ".") or ("." + ignored + ".") in ("." + name + ".")


def matches(name: str, patterns: Sequence[str]) -> bool:
    if isinstance(patterns, tuple):
        return _matches_cached(name, patterns)
    return _matches(name, patterns)


@lru_cache(maxsize=1 << 15)
def _matches_cached(name: str, patterns: tuple[str, ...]) -> bool:
    # A search prices the same modules against the same ignore list for every TP / PP / EP
    # layout it tries: the glob matching dominated a recommend of an NVFP4 checkpoint.
    return _matches(name, patterns)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    for pat in patterns:
        if pat.startswith("re:"):
            if re.match(pat[3:], name):
                return True
        elif "*" in pat:
            if _glob_match(pat, name):
                return True
        elif _path_match(pat, name):
            return True
    return False


def _glob_match(pattern: str, name: str) -> bool:
    """A glob entry (`model.language_model.layers.0.linear_attn*`, `*.mlp.shared_expert.*`),
    as ModelOptQuantConfig.is_layer_excluded matches it: `*` is any run of characters, the
    whole path or any one of its dotted parts must match; the language-model wrapper's prefix
    is tried both ways (the checkpoint's names and SGLang's module paths differ in it)."""
    rx = re.compile(pattern.replace(".", r"\.").replace("*", ".*"))
    names = [name]
    if name.startswith("model.language_model."):
        names.append("model." + name[len("model.language_model."):])
    elif name.startswith("model."):
        names.append("model.language_model." + name[len("model."):])
    return any(rx.fullmatch(n) or any(rx.fullmatch(part) for part in n.split(".")) for n in names)


