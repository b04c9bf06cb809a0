"""Conformance: `launch.resolve` on every catalog GPU against SGLang 0.5.23's own
`ServerArgs(...).resolve_once()` + `check_server_args()`, with the device stand-in of
tests/conformance/launch_ref.py (`_device`) answering as that GPU.

The probes the stand-in answers (every other probe is SGLang's own code):
launch_ref.DEVICE_PROBES, printed by `python -m tests.conformance.test_platform_resolution`.

Cases: every sizable family (the Hopper conformance's model variants) on every catalog part,
plus the flag sets the Hopper conformance generates (TP, PP, attention DP, speculative, radix
off, explicit mem_fraction_static, page size, ...): in CI a seeded slice of PER_CLASS of them
per capability class (gpus.CLASSES) shared among the class's parts; with
MAMBASIZER_PLATFORM_FULL=1, up to FULL_PER_GPU on every part. Plus the HIP env switches. Every resolved field is compared, the attention backend too, and a plan of
each platform's headline case is checked against the numbers SGLang's resolution gives.

    .venv/bin/python -m pytest tests/conformance/test_platform_resolution.py -q -p no:cacheprovider
    .venv/bin/python -m tests.conformance.test_platform_resolution     # every mismatch, the counts, the probes
    MAMBASIZER_PLATFORM_FULL=1 .venv/bin/python -m tests.conformance.test_platform_resolution   # the full set
"""

from __future__ import annotations

import collections
import json
import os
import random

import pytest

from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service.solver import gpus
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.launch import resolve
from mambasizer.service.solver.platform import of_gpu
from tests.conformance import test_launch_resolution as hopper

# CI runs a deterministic sample per capability class (every family on every part, plus a
# seeded slice of the Hopper flag sets per class); MAMBASIZER_PLATFORM_FULL=1 runs the full
# set (up to FULL_PER_GPU seeded flag sets on every part), as the research review did.
FULL = os.environ.get("MAMBASIZER_PLATFORM_FULL", "") not in ("", "0")
PER_CLASS = 36  # seeded flag sets per class in CI, shared among the class's parts
FULL_PER_GPU = 180
SEED = 18
# A capacity for the unconfirmed parts (a caller's gpu_memory_mib): the figure the research
# note quotes for the part, else its class sibling's; the class's rules read the capacity
# only through its bracket (handle_gpu_memory_settings).
UNCONFIRMED_MIB = {
    "gh200-144gb": 146432, "mi325x": 262128, "mi355x": 294896, "mi350x": 294896, "mi300a": 96336, "h100-pcie": 81559,
    "rtx-6000-ada": 49140, "rtx-a6000": 49140, "l4": 23034, "radeon-pro-w7900": 49136, "rx-7900-xtx": 24560,
    "strix-halo": 98304,
}


def capacity(gpu: gpus.Gpu) -> int:
    return gpu.memory_mib if gpu.memory_mib is not None else UNCONFIRMED_MIB[gpu.name]


def device_of(gpu: gpus.Gpu) -> dict:
    return {"capability": gpu.capability, "runtime": gpu.runtime, "name": gpu.product, "integrated": gpu.integrated,
            "gcn_arch": gpu.gcn_arch}


def _parts_by_class() -> dict[str, list[gpus.Gpu]]:
    out: dict[str, list[gpus.Gpu]] = {c: [] for c in gpus.CLASSES}
    for gpu in gpus.CATALOG.values():
        out[gpu.device_class].append(gpu)
    return out


def _family_firsts() -> list[dict]:
    """The first Hopper conformance case of every family."""
    per_family: dict[str, dict] = {}
    for c in hopper.generate_cases():
        per_family.setdefault(hopper._layout(c["model"]).family, c)
    return list(per_family.values())


def generate_cases() -> list[dict]:
    pool = hopper.generate_cases()
    rng = random.Random(SEED)
    firsts = _family_firsts()  # one case of every family first, on every part
    cases = []
    for cls, parts in _parts_by_class().items():
        n = FULL_PER_GPU * len(parts) if FULL else PER_CLASS
        sample = pool[: 2 * len(hopper.MODELS)][: n // 2] + rng.sample(pool, n - n // 2)
        for i, gpu in enumerate(parts):
            mine = firsts + sample[i::len(parts)]  # the class's sample shared among its parts
            for c in mine:
                env = dict(c["env"])
                if gpu.runtime == "hip" and rng.random() < 0.3:
                    env["SGLANG_AITER_KV_CACHE_LAYOUT"] = rng.choice(["vectorized_5d", "VECTORIZED_5D", "nhd"])
                if gpu.runtime == "hip" and "mem_fraction_static" in c["server_args"] and rng.random() < 0.5:
                    env["SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION"] = True
                cases.append({**c, "id": f"{gpu.name}-{c['id']}", "env": env, "gpu": gpu.name, "gpu_mib": capacity(gpu), "class": cls})
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

    # Shown with `pytest -s`: how many cases per class, and which probes the stand-in answers.
    counts = collections.Counter(c["class"] for c in CASES)
    print(f"\n{len(CASES)} platform-resolution cases over {len(gpus.CATALOG)} catalog GPUs ({'full' if FULL else 'CI sample'}); per class: "
          + ", ".join(f"{cls} {counts[cls]}" for cls in gpus.CLASSES))
    print("device probes stood in:")
    for probe in DEVICE_PROBES:
        print("  -", probe)
    assert {c["gpu"] for c in CASES} == set(gpus.CATALOG) and set(counts) == set(gpus.CLASSES)
    for name in gpus.CATALOG:
        fams = {hopper._layout(c["model"]).family for c in CASES if c["gpu"] == name}
        assert len(fams) == 7, (name, fams)


@pytest.mark.parametrize("name", sorted(gpus.CATALOG))
def test_stand_in_platform_facts_are_sglangs(name):
    """SGLang's own probes, answering from the stand-in, give the facts platform.py assumes."""
    from tests.conformance.launch_ref import platform_facts

    gpu = gpus.CATALOG[name]
    p = of_gpu(gpu)
    facts = platform_facts(gpu.capability, gpu.runtime, gpu.gcn_arch)
    assert facts["is_hip"] == p.is_hip and facts["is_cuda"] == p.is_cuda
    assert facts["is_gfx95"] == (gpu.gcn_arch == "gfx950")
    assert facts["is_hopper_with_cuda_12_3"] == p.is_hopper and facts["is_sm100"] == p.is_sm100
    assert facts["is_blackwell"] == p.is_blackwell and facts["has_flashinfer"] == p.has_flashinfer


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_platform_resolution_matches_sglang(case):
    problem = diff(case)
    assert problem is None, f"{case['gpu']} {case['model']} {case['server_args']} env={case['env']}: {problem}"


if __name__ == "__main__":
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
    print("cases per class:", dict(collections.Counter(c["class"] for c in CASES)))


# ------------------------------------------------ Kimi-K3 DCP on every capability class

KIMI_DCP_FLAGS = ({"tp_size": 8, "dcp_size": 8}, {"tp_size": 8, "dcp_size": 8, "page_size": 32},
                  {"tp_size": 8, "dcp_size": 8, "page_size": 16}, {"tp_size": 8, "dcp_size": 4, "disaggregation_mode": "decode"})
KIMI_DCP_CASES = [
    {"id": f"{g.name}-kimi-dcp-{i}", "model": "kimi-k3", "server_args": sa, "env": {}, "gpu": g.name, "gpu_mib": capacity(g)}
    for g in (parts[0] for parts in _parts_by_class().values()) for i, sa in enumerate(KIMI_DCP_FLAGS)
]


@pytest.mark.parametrize("case", KIMI_DCP_CASES, ids=[str(c["id"]) for c in KIMI_DCP_CASES])
def test_kimi_k3_dcp_resolves_as_sglang_on_every_class(case):
    """SGLang's Kimi-K3 DCP override (prefill trtllm_mla, decode cutedsl_mla) with FlashInfer
    >= 0.6.17 stood in (0.5.23's CUDA wheel requires flashinfer_python 0.7.2): it starts on
    SM100 / SM103 and is refused everywhere else, as ours."""
    from tests.conformance.test_disaggregation_conformance import flashinfer_with_dcp_mla

    with flashinfer_with_dcp_mla():
        problem = diff(case)
    assert problem is None, f"{case['id']}: {problem}"
    started = ours(case)["rejected"] is None
    assert started == (gpus.CATALOG[case["gpu"]].device_class in ("sm100", "sm103"))


def test_kimi_k3_tp8_dcp8_on_b300_plans_as_sglang_resolves_it():
    """The issue's case: refused before with the Hopper-only error; SGLang 0.5.23 with B300's
    probes starts it with page 64 and mem_fraction_static 0.845 (0.845250625 unrounded)."""
    from mambasizer.service.planner import plan
    from tests.conformance.test_disaggregation_conformance import flashinfer_with_dcp_mla

    case = next(c for c in KIMI_DCP_CASES if c["gpu"] == "b300" and c["server_args"] == {"tp_size": 8, "dcp_size": 8})
    with flashinfer_with_dcp_mla():
        b = theirs(case)
    assert (b["rejected"], b["page_size"], round(b["mem_fraction_static"], 3)) == (None, 64, 0.845)
    p = plan({"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "dcp_size": 8}, "budget": {"gpu": "b300"}})
    assert p.resolved.page_size == 64 and p.resolved.mem_fraction_static == b["mem_fraction_static"]
    assert p.resolved.gpu == "b300" and p.resolved.dcp_size == 8 and p.max_total_num_tokens and p.max_total_num_tokens > 0


# ------------------------------------------------ every part by name, through the planner

def _by_name_cases() -> list[dict]:
    firsts = {c["id"] for c in _family_firsts()}
    unique = {c["id"]: c for c in CASES if c["id"][len(c["gpu"]) + 1:] in firsts}  # a first may recur in a class's sample
    return list(unique.values())


BY_NAME_CASES = _by_name_cases()


@pytest.mark.parametrize("case", BY_NAME_CASES, ids=[str(c["id"]) for c in BY_NAME_CASES])
def test_every_part_plans_by_name_as_sglang_resolves_it(case):
    """plan() with budget.gpu naming the part (its capacity beside it where unconfirmed): the
    resolution it reports is SGLang's own with that part's probes stood in."""
    from mambasizer.service.planner import plan

    gpu = gpus.CATALOG[case["gpu"]]
    budget: dict = {"gpu": gpu.name, "free_gib_before_load": 20.0, "free_gib_after_load": 10.0, "gpu_memory_mib": case["gpu_mib"]}
    p = plan({"model": {"hf_config": hopper.MODELS[case["model"]]}, "server_args": case["server_args"], "env": case["env"], "budget": budget})
    b = theirs(case)
    assert p.resolved.gpu == gpu.name and p.device is not None and p.device.device_class == gpu.device_class
    if b["rejected"]:
        assert p.error is not None and p.error.exception == b["rejected"], (p.error, b)
        return
    assert (p.resolved.page_size, p.resolved.attention_backend, p.resolved.mem_fraction_static) == (
        b["page_size"], b["attention_backend"], b["mem_fraction_static"])
