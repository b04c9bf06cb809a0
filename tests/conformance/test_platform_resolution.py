"""Conformance: `launch.resolve` on every catalog GPU against SGLang 0.5.23's own
`ServerArgs(...).resolve_once()` + `check_server_args()`, with the device stand-in of
tests/conformance/launch_ref.py (`_device`) answering as that GPU.

The probes the stand-in answers (every other probe is SGLang's own code):
launch_ref.DEVICE_PROBES, printed by `python -m tests.conformance.test_platform_resolution`.

Cases: every sizable family (the Hopper conformance's model variants) x the flag sets the
Hopper conformance generates (TP, PP, attention DP, speculative, radix off, explicit
mem_fraction_static, page size, ...), a seeded slice of them per GPU, plus the HIP env
switches. Every resolved field is compared, the attention backend too, and a plan of
each platform's headline case is checked against the numbers SGLang's resolution gives.

    .venv/bin/python -m pytest tests/conformance/test_platform_resolution.py -q -p no:cacheprovider
    .venv/bin/python -m tests.conformance.test_platform_resolution     # every mismatch, the counts, the probes
"""

from __future__ import annotations

import json
import random

import pytest

from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service.solver import gpus
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.launch import resolve
from mambasizer.service.solver.platform import of_gpu
from tests.conformance import test_launch_resolution as hopper

# The Hopper parts that share H200's rules are checked on fewer cases: their rules are the
# Hopper conformance's, only the capacity differs.
PER_GPU = {"h20": 40, "h800": 40, "gh200": 40, "gh200-144gb": 20, "h100": 20, "h100-nvl": 20, "h200": 20}
DEFAULT_PER_GPU = 180
SEED = 18
# A capacity for the unconfirmed parts (a caller's gpu_memory_mib): the figures the research
# note quotes for them.
UNCONFIRMED_MIB = {"gh200-144gb": 146432, "mi325x": 262128, "mi355x": 294896}


def capacity(gpu: gpus.Gpu) -> int:
    return gpu.memory_mib if gpu.memory_mib is not None else UNCONFIRMED_MIB[gpu.name]


def device_of(gpu: gpus.Gpu) -> dict:
    return {"capability": gpu.capability, "runtime": gpu.runtime, "name": gpu.product, "integrated": gpu.integrated}


def generate_cases() -> list[dict]:
    pool = hopper.generate_cases()
    rng = random.Random(SEED)
    cases = []
    for gpu in gpus.CATALOG.values():
        n = PER_GPU.get(gpu.name, DEFAULT_PER_GPU)
        # The first cases cover every model at default flags and a few fixed shapes; the rest
        # are a seeded sample of the Hopper flag sets.
        per_family: dict[str, dict] = {}
        for c in pool:  # one case of every family first, whatever n is
            per_family.setdefault(hopper._layout(c["model"]).family, c)
        firsts = list(per_family.values())
        picked = firsts + pool[: 2 * len(hopper.MODELS)][: max(n // 2 - len(firsts), 0)] + rng.sample(pool, n - n // 2)
        for c in picked:
            env = dict(c["env"])
            if gpu.runtime == "hip" and rng.random() < 0.3:
                env["SGLANG_AITER_KV_CACHE_LAYOUT"] = rng.choice(["vectorized_5d", "VECTORIZED_5D", "nhd"])
            if gpu.runtime == "hip" and "mem_fraction_static" in c["server_args"] and rng.random() < 0.5:
                env["SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"] = True
            cases.append({**c, "id": f"{gpu.name}-{c['id']}", "env": env, "gpu": gpu.name, "gpu_mib": capacity(gpu)})
    return cases


CASES = generate_cases()


def ours(case: dict) -> dict:
    return _ours_with(case, of_gpu(gpus.CATALOG[case["gpu"]]))


def _ours_with(case: dict, plat) -> dict:
    layout = hopper._layout(case["model"])
    try:
        launch = resolve(layout, ServerArgs(**case["server_args"]), Env(**case["env"]), gpu_memory_mib=case["gpu_mib"],
                         draft_layers=None, needs_mfs=True, plat=plat)
    except PlanInputError as exc:
        return {"rejected": "PlanInputError", "message": str(exc)}
    if launch.rejections:
        return {"rejected": launch.rejections[0].exception, "message": launch.rejections[0].message}
    return {**hopper.launch_fields(launch), "attention_backend": launch.attention_backend}


_THEIRS: dict[str, dict] = {}


def theirs(case: dict) -> dict:
    from tests.conformance.launch_ref import resolve_with_sglang

    key = json.dumps([case["model"], case["server_args"], case["env"], case["gpu"], case["gpu_mib"]], sort_keys=True, default=str)
    if key not in _THEIRS:
        gpu = gpus.CATALOG[case["gpu"]]
        _THEIRS[key] = resolve_with_sglang(hopper.MODELS[case["model"]], case["server_args"], case["env"], case["gpu_mib"], device=device_of(gpu))
    return _THEIRS[key]


def diff(case: dict) -> str | None:
    a, b = ours(case), theirs(case)
    if a["rejected"] or b["rejected"]:
        if hopper._same_rejection(a, b):
            return None
        return (f"rejected: ours={a['rejected']} ({a.get('message', '')[:160]}) "
                f"sglang={b['rejected']} ({b.get('message', '')[:160]} | {b.get('check', '')})")
    bad = {k: (a.get(k), b[k]) for k in b if a.get(k) != b[k]}
    return None if not bad else "; ".join(f"{k}: ours={v[0]!r} sglang={v[1]!r}" for k, v in bad.items())


@pytest.fixture(scope="module", autouse=True)
def _sglang():
    import importlib.util

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("the sglang 0.5.23 wheel is not installed (pip install --no-deps sglang==0.5.23)")
    from tests.conformance import launch_ref

    launch_ref._load()


def test_cases_cover_every_gpu_and_family():
    from tests.conformance.launch_ref import DEVICE_PROBES

    # Shown with `pytest -s`: how many cases, and which probes the stand-in answers.
    print(f"\n{len(CASES)} platform-resolution cases over {len(gpus.CATALOG)} catalog GPUs; device probes stood in:")
    for probe in DEVICE_PROBES:
        print("  -", probe)
    assert {c["gpu"] for c in CASES} == set(gpus.CATALOG)
    for name in gpus.CATALOG:
        fams = {hopper._layout(c["model"]).family for c in CASES if c["gpu"] == name}
        assert len(fams) == 7, (name, fams)


@pytest.mark.parametrize("name", sorted(gpus.CATALOG))
def test_stand_in_platform_facts_are_sglangs(name):
    """SGLang's own probes, answering from the stand-in, give the facts platform.py assumes."""
    from tests.conformance.launch_ref import platform_facts

    gpu = gpus.CATALOG[name]
    p = of_gpu(gpu)
    facts = platform_facts(gpu.capability, gpu.runtime)
    assert facts["is_hip"] == p.is_hip and facts["is_cuda"] == p.is_cuda
    assert facts["is_hopper_with_cuda_12_3"] == p.is_hopper and facts["is_sm100"] == p.is_sm100
    assert facts["is_blackwell"] == p.is_blackwell and facts["has_flashinfer"] == p.has_flashinfer


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_platform_resolution_matches_sglang(case):
    problem = diff(case)
    assert problem is None, f"{case['gpu']} {case['model']} {case['server_args']} env={case['env']}: {problem}"


if __name__ == "__main__":
    import collections

    from tests.conformance.launch_ref import DEVICE_PROBES

    print("device probes stood in:")
    for p in DEVICE_PROBES:
        print("  -", p)
    bad = 0
    kinds: collections.Counter = collections.Counter()
    for c in CASES:
        d = diff(c)
        if d:
            bad += 1
            kinds[(c["gpu"], d.split(":")[0])] += 1
            print(c["id"], c["server_args"], c["env"], "->", d)
    print(f"{bad} / {len(CASES)} mismatches over {len(gpus.CATALOG)} GPUs", dict(kinds))
