"""Named regression tests: every sizable shipped preset at a realistic H200 deployment.
The pinned numbers (preset_regressions.json) were produced by SGLang 0.5.23's own sizing
functions; our solver must reproduce them, and so must the wheel on every run."""

import json
import os

import pytest

import preset_cases
from mambasizer.service.planner import plan
from mambasizer.service.presets import PRESETS

with open(os.path.join(os.path.dirname(__file__), "preset_regressions.json")) as f:
    PINNED = json.load(f)

SIZABLE = sorted(n for n, p in PRESETS.items() if p.sizable)


def test_every_sizable_preset_is_pinned():
    assert sorted(PINNED) == SIZABLE


@pytest.mark.parametrize("name", SIZABLE)
def test_ours_reproduces_sglang(name):
    ours = plan(preset_cases.preset_request(name)).model_dump()
    if PINNED[name]["error"]:  # SGLang fails to launch it as shipped: so must our plan, with its exception
        assert not ours["feasible"] and ours["error"]["exception"] == PINNED[name]["error"]
        return
    assert ours["feasible"], ours["error"]
    assert {"deployment": list(preset_cases.DEPLOYMENTS[name]), **preset_cases.pinned_fields(ours)} == PINNED[name]


@pytest.mark.parametrize("name", SIZABLE)
def test_sglang_still_computes_the_pinned_numbers(name):
    import sglang_ref

    ref = sglang_ref.reference_plan(preset_cases.preset_request(name, hf_config=True))
    assert {"deployment": list(preset_cases.DEPLOYMENTS[name]), **preset_cases.pinned_fields(ref)} == PINNED[name]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_sizable_exactly_when_sglang_loads_it_on_its_mamba_path(name):
    """A preset is sized iff SGLang 0.5.23's own config classes load it (ModelConfig, as a
    launch without --trust-remote-code builds it) and give it a mamba/linear state pool."""
    import launch_ref
    import sglang_ref

    try:
        mc = sglang_ref.model_config_for(dict(PRESETS[name].hf_config))
    except Exception as exc:  # SGLang cannot load the file at all
        loads, why = False, f"{type(exc).__name__}: {exc}"
    else:
        loads = launch_ref._load().mambaish_config(mc) is not None
        why = "loads, but no mamba-path config"
    assert PRESETS[name].sizable == loads, (PRESETS[name].reason, why)
