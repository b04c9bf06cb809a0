"""Conformance: the block-scaled KV caches (`--kv-cache-dtype mxfp8 | nvfp4 | fp4_mx_block16`)
against SGLang 0.5.23's own code.

* sizing (MXFP8): on seeded generated layouts (tests/conformance/cases.py: every family, TP,
  PP, attention DP, speculative drafts, page sizes), SGLang's own `_compute_cell_size` and the
  rest of its sizing (`sglang_ref.reference_plan`) against our plan's per-stage KV cell and
  token count: FP8 data plus one UE8M0 scale per 32 elements on MHA layers, no scales on MLA;
* resolution: SGLang's own `resolve_once()` + `check_server_args()` on H200, B200, B300 and
  RTX PRO 6000 (tests/conformance/launch_ref.py) for each of the three dtypes: where SGLang
  refuses, ours refuses with the same exception and words; where SGLang starts an FP4 cache,
  ours refuses it as not modelled (counted, printed), and an MXFP8 start resolves equally.

    .venv/bin/python -m pytest tests/conformance/test_block_scaled_kv_conformance.py -q -p no:cacheprovider -s
"""

from __future__ import annotations

import collections
import random

import pytest

import cases
import sglang_ref
from mambasizer.service.planner import plan
from mambasizer.service.solver.errors import PlanInputError
from tests.conformance import test_launch_resolution as hopper
from tests.conformance import test_platform_resolution as plat

SEED = 4242
N_SIZING = 80
GPUS = ("h200", "b200", "b300", "rtx-pro-6000")


def test_mxfp8_cell_and_tokens_equal_sglangs():
    compared, both_refused = 0, 0
    problems = []
    for case in cases.generate_cases(N_SIZING, SEED):
        req = cases.wire(case)
        req["server_args"]["kv_cache_dtype"] = "mxfp8"
        ref = sglang_ref.reference_plan(req)
        try:
            ours = plan(req)  # off Blackwell SGLang refuses mxfp8 at launch; the figures are still the sizing's
        except PlanInputError:
            assert ref["error"] is not None
            both_refused += 1
            continue
        if ref["error"] is not None:
            both_refused += 1
            continue
        cells = [s["kv_cell_bytes"] for s in ref["stages"]]
        if [s.kv_cell_bytes for s in ours.stages] != cells or ours.max_total_num_tokens != ref["max_total_num_tokens"]:
            problems.append(f"{case['_id']}: cells ours {[s.kv_cell_bytes for s in ours.stages]} sglang {cells}; "
                            f"tokens ours {ours.max_total_num_tokens} sglang {ref['max_total_num_tokens']}")
        compared += 1
    print(f"\nmxfp8 sizing: {compared} plans equal to SGLang's cell and tokens, {both_refused} refused by both")
    assert not problems, problems[:5]
    assert compared >= 40


def _resolution_cases() -> list[dict]:
    pool = hopper.generate_cases(400, seed=SEED)
    rng = random.Random(SEED)
    out = []
    for gpu_name in GPUS:
        gpu = plat.gpus.CATALOG[gpu_name]
        for c in rng.sample(pool, 45):
            sa = {k: v for k, v in c["server_args"].items() if k != "kv_cache_dtype"}
            sa["kv_cache_dtype"] = rng.choice(["mxfp8", "nvfp4", "fp4_mx_block16"])
            if rng.random() < 0.3:
                sa["attention_backend"] = rng.choice(["triton", "flashinfer", "fa3"])
            elif "attention_backend" in sa and rng.random() < 0.5:
                del sa["attention_backend"]
            out.append({**c, "id": f"{gpu_name}-{c['id']}", "server_args": sa, "gpu": gpu_name, "gpu_mib": plat.capacity(gpu)})
    return out


@pytest.fixture(scope="module")
def _sglang_launch():
    from tests.conformance import launch_ref

    launch_ref._load()


def test_block_scaled_kv_resolution_matches_sglang(_sglang_launch):
    outcomes: collections.Counter = collections.Counter()
    problems = []
    for case in _resolution_cases():
        a, b = plat.ours(case), plat.theirs(case)
        kv = case["server_args"]["kv_cache_dtype"]
        if a["rejected"] == "PlanInputError" and "is not modelled here" in a["message"] and b["rejected"] is None:
            assert kv in ("nvfp4", "fp4_mx_block16")
            outcomes[(kv, "SGLang starts; refused as not modelled")] += 1
            continue
        outcomes[(kv, b["rejected"] or "started")] += 1
        d = plat.diff(case)
        if d:
            problems.append(f"{case['id']} {case['server_args']}: {d}")
    print(f"\nblock-scaled KV resolution, SGLang's outcome per dtype: {dict(sorted(outcomes.items()))}")
    assert not problems, "\n".join(problems[:8]) + f"\n... {len(problems)} mismatches"
    assert outcomes[("mxfp8", "started")] > 10 and outcomes[("mxfp8", "ValueError")] > 5
    assert outcomes[("nvfp4", "RuntimeError")] > 0
