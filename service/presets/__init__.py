"""Shipped model presets: real config.json files with their sources (models/SOURCES.md).

A preset is sized when SGLang 0.5.23 can load it: its family has a hybrid (mamba-path)
config class in the wheel, and the config resolves to a layout (tests/conformance checks,
for every preset, that ours resolves exactly when SGLang's own config classes load it, and
to the same numbers). Whether every value was verified against the published config.json
is reported (`verified`, `notes`) but does not gate sizing. The others are listed with the
reason. Loaded once at import: the request path does no file reads.
"""

from __future__ import annotations

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
        from service.solver.errors import PlanInputError
        from service.solver.families import layout_from_hf_config

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


def get_preset(name: str, allow_unverified: bool = False) -> Preset:
    """The preset to size. `allow_unverified` is accepted for compatibility and has no effect:
    every preset SGLang 0.5.23 can load is sized, verified or not."""
    # Imported here: loading the presets imports no solver.
    from service.solver.errors import PlanInputError

    preset = PRESETS.get(name)
    if preset is None:
        # `allowed` holds the sizable presets; the listed-only ones are named apart, so a name
        # seen in GET /v1/presets (which lists all) is not mistaken for a typo.
        listed_only = ", ".join(sorted(n for n, p in PRESETS.items() if not p.sizable))
        raise PlanInputError(
            "model.preset",
            f"unknown preset {name!r}; listed but not sizable (GET /v1/presets/NAME says why): {listed_only}; "
            "the sizable presets are allowed",
            allowed=sorted(n for n, p in PRESETS.items() if p.sizable),
        )
    if not preset.sizable:
        raise PlanInputError("model.preset", f"preset {name!r} is {preset.reason}", allowed=sorted(n for n, p in PRESETS.items() if p.sizable))
    return preset
