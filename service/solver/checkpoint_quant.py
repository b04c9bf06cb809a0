"""The checkpoint's quantization config as SGLang 0.5.23 finds it, and the KV-cache
quantization it declares (what `--kv-cache-dtype auto` resolves to).

Where SGLang looks (`ModelConfig._parse_quant_hf_config`, `weight_utils.get_quant_config`):
config.json's `quantization_config` (or `compression_config`) first; only when there is none,
the checkpoint's sibling `hf_quant_config.json` (ModelOpt's nested form). A pasted config
gives that file as `hf_quant_config`; a preset keeps it under its bookkeeping key
`_hf_quant_config`, which the preset loader passes on as `hf_quant_config`.

What it declares for the KV cache: each quant config class's `kv_cache_quant_algo`, which
`kv_cache_dtype.configure_kv_cache_dtype` reads: an FP8 algorithm (any case) makes `auto`
an `fp8_e4m3` pool, anything else keeps the model dtype.
Conformance: tests/conformance/test_kv_dtype_auto.py runs SGLang's own function on every
shipped config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

HF_QUANT_CONFIG_KEY = "hf_quant_config"


class CheckpointQuant(NamedTuple):
    config: dict | None  # what the quant config class is built from (flat or nested form)
    path: str  # the request field it came from, for error messages
    source: str  # "quantization_config" / "hf_quant_config.json" / ""


def quant_config_of(hf: Mapping[str, Any], text: Mapping[str, Any] | None = None, path: str = "model.hf_config") -> CheckpointQuant:
    """The quant config SGLang builds its quant method from, for this config.json."""
    text = text if text is not None else hf
    hfq = hf.get(HF_QUANT_CONFIG_KEY)
    sibling = CheckpointQuant({"quant_method": "modelopt", **hfq} if isinstance(hfq, dict) else hfq,
                              f"{path}.{HF_QUANT_CONFIG_KEY}", "hf_quant_config.json")
    for holder, prefix in ((hf, path), (text, f"{path}.text_config")):
        for key in ("quantization_config", "compression_config"):
            qc = holder.get(key)
            if not qc:
                continue
            if hfq and isinstance(qc, dict) and str(qc.get("quant_method", "modelopt")).lower() == "modelopt" and _mixed_incomplete(qc):
                return sibling  # get_quant_config falls through to hf_quant_config.json
            return CheckpointQuant(qc, f"{prefix}.{key}", "quantization_config")
    # SGLang treats the sibling file as ModelOpt's (quant_method modelopt, the nested form).
    return sibling if hfq else CheckpointQuant(None, path, "")


def quant_method_of(qc: Mapping[str, Any]) -> str:
    """The quant method SGLang builds for this quant config: `quant_method`, or, when it is
    absent, ModelOpt's whenever a quant_algo is declared (`ModelConfig._parse_quant_hf_config`
    parses such a config as ModelOpt's)."""
    method = qc.get("quant_method")
    if method:
        return str(method).lower()
    return "modelopt" if _modelopt_section(qc).get("quant_algo") else ""


def _mixed_incomplete(qc: Mapping[str, Any]) -> bool:
    """get_quant_config's `modelopt_mixed_config_incomplete`: a MIXED_PRECISION
    quantization_config without its per-layer map or KV metadata."""
    if str(qc.get("quant_algo", "")).upper() != "MIXED_PRECISION":
        return False
    return "quantized_layers" not in qc or ("kv_cache_quant_algo" not in qc and "kv_cache_scheme" not in qc)


def _modelopt_section(qc: Mapping[str, Any]) -> Mapping[str, Any]:
    nested = qc.get("quantization")
    return nested if isinstance(nested, dict) else qc


def declared_kv_algo(qc: Any) -> tuple[str | None, str]:
    """(kv_cache_quant_algo as the quant config class derives it, the key that says so).
    None: the class has no KV-cache quantization."""
    if not isinstance(qc, dict):
        return None, ""
    method = quant_method_of(qc)
    if method in ("modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed"):
        if qc.get("quant_algo") is None:  # nested (hf_quant_config.json) form
            sec = _modelopt_section(qc)
            return _str_or_none(sec.get("kv_cache_quant_algo")), "quantization.kv_cache_quant_algo"
        algo = str(qc.get("quant_algo")).upper()
        scheme = qc.get("kv_cache_scheme")
        fp8_scheme = isinstance(scheme, dict) and scheme.get("type") == "float" and scheme.get("num_bits") == 8
        if algo == "FP8":  # ModelOptFp8Config.from_config
            if isinstance(scheme, dict):
                return ("FP8" if fp8_scheme else None), "kv_cache_scheme"
            return _str_or_none(qc.get("kv_cache_quant_algo")), "kv_cache_quant_algo"
        if algo == "MIXED_PRECISION":  # ModelOptMixedPrecisionConfig.from_config
            if isinstance(scheme, dict):
                fp4 = scheme.get("type") == "float" and scheme.get("num_bits") == 4
                return ("FP8" if fp8_scheme else "NVFP4" if fp4 else "auto"), "kv_cache_scheme"
            return _str_or_none(qc.get("kv_cache_quant_algo")), "kv_cache_quant_algo"
        # ModelOptFp4Config.from_config (NVFP4 and the other FP4 algorithms)
        if isinstance(scheme, dict):
            return ("FP8" if fp8_scheme else "auto"), "kv_cache_scheme"
        if isinstance(scheme, str):
            name = scheme.strip().upper()
            return ("FP8" if name in ("FP8", "FLOAT8") else "NVFP4" if name in ("FP4", "FLOAT4", "NVFP4") else "auto"), "kv_cache_scheme"
        return (_str_or_none(qc.get("kv_cache_quant_algo")) or "auto"), "kv_cache_quant_algo"
    if method == "fp8":  # Fp8Config.from_config
        return _str_or_none(qc.get("kv_cache_quant_algo")), "kv_cache_quant_algo"
    if method == "compressed-tensors":  # CompressedTensorsConfig.kv_cache_quant_algo
        s = qc.get("kv_cache_scheme")
        ok = (isinstance(s, dict) and s.get("type") == "float" and s.get("num_bits") == 8 and s.get("strategy") == "tensor"
              and s.get("symmetric", True) and not s.get("dynamic", False))
        return ("FP8" if ok else None), "kv_cache_scheme"
    return None, ""


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def resolve_kv_auto(hf: Mapping[str, Any], text: Mapping[str, Any] | None, model_dtype: str) -> tuple[str, str]:
    """(`--kv-cache-dtype auto` as configure_kv_cache_dtype resolves it, why)."""
    cq = quant_config_of(hf or {}, text)
    algo, key = declared_kv_algo(cq.config)
    if isinstance(algo, str) and algo.upper() == "FP8":
        return "fp8_e4m3", f"auto: the checkpoint's {cq.source} declares FP8 KV ({key}), so SGLang allocates an fp8_e4m3 pool"
    if algo:
        return model_dtype, f"auto: the checkpoint's {cq.source} declares KV algorithm {algo!r}, which auto does not take; the model dtype ({model_dtype})"
    return model_dtype, f"auto: the model dtype ({model_dtype}); the checkpoint declares no KV-cache quantization"


# The model-override providers that read `hf_config.quantization_config` as an attribute
# (`arg_groups/model_overrides/nemotron_h.py`): registered for these architectures.
_NEMOTRON_H_OVERRIDE_ARCHS = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronH_Omni_Reasoning_V3"})


def launch_quant_failure(architecture: str, hf: Mapping[str, Any], text: Mapping[str, Any] | None) -> str | None:
    """Why SGLang 0.5.23 fails while resolving its server arguments for this checkpoint's
    quantization, or None. The NemotronH override scans `hf_config.quantization_config`'s
    `quantized_layers` for W4A16 experts whenever the quantization resolved to
    modelopt_mixed; a checkpoint whose MIXED_PRECISION recipe is only in its
    hf_quant_config.json (config.json has no quantization_config) has no such attribute, so
    the launch stops with an AttributeError (Nemotron-3.5-Lightning's NVFP4 release)."""
    if architecture not in _NEMOTRON_H_OVERRIDE_ARCHS:
        return None
    found = quant_config_of(hf, text)
    if found.source != "hf_quant_config.json" or not isinstance(found.config, dict):
        return None
    section = _modelopt_section(found.config)
    layers = section.get("quantized_layers")
    if str(section.get("quant_algo", "")).upper() != "MIXED_PRECISION" or not isinstance(layers, dict):
        return None
    if not any(isinstance(v, dict) and str(v.get("quant_algo", "")).upper() in ("NVFP4", "W4A16_NVFP4") for v in layers.values()):
        return None  # parsed as w4afp8, not modelopt_mixed: the override does not look
    cls = {"NemotronHForCausalLM": "NemotronHConfig", "NemotronHPuzzleForCausalLM": "NemotronHPuzzleConfig"}.get(architecture, architecture + " config")
    return (f"'{cls}' object has no attribute 'quantization_config' (SGLang 0.5.23's NemotronH model override reads config.json's "
            "quantization_config, but this checkpoint keeps its MIXED_PRECISION recipe only in hf_quant_config.json). "
            "Fix: copy hf_quant_config.json's \"quantization\" object into config.json as \"quantization_config\" "
            "(SGLang then loads it as modelopt_mixed with the marlin MoE runner)")
