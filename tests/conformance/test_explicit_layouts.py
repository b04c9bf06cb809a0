"""Conformance: an explicit `layout` is resolved and sized as the SGLang architecture it
names (issue 10 §5), hosted in the SGLang 0.5.23 wheel as that architecture.

Each case is a model SGLang loads (a config.json of a text architecture an explicit layout
may name), rewritten as the explicit layout it is: its layer ids, its per-rank state shapes
at the case's TP, its KV spec, context length, dtype and MTP layers, `architecture` set to
the config's. SGLang runs on the config.json; ours on the explicit layout. They must agree:

* on launch resolution (SGLang's `ServerArgs.resolve_once` + `check_server_args` on raw
  flags, tests/conformance/launch_ref.py): the radix-cache strategy, overlap, page size,
  the automatic mem_fraction_static and every refusal, as tests/conformance/
  test_launch_resolution.py checks them for the config;
* on the sizing (SGLang's own configurator, tests/conformance/sglang_ref.py), field by
  field, as tests/conformance/test_conformance.py checks it for the config.

Before `layout.architecture`, explicit layouts resolved as an architecture SGLang does not
know ("explicit"): the strategy step was skipped, so `auto` with a page size > 1 or PP gave
mamba_ratio 3 where SGLang gives 4, and `no_buffer` with overlap on was not refused.
"""

from __future__ import annotations

import os

import pytest

import cases
import test_conformance
import test_launch_resolution as launch_cases
from mambasizer.schemas.request import (
    CONFIG_SSM_DTYPE_ARCHITECTURES,
    DEFAULT_LAYOUT_ARCHITECTURE,
    LAYOUT_ARCHITECTURES,
    Layout,
)
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_explicit, layout_from_hf_config
from mambasizer.service.solver.launch import mamba_chunk_size
from mambasizer.service.solver.layout import ModelLayout

SEED = int(os.environ.get("MAMBASIZER_CONFORMANCE_SEED", "20261130"))
N_SIZING = int(os.environ.get("MAMBASIZER_EXPLICIT_CASES", "600"))


def explicit_layout(layout: ModelLayout, tp: int, attn_dp: int) -> dict | None:
    """The explicit layout (wire form) of a config's layout at this TP, or None where the
    layout cannot say the same thing: a multimodal wrapper, state shapes SGLang refuses at
    this TP."""
    if layout.architecture not in LAYOUT_ARCHITECTURES or layout.is_multimodal:
        return None
    state_tp = tp if layout.state_tp == "tp" else tp // attn_dp
    try:
        state = layout.state_at(state_tp, "bfloat16", "float32")
    except PlanInputError:
        return None
    kv = layout.kv
    out: dict = {
        "num_hidden_layers": layout.num_hidden_layers,
        "mamba_layer_ids": list(layout.mamba_layer_ids),
        "full_attention_layer_ids": list(layout.full_attention_layer_ids),
        "state": {
            "conv_shapes": [list(c) for c in state.conv_shapes],
            "temporal_shape": list(state.temporal),
            "num_k_heads_per_tp": state.num_k_heads_per_tp,
        },
        "kv": (
            {"type": "mla", "kv_lora_rank": kv.kv_lora_rank, "qk_rope_head_dim": kv.qk_rope_head_dim}
            if kv.kind == "mla"
            else {"type": "mha", "num_kv_heads": kv.total_kv_heads, "head_dim": kv.head_dim, "v_head_dim": kv.v_head_dim}
        ),
        "context_length": layout.derived_context_len,
        "dtype": layout.model_dtype,
        "linear_kind": layout.linear_kind,
        "architecture": layout.architecture,
        "num_nextn_predict_layers": layout.num_nextn_predict_layers,
    }
    if layout.config_ssm_dtype is not None and layout.architecture in CONFIG_SSM_DTYPE_ARCHITECTURES:
        out["mamba_ssm_dtype"] = layout.config_ssm_dtype
    if mamba_chunk_size(layout_from_explicit(Layout.model_validate(out))) != mamba_chunk_size(layout):
        out["mamba_chunk_size"] = mamba_chunk_size(layout)  # the config sets its own
    return out


# --------------------------------------------------------------------------- launch resolution

def _resolution_cases() -> list[tuple[dict, dict]]:
    out = []
    for case in launch_cases.CASES:
        sa = case["server_args"]
        lay = explicit_layout(launch_cases._layout(case["model"]), sa.get("tp_size", 1), sa.get("attn_dp_size", 1))
        if lay is not None:
            out.append((case, lay))
    return out


RESOLUTION = _resolution_cases()


@pytest.fixture(scope="module")
def _launch_oracle():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed")
    from tests.conformance import launch_ref

    launch_ref._load()


def test_resolution_cases_cover_every_layout_architecture_and_the_strategy_rules():
    archs = {lay["architecture"] for _, lay in RESOLUTION}
    assert archs >= {"NemotronHForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM", "Qwen3NextForCausalLM", "KimiLinearForCausalLM"}
    sa = [c["server_args"] for c, _ in RESOLUTION]
    assert any((s.get("page_size") or 1) > 1 for s in sa) and any(s.get("pp_size", 1) > 1 for s in sa)
    assert any(s.get("mamba_radix_cache_strategy") == "no_buffer" and not s.get("disable_overlap_schedule") for s in sa)
    assert len(RESOLUTION) > 300


@pytest.mark.parametrize(("case", "lay"), RESOLUTION, ids=[c["id"] for c, _ in RESOLUTION])
def test_explicit_layout_resolves_like_its_architecture_in_sglang(_launch_oracle, case, lay):
    problem = launch_cases.diff(case, layout_from_explicit(Layout.model_validate(lay)))
    assert problem is None, f"{lay['architecture']} {case['server_args']} env={case['env']} gpu={case['gpu_mib']}: {problem}"


# --------------------------------------------------------------------------- sizing

def _sizing_cases() -> list[tuple[dict, dict]]:
    out = []
    for case in cases.generate_cases(N_SIZING, SEED + 1):
        hf = case["model"]["hf_config"]
        try:
            layout = layout_from_hf_config(hf)
        except PlanInputError:
            continue
        sa = case["server_args"]
        lay = explicit_layout(layout, sa.get("tp_size", 1), sa.get("attn_dp_size", 1))
        if lay is not None:
            out.append((case, {**cases.wire(case), "model": {"layout": lay}}))
    return out


SIZING = _sizing_cases()
CHUNK = 50


def test_sizing_cases_cover_the_layout_architectures():
    archs = {req["model"]["layout"]["architecture"] for _, req in SIZING}
    assert archs >= {"NemotronHForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM", "Qwen3NextForCausalLM", "KimiLinearForCausalLM"}
    assert len(SIZING) > N_SIZING // 3


@pytest.mark.parametrize("chunk", range((len(SIZING) + CHUNK - 1) // CHUNK))
def test_explicit_layout_sizes_like_its_architecture_in_sglang(chunk):
    failures = []
    for case, req in SIZING[chunk * CHUNK:(chunk + 1) * CHUNK]:
        problems = test_conformance._compare(case, req)
        if problems:
            failures.append(f"case {case['_id']} ({req['model']['layout']['architecture']}): " + "; ".join(problems))
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:5])


def test_the_default_architecture_follows_the_mixer():
    for kind, arch in DEFAULT_LAYOUT_ARCHITECTURE.items():
        assert LAYOUT_ARCHITECTURES[arch] == kind
