"""Shipped model presets: real config.json subsets with their sources (models/SOURCES.md).

A preset is sized only when its values are verified against the published config.json
and SGLang 0.5.23 sizes the family through its mamba path. The others are listed with
the reason, and sized only on an explicit `allow_unverified` (never silently).
Loaded once at import: the request path does no file reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
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
    reason: str | None  # why it is not sized by default; None when it is

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
        reason = None
        if not supported:
            reason = f"not sized by SGLang 0.5.23's hybrid path: {support or 'no config class'}"
        elif not verified:
            reason = "values not verified against the published config.json: " + str(raw.get("_notes", "see SOURCES.md"))
        config = {k: v for k, v in raw.items() if not k.startswith("_")}
        presets[name] = Preset(
            name=name,
            model_id=str(raw.get("_model_id", "")),
            source=str(raw.get("_source", "")),
            verified=verified,
            sglang_support=support,
            notes=str(raw.get("_notes", "")),
            hf_config=MappingProxyType(config),
            supported=supported,
            reason=reason,
        )
    return MappingProxyType(presets)


PRESETS: Mapping[str, Preset] = _load()


def get_preset(name: str, allow_unverified: bool = False) -> Preset:
    # Imported here: service.solver imports this module while it initialises.
    from service.solver.errors import PlanInputError

    preset = PRESETS.get(name)
    if preset is None:
        raise PlanInputError("model.preset", f"unknown preset {name!r}", allowed=sorted(n for n, p in PRESETS.items() if p.sizable))
    if not preset.supported:
        raise PlanInputError("model.preset", f"preset {name!r} is {preset.reason}", allowed=sorted(n for n, p in PRESETS.items() if p.sizable))
    if not preset.verified and not allow_unverified:
        raise PlanInputError(
            "model.preset",
            f"preset {name!r} is unverified ({preset.reason}); pass model.allow_unverified=true to size it anyway",
            allowed=sorted(n for n, p in PRESETS.items() if p.sizable),
        )
    return preset
