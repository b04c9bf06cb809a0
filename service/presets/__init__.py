"""Shipped model presets: real config.json files with their sources (models/SOURCES.md).

A preset is sized when SGLang 0.5.23 can load it: its family has a hybrid (mamba-path)
config class in the wheel, and the config resolves to a layout (tests/conformance checks,
for every preset, that ours resolves exactly when SGLang's own config classes load it, and
to the same numbers). Whether every value was verified against the published config.json
is reported (`verified`, `notes`) but does not gate sizing. The others are listed with the
reason. Loaded once at import: the request path does no file reads.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from types import MappingProxyType


@dataclass(frozen=True)
class Preset:
    name: str
    model_id: str
    source: str
    verified: bool
    sglang_support: str
    notes: str
    hf_config: Mapping
    supported: bool  # SGLang 0.5.23 has a hybrid (mamba-path) config class for it

    @cached_property
    def reason(self) -> str | None:
        """Why it is not sized; None when it is. Resolved on first use (loading the presets
        imports no solver), then kept."""
        if not self.supported:
            return f"not sized by SGLang 0.5.23's hybrid path: {self.sglang_support or 'no config class'}"
        from mambasizer.service.solver.errors import PlanInputError
        from mambasizer.service.solver.families import layout_from_hf_config

        try:
            layout_from_hf_config(dict(self.hf_config), self.name, path="config")
        except PlanInputError as exc:
            return f"SGLang 0.5.23 cannot load this config ({exc.field}: {exc.message}); see notes"
        return None

    @property
    def sizable(self) -> bool:
        return self.reason is None

    def summary(self) -> dict:
        return {
            "name": self.name,
            "model_id": self.model_id,
            "verified": self.verified,
            "supported_by_sglang": self.supported,
            "sizable": self.sizable,
            "reason": self.reason,
            "source": self.source,
        }


def _load() -> Mapping[str, Preset]:
    presets = {}
    folder = resources.files(__package__) / "models"
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".json"):
            continue
        raw = json.loads(entry.read_text())
        name = entry.name[: -len(".json")]
        support = str(raw.get("_sglang_0_5_23", ""))
        supported = support.startswith("supported") or support == "yes"
        verified = raw.get("_verified") is True
        config = {k: v for k, v in raw.items() if not k.startswith("_")}
        if isinstance(raw.get("_hf_quant_config_file"), str):
            # A sibling hf_quant_config.json too large to inline (Nemotron-3.5-Lightning's
            # 5,981 per-module entries), shipped verbatim and gzipped beside the preset.
            raw["_hf_quant_config"] = json.loads(gzip.decompress((folder / raw["_hf_quant_config_file"]).read_bytes()))
        if isinstance(raw.get("_hf_quant_config"), dict):
            # The checkpoint's sibling hf_quant_config.json, verbatim: SGLang reads it when
            # config.json has no quantization_config (service/solver/checkpoint_quant.py).
            config["hf_quant_config"] = raw["_hf_quant_config"]
        presets[name] = Preset(
            name=name,
            model_id=str(raw.get("_model_id", "")),
            source=str(raw.get("_source", "")),
            verified=verified,
            sglang_support=support,
            notes=str(raw.get("_notes", "")),
            hf_config=MappingProxyType(config),
            supported=supported,
        )
    return MappingProxyType(presets)


PRESETS: Mapping[str, Preset] = _load()


def repo_id(preset: Preset) -> str:
    """The HF repo id the preset is the checkpoint of (`_model_id`'s first word; some add a note)."""
    return preset.model_id.split()[0] if preset.model_id.strip() else ""


# Every preset answers to its name and to its checkpoint's HF repo id, case-insensitive.
_BY_KEY: Mapping[str, str] = MappingProxyType({
    **{repo_id(p).lower(): n for n, p in PRESETS.items() if repo_id(p)},
    **{n.lower(): n for n in PRESETS},
})


def _closest(name: str) -> list[str]:
    import difflib

    keys = sorted({*PRESETS, *(repo_id(p) for p in PRESETS.values() if repo_id(p))})
    lowered = {k.lower(): k for k in keys}
    return [lowered[k] for k in difflib.get_close_matches(name.lower(), list(lowered), n=5, cutoff=0.5)]


def preset_name(key: str) -> str | None:
    """The preset a name or a shipped checkpoint's HF repo id (any case) names, or None."""
    return _BY_KEY.get(key.strip().lower())


def get_preset(name: str, allow_unverified: bool = False) -> Preset:
    """The preset to size. `allow_unverified` is accepted for compatibility and has no effect:
    every preset SGLang 0.5.23 can load is sized, verified or not."""
    key = preset_name(name)
    preset = PRESETS.get(key) if key is not None else None
    if preset is not None and preset.sizable:
        return preset  # the hot path: no import, no message built
    # Imported here: loading the presets imports no solver.
    from mambasizer.service.solver.errors import PlanInputError

    if preset is None:
        # `allowed` holds the sizable presets; the listed-only ones are named apart, so a name
        # seen in GET /v1/presets (which lists all) is not mistaken for a typo.
        listed_only = ", ".join(sorted(n for n, p in PRESETS.items() if not p.sizable))
        close = _closest(name)
        hint = f"closest: {', '.join(close)}; " if close else ""
        raise PlanInputError(
            "model.preset",
            f"unknown preset {name[:128]!r} (neither a preset name nor a shipped checkpoint's HF repo id, any case); {hint}"
            "GET /v1/presets lists both; for another checkpoint paste its config.json as model.hf_config; "
            f"listed but not sizable (GET /v1/presets/NAME says why): {listed_only}; the sizable presets are allowed",
            allowed=sorted(n for n, p in PRESETS.items() if p.sizable),
        )
    if not preset.sizable:
        raise PlanInputError("model.preset", f"preset {name!r} is {preset.reason}", allowed=sorted(n for n, p in PRESETS.items() if p.sizable))
    return preset
