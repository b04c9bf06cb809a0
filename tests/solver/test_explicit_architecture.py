"""An explicit layout takes the launch facts of the architecture it names: the family
whose rules apply, PP support, the chunk size. The architecture's own config.json (a
preset of it) must give the same facts (the full conformance against SGLang is
tests/conformance/test_explicit_layouts.py)."""

from __future__ import annotations

import pytest

from mambasizer.schemas.request import DEFAULT_LAYOUT_ARCHITECTURE, LAYOUT_ARCHITECTURES, Layout
from mambasizer.service.presets import PRESETS
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_explicit, layout_from_hf_config
from mambasizer.service.solver.launch import mamba_chunk_size
from samples import LAYOUT_8 as BASE


def _explicit(arch: str):
    return layout_from_explicit(Layout.model_validate({**BASE, "linear_kind": LAYOUT_ARCHITECTURES[arch], "architecture": arch}))


def _preset_of(arch: str):
    """A shipped config.json of this architecture that the adapters read (verified or not:
    only its launch facts are compared)."""
    for p in PRESETS.values():
        if (p.hf_config.get("architectures") or [""])[0] == arch:
            try:
                return layout_from_hf_config(dict(p.hf_config))
            except PlanInputError:
                continue
    return None


@pytest.mark.parametrize("arch", sorted(LAYOUT_ARCHITECTURES))
def test_the_layout_resolves_as_its_architecture(arch):
    lay = _explicit(arch)
    assert lay.architecture == arch and lay.linear_kind == LAYOUT_ARCHITECTURES[arch]
    real = _preset_of(arch)
    if real is None:
        pytest.skip(f"no shipped preset of {arch}")
    assert (lay.family, lay.pp_supported) == (real.family, real.pp_supported)
    if "mamba_chunk_size" not in real.hf_config and "chunk_size" not in real.hf_config:
        assert mamba_chunk_size(lay) == mamba_chunk_size(real)


def test_the_default_architecture_follows_the_mixer():
    for kind, arch in DEFAULT_LAYOUT_ARCHITECTURE.items():
        lay = layout_from_explicit(Layout.model_validate({**BASE, "linear_kind": kind}))
        assert lay.architecture == arch and LAYOUT_ARCHITECTURES[arch] == kind


def test_a_layout_states_its_own_chunk_size():
    lay = layout_from_explicit(Layout.model_validate({**BASE, "mamba_chunk_size": 128}))
    assert mamba_chunk_size(lay) == 128
    assert mamba_chunk_size(layout_from_explicit(Layout.model_validate(BASE))) == 256  # NemotronH's default
