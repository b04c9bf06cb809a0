"""The heart of done: our solver against SGLang 0.5.23's own sizing functions, field by
field, on seeded generated layouts (every family, TP 1-8, PP 1-8 with uneven counts and
custom partitions, attention DP, all three mamba-split branches, spec decoding with and
without ReplaySSM, page sizes, token caps, fp8 KV, bf16/fp16 SSM state, skip-decode-lock,
both budget forms, and the error cases).

Reproduce one failure: MAMBASIZER_CONFORMANCE_SEED=<seed> and the case id in the message.
More cases: MAMBASIZER_CONFORMANCE_CASES=<n> (default 2,000 per run).
"""

from __future__ import annotations

import json
import os
from math import prod

import pytest

import cases
import sglang_ref
from mambasizer.service.planner import plan
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.specs import DTYPE_BYTES

SEED = int(os.environ.get("MAMBASIZER_CONFORMANCE_SEED", "20261130"))
N_CASES = int(os.environ.get("MAMBASIZER_CONFORMANCE_CASES", "2000"))
CHUNK = 100

# Where our solver refuses input before sizing (PlanInputError), SGLang raises while it
# builds the model or the state shapes: the field tells which exception that is.
INPUT_ERROR_EXCEPTIONS = {
    "env.SGLANG_PP_LAYER_PARTITION": {"ValueError"},
    "server_args.tp_size": {"AssertionError", "ValueError"},
}

TOP_LEVEL = (
    "max_mamba_cache_size",
    "mamba_ratio",
    "mamba_cache_per_req_bytes",
    "rest_gib",
    "kv_budget_bytes",
    "max_total_num_tokens",
    "max_running_requests",
    "pp_max_micro_batch_size",
)


@pytest.fixture(scope="module")
def generated():
    return cases.generate_cases(N_CASES, SEED)


def _compare(case: dict, ours_request: dict | None = None) -> list[str]:
    """Our plan against SGLang's sizing of the case; `ours_request` (the same model in
    another form: tests/conformance/test_explicit_layouts.py) is planned in its place."""
    request = cases.wire(case)
    ref = sglang_ref.reference_plan(request)
    problems: list[str] = []
    try:
        ours = plan(ours_request if ours_request is not None else request)
    except PlanInputError as exc:
        if ref["error"] is None:
            return [f"we refused input ({exc}) but SGLang sized it"]
        allowed = INPUT_ERROR_EXCEPTIONS.get(exc.field)
        if allowed is not None and ref["error"]["exception"] not in allowed:
            problems.append(f"input error on {exc.field} but SGLang raised {ref['error']['exception']}: {ref['error']['message']}")
        return problems

    if ref["error"] is not None:
        if ours.feasible:
            return [f"SGLang raised {ref['error']['exception']}: {ref['error']['message']!r}, we planned it feasible"]
        assert ours.error is not None, "an infeasible plan carries its error"
        if ours.error.exception != ref["error"]["exception"]:
            problems.append(f"exception {ours.error.exception} != SGLang's {ref['error']['exception']}")
        rest_form_value_error = request["budget"].get("rest_gib") is not None and ref["error"]["exception"] == "ValueError"
        if not rest_form_value_error and ours.error.message != ref["error"]["message"]:
            problems.append(f"message {ours.error.message!r} != SGLang's {ref['error']['message']!r}")
        return problems
    if not ours.feasible:
        assert ours.error is not None, "an infeasible plan carries its error"
        return [f"we say SGLang would not start ({ours.error.exception}: {ours.error.message}) but it does"]

    for key in TOP_LEVEL:
        if getattr(ours, key) != ref[key]:
            problems.append(f"{key}: ours {getattr(ours, key)!r} != SGLang {ref[key]!r}")
    ours_stage_charge = {s.stage_per_req_bytes for s in ours.stages}
    if ours_stage_charge != {ref["stage_per_req_bytes"]}:
        problems.append(f"stage_per_req_bytes: ours {ours_stage_charge} != SGLang {ref['stage_per_req_bytes']}")
    if len(ours.stages) != len(ref["stages"]):
        return problems + [f"{len(ours.stages)} stages != SGLang's {len(ref['stages'])}"]
    K = ref["max_mamba_cache_size"]
    for o, r in zip(ours.stages, ref["stages"], strict=True):
        for key in ("pp_rank", "start_layer", "end_layer", "mamba_layers", "full_attention_layers", "kv_cell_bytes", "kv_tokens"):
            if getattr(o, key) != r[key]:
                problems.append(f"stage {r['pp_rank']} {key}: ours {getattr(o, key)!r} != SGLang {r[key]!r}")
        # The state SGLang's config reports (per-rank shapes and dtypes), as pool bytes.
        conv = (K + 1) * r["mamba_layers"] * sum(prod(s) for s in r["conv_shape"]) * DTYPE_BYTES[r["conv_dtype"]]
        ssm = (K + 1) * r["mamba_layers"] * prod(r["temporal_shape"]) * DTYPE_BYTES[r["ssm_dtype"]]
        if (o.conv_state_bytes, o.ssm_state_bytes) != (conv, ssm):
            problems.append(f"stage {r['pp_rank']} state bytes: ours {(o.conv_state_bytes, o.ssm_state_bytes)} != SGLang's shapes {(conv, ssm)}")
    ours_warnings = {w for w in ours.warnings if not w.startswith("mambasizer:")}
    if ours_warnings != set(ref["warnings"]):
        problems.append(f"warnings: ours {sorted(ours_warnings)} != SGLang {sorted(set(ref['warnings']))}")
    return problems


@pytest.mark.parametrize("chunk", range((N_CASES + CHUNK - 1) // CHUNK))
def test_solver_matches_sglang(generated, chunk):
    failures = []
    for case in generated[chunk * CHUNK:(chunk + 1) * CHUNK]:
        problems = _compare(case)
        if problems:
            failures.append(f"case {case['_id']} ({case['_family']}, {case['_tags']}):\n  " + "\n  ".join(problems) + "\n  request: " + json.dumps(cases.wire(case))[:1500])
    assert not failures, f"{len(failures)} mismatches (seed {SEED}):\n" + "\n".join(failures[:5])


def test_generated_cases_cover_the_space(generated):
    """The generator really reaches every family, branch, and error class."""
    families = {c["_family"] for c in generated}
    tags = {t for c in generated for t in c["_tags"]}
    assert families >= {"qwen3_next", "qwen3_5", "kimi_linear", "nemotron_h", "falcon_h1", "granitemoehybrid", "lfm2"}
    assert {"spec", "pp_partition", "pp_partition_invalid", "branch_auto", "branch_explicit", "branch_radix_off", "budget_tiny"} <= tags
    sa = [c["server_args"] for c in generated]
    assert {s["tp_size"] for s in sa} >= set(range(1, 9)) - {5, 7} and max(s["pp_size"] for s in sa) == 8
    assert any(s.get("attn_dp_size", 1) > 1 for s in sa)
    assert any(s.get("enable_linear_replayssm_spec") for s in sa)
    assert {s["page_size"] for s in sa} >= {1, 16, 64, 256}
    assert any(s.get("max_total_tokens") for s in sa) and any(s["kv_cache_dtype"].startswith("fp8") for s in sa)
    assert any(c["env"].get("SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK") for c in generated)
    assert any("rest_gib" in c["budget"] for c in generated) and any("free_gib_after_load" in c["budget"] for c in generated)
