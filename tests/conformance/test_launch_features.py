"""Conformance: the launch features of issue 28 as resolution inputs, against SGLang
0.5.23's own `ServerArgs(...).resolve_once()` + `check_server_args()` (launch_ref.py):

* the linear-attention kernels (`--linear-attn-backend` and its decode / prefill / verify
  overrides): a base backend other than triton drops the extra_buffer strategy (auto ->
  no_buffer with overlap off; an explicit extra_buffer refused), the SM100+ dtype checks,
  flashkda's decode refusal, ReplaySSM's decode-backend checks;
* `--enable-int8-mamba-checkpoint` with `--enable-hierarchical-cache` (refused) and
  `--mamba-max-states-per-path` (0 and < -1 refused);
* `--enable-deterministic-inference`: the fallback attention backend and the radix cache off
  behind a backend without deterministic radix support.

Cases: the Hopper conformance's generated flag sets (every family, TP/PP/DP, speculative,
strategies, page sizes, ...) with the feature flags drawn on top, on H200, B200, B300 and
RTX PRO 6000. Every resolved field and the attention backend are compared, and a refusal
must be SGLang's (same exception, same words). `--linear-attn-prefill-backend flashinfer`
on SM100+ is not drawn there: SGLang refuses it below CUDA 13, which the catalog does not
record (the plan warns instead).

    .venv/bin/python -m pytest tests/conformance/test_launch_features.py -q -p no:cacheprovider -s
"""

from __future__ import annotations

import collections
import random

import pytest

from mambasizer.service.solver import gpus
from tests.conformance import test_launch_resolution as hopper
from tests.conformance import test_platform_resolution as plat

SEED = 2028
GPUS = {"h200": 150, "b200": 90, "b300": 30, "rtx-pro-6000": 30}
BACKENDS = ("triton", "cutedsl", "flashinfer", "flashkda", "nvidia_kda", "ptx_kda", "helion")


def generate_cases() -> list[dict]:
    pool = hopper.generate_cases(600, seed=SEED)
    rng = random.Random(SEED)
    cases = []
    for gpu_name, n in GPUS.items():
        gpu = gpus.CATALOG[gpu_name]
        sm100_plus = gpu.capability[0] >= 10
        for c in rng.sample(pool, n):
            sa = dict(c["server_args"])
            r = rng.random()
            if r < 0.45:
                sa["linear_attn_backend"] = rng.choice(BACKENDS)
            if rng.random() < 0.2:
                sa["linear_attn_decode_backend"] = rng.choice(BACKENDS)
            if rng.random() < 0.15:
                choices = [b for b in BACKENDS if not (sm100_plus and b == "flashinfer")]
                sa["linear_attn_prefill_backend"] = rng.choice(choices)
            if rng.random() < 0.15:
                sa["linear_attn_verify_backend"] = rng.choice(BACKENDS + ("nv_cutedsl",))
            if sm100_plus and (sa.get("linear_attn_backend") == "flashinfer" and "linear_attn_prefill_backend" not in sa):
                sa["linear_attn_prefill_backend"] = "triton"
            if rng.random() < 0.25:
                sa["enable_int8_mamba_checkpoint"] = True
                if rng.random() < 0.4:
                    sa["enable_hierarchical_cache"] = True
            if rng.random() < 0.12:
                sa["mamba_max_states_per_path"] = rng.choice([-5, -1, 0, 3])
            if rng.random() < 0.2:
                sa["enable_deterministic_inference"] = True
            cases.append({**c, "id": f"{gpu_name}-{c['id']}", "server_args": sa, "gpu": gpu_name, "gpu_mib": plat.capacity(gpu)})
    return cases


CASES = generate_cases()


@pytest.fixture(scope="module", autouse=True)
def _sglang():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed (pip install --no-deps sglang==0.5.23)")
    from tests.conformance import launch_ref

    launch_ref._load()


def test_feature_resolution_matches_sglang():
    problems = []
    outcomes: collections.Counter = collections.Counter()
    for case in CASES:
        d = plat.diff(case)
        b = plat.theirs(case)
        sa = case["server_args"]
        feature = ("linear_attn" if any(k.startswith("linear_attn") for k in sa) else
                   "int8" if sa.get("enable_int8_mamba_checkpoint") else
                   "deterministic" if sa.get("enable_deterministic_inference") else
                   "states_per_path" if "mamba_max_states_per_path" in sa else "none")
        outcomes[(feature, b["rejected"] or "started")] += 1
        if d:
            problems.append(f"{case['id']} {sa}: {d}")
    print(f"\n{len(CASES)} feature cases; SGLang's outcomes per feature: {dict(sorted(outcomes.items()))}")
    assert not problems, "\n".join(problems[:10]) + f"\n... {len(problems)} mismatches"
    # The features decide outcomes both ways.
    assert outcomes[("linear_attn", "started")] > 20 and outcomes[("linear_attn", "ValueError")] > 3
    assert outcomes[("int8", "ValueError")] > 0


def test_flashinfer_base_backend_is_no_buffer_without_overlap():
    """The issue's headline: Qwen3-Next with --linear-attn-backend flashinfer resolves to
    no_buffer with overlap off (3 slots per request) where triton gives extra_buffer (5)."""
    base = {"id": "x", "model": "qwen3-next-80b-a3b-instruct", "env": {}, "gpu": "h200", "gpu_mib": 143771}
    tri = plat.theirs({**base, "server_args": {"tp_size": 4}})
    fi = plat.theirs({**base, "server_args": {"tp_size": 4, "linear_attn_backend": "flashinfer"}})
    ours_fi = plat.ours({**base, "server_args": {"tp_size": 4, "linear_attn_backend": "flashinfer"}})
    assert (tri["strategy"], tri["disable_overlap_schedule"]) == ("extra_buffer", False)
    assert (fi["strategy"], fi["disable_overlap_schedule"]) == ("no_buffer", True)
    assert (ours_fi["strategy"], ours_fi["disable_overlap_schedule"]) == ("no_buffer", True)
