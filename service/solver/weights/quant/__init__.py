"""Quantization as SGLang 0.5.23's quant methods create their parameters, one module per scheme;
`quant_scheme` picks the method from the checkpoint's quantization_config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambasizer.schemas.request import IGNORE_LIST_KEYS
from mambasizer.service.solver.checkpoint_quant import (
    declared_kv_algo,
    quant_config_of,
    quant_method_of,
)
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.quant.base import Quant
from mambasizer.service.solver.weights.quant.ct_fp8 import CtFp8
from mambasizer.service.solver.weights.quant.ct_nvfp4 import CtNvfp4
from mambasizer.service.solver.weights.quant.fp8 import Fp8
from mambasizer.service.solver.weights.quant.ignore_list import (
    MAX_ENTRIES,
    MAX_ENTRY_CHARS,
    IgnoreList,
    compiled,
)
from mambasizer.service.solver.weights.quant.modelopt import ModelOptFp8, ModelOptMixed, Nvfp4
from mambasizer.service.solver.weights.quant.mxfp4 import Mxfp4
from mambasizer.service.solver.weights.quant.wna16 import WNA16

__all__ = ['WNA16', 'CtFp8', 'CtNvfp4', 'Fp8', 'ModelOptFp8', 'ModelOptMixed', 'Mxfp4', 'Nvfp4', 'Quant', 'check_ignore_lists', 'quant_scheme']


def quant_scheme(hf: Mapping[str, Any], text: Mapping[str, Any], act_bytes: int, path: str) -> Quant:
    found = quant_config_of(hf, text, path)
    qc, qpath = found.config, found.path
    if not qc:
        return Quant(act_bytes)
    if not isinstance(qc, dict):
        raise PlanInputError(qpath, f"must be an object (the checkpoint's {found.source})")
    # The KV-cache method (k_scale / v_scale on every RadixAttention) comes with a declared
    # KV algorithm (ModelOptQuantConfig: any truthy kv_cache_quant_algo).
    kv_declared = bool(declared_kv_algo(qc)[0])
    # ModelConfig._parse_quant_hf_config: a quantization_config without quant_method is
    # parsed as ModelOpt's (its quant_algo picks modelopt_fp8 / _fp4 / _mixed).
    method = quant_method_of(qc)
    field = f"{qpath}.quant_method"
    listed = [*_listed(qc, "ignored_layers", qpath), *_listed(qc, "modules_to_not_convert", qpath), *_listed(qc, "ignore", qpath)]
    skip = _ignore(listed)
    if method == "fp8":
        block = qc.get("weight_block_size")
        if block is not None and (not isinstance(block, list) or len(block) != 2 or not all(isinstance(b, int) and b > 0 for b in block)):
            raise PlanInputError(f"{qpath}.weight_block_size", "must be two positive integers [block_n, block_k]")
        return Fp8(act_bytes, skip, block, qc.get("activation_scheme", "dynamic") == "static")
    if method in ("modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed"):
        raw_nested = qc.get("quantization")
        nested: Mapping[str, Any] = raw_nested if isinstance(raw_nested, dict) else {}
        algo = str(qc.get("quant_algo") or nested.get("quant_algo") or "").upper()
        if algo == "FP8":
            # ModelOptFp8Config.from_config: the flat form's exclusions are its `ignore` list,
            # the hf_quant_config form's are quantization.exclude_modules.
            own = _listed(qc, "ignore", qpath) if qc.get("quant_algo") else _listed(nested, "exclude_modules", f"{qpath}.quantization")
            return ModelOptFp8(act_bytes, _ignore(own), kv_scales=kv_declared)
        skip = _ignore(listed + (_listed(qc, "exclude_modules", qpath) if qc.get("exclude_modules") else _listed(nested, "exclude_modules", f"{qpath}.quantization")))
        if algo == "NVFP4":
            if not qc.get("quant_algo") and not any(isinstance(g, int) for g in (qc.get("group_size"), nested.get("group_size"))):
                # ModelOptFp4Config.common_group_size: the nested (hf_quant_config.json) form must say it.
                raise PlanInputError(f"{qpath}.quantization.group_size", "is missing: SGLang 0.5.23 refuses an NVFP4 hf_quant_config.json "
                                     "without group_size (ValueError); add the checkpoint's group_size (16 for NVFP4)")
            return Nvfp4(act_bytes, skip, int(qc.get("group_size") or nested.get("group_size") or 16))
        if algo == "MIXED_PRECISION":
            layers = qc.get("quantized_layers") or nested.get("quantized_layers")
            if not isinstance(layers, dict) or not layers:
                raise PlanInputError(f"{qpath}.quantized_layers", "MIXED_PRECISION needs a non-empty quantized_layers map")
            kv = kv_declared
            group = next((int(v.get("group_size", 16)) for v in layers.values() if isinstance(v, dict) and str(v.get("quant_algo", "")).upper() in ("NVFP4", "W4A16_NVFP4")), 16)
            mixed_skip = _ignore(_listed(qc, "ignore" if "ignore" in qc else "exclude_modules", qpath) if qc.get("quant_algo")
                                 else _listed(nested, "exclude_modules", f"{qpath}.quantization"))
            return ModelOptMixed(act_bytes, mixed_skip, layers, kv, group)
        raise PlanInputError(f"{qpath}.quant_algo", f"ModelOpt quant_algo {algo or None!r} is not modelled (FP8, NVFP4 and MIXED_PRECISION are); give a budget with measured memory instead")
    if method in ("awq", "gptq", "auto-round"):
        bits = qc.get("bits", qc.get("w_bit", 4))
        wgroup = qc.get("group_size", qc.get("q_group_size", 128))
        if bits != 4 or not isinstance(wgroup, int):
            raise PlanInputError(f"{qpath}.bits", f"only 4-bit {method} is modelled, got bits={bits!r}")
        flavour = "awq" if method == "awq" or str(qc.get("packing_format", "")).endswith("awq") else "gptq"
        return WNA16(act_bytes, skip, 4, wgroup, flavour, True, bool(qc.get("desc_act", False)))
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        if not isinstance(groups, dict) or len(groups) != 1:
            raise PlanInputError(f"{qpath}.config_groups", "exactly one config group is modelled")
        g = next(iter(groups.values()))
        w = (g or {}).get("weights") or {}
        fmt = str(g.get("format") or qc.get("format") or "")
        if w.get("num_bits") == 4 and w.get("type") == "float" and "mxfp4" in fmt:
            return Mxfp4(act_bytes, skip)
        if (w.get("num_bits") == 4 and w.get("type") == "float" and str(w.get("strategy") or "") == "tensor_group"
                and w.get("group_size") == 16):
            # SGLang's _is_fp4a4_nvfp4 / _is_fp4a16_nvfp4: the NVFP4 layout (group 16), activations
            # quantized (w4a4, `input_global_scale` kept on Hopper's weight-only fallback) or not.
            acts = g.get("input_activations") or {}
            if acts and not (acts.get("num_bits") == 4 and acts.get("type") == "float" and acts.get("group_size") == 16
                             and str(acts.get("strategy") or "") == "tensor_group"):
                raise PlanInputError(f"{qpath}.config_groups.input_activations",
                                     "SGLang 0.5.23 refuses this checkpoint (NotImplementedError): activation-quantized float4 "
                                     "is only supported in the NVFP4 layout (tensor_group, group_size 16)")
            return CtNvfp4(act_bytes, skip, 16, bool(acts), bool(qc.get("kv_cache_scheme")))
        if w.get("num_bits") == 4 and w.get("type", "int") == "int":
            return WNA16(act_bytes, skip, 4, int(w.get("group_size") or -1), "compressed-tensors", not w.get("symmetric", True))
        if w.get("num_bits") == 8 and w.get("type") == "float":
            strategy = str(w.get("strategy") or "tensor").lower()
            if strategy not in ("tensor", "channel", "block"):
                raise PlanInputError(f"{qpath}.config_groups.weights.strategy", f"fp8 strategy {strategy!r} is not modelled (tensor, channel, block are)")
            block = w.get("block_structure")
            if strategy == "block" and not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
                raise PlanInputError(f"{qpath}.config_groups.weights.block_structure", "must be two positive integers [block_n, block_k] for the block strategy")
            acts = g.get("input_activations") or {}
            return CtFp8(act_bytes, skip, strategy, block, not acts.get("dynamic", True),
                         bool(qc.get("kv_cache_scheme")), str(acts.get("strategy") or "token").lower())
        raise PlanInputError(field, f"compressed-tensors format {fmt or w!r} is not modelled (int4 pack-quantized, nvfp4 pack-quantized, fp8 and mxfp4 are)"[:300])
    raise PlanInputError(field, f"quant_method {method!r} is not modelled (fp8, modelopt FP8/NVFP4, awq, gptq, compressed-tensors are); give a budget with measured memory instead")





def _listed(holder: Mapping[str, Any], key: str, path: str) -> list[tuple[str, str]]:
    """(field, entry) for each entry of one ignore list, bounded: a client's config is
    untrusted, and every entry is matched against every module the model has."""
    value = holder.get(key)
    field = f"{path}.{key}"
    if not value:
        return []
    if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
        raise PlanInputError(field, "must be an array of module names or patterns (strings)")
    if len(value) > MAX_ENTRIES:
        raise PlanInputError(field, f"has {len(value)} entries; at most {MAX_ENTRIES} are accepted (list a parent module or a pattern instead)")
    for i, e in enumerate(value):
        if len(e) > MAX_ENTRY_CHARS:
            raise PlanInputError(f"{field}[{i}]", f"is {len(e)} characters long; at most {MAX_ENTRY_CHARS} are accepted")
    return [(f"{field}[{i}]", e) for i, e in enumerate(value)]


def _ignore(listed: list[tuple[str, str]]) -> IgnoreList:
    """The entries compiled once (a refused pattern is a PlanInputError naming its field)."""
    return compiled([e for _, e in listed], [f for f, _ in listed])




def check_ignore_lists(hf: Mapping[str, Any], text: Mapping[str, Any] | None, path: str) -> None:
    """Every ignore list of the checkpoint's quant config bounded and compiled, whatever the
    route does with it next: a refused entry is a 422 naming it before any search or sweep
    starts (a search would otherwise count it against each candidate)."""
    found = quant_config_of(hf, text, path)
    qc = found.config
    if not isinstance(qc, dict):
        return
    nested = qc.get("quantization")
    for holder, where in ((qc, found.path), (nested, f"{found.path}.quantization")):
        if isinstance(holder, dict):
            for key in IGNORE_LIST_KEYS:
                _ignore(_listed(holder, key, where))
