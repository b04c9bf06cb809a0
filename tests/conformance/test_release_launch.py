"""Conformance per release: `launch.resolve(..., release=v)` against release v's OWN flag
resolution, run on the CPU in a subprocess that imports that release
(tests/conformance/release_resolve.py; the wheel is fetched once into the cache by
release_wheels.release_source), for every release 0.5.8-0.5.22 (0.5.23 is
tests/conformance/test_launch_resolution.py), all equal:

* the arg_groups era (0.5.19-0.5.22): `ServerArgs(...).resolve_once()` + `check_server_args()`;
* the dataclass era (0.5.8-0.5.18): `ServerArgs(model_path=<config dir>, **flags)`, whose
  `__post_init__` resolves, then `check_server_args()` (fewer fields: see release_resolve.py).

Cases: the seeded flag sets test_launch_resolution generates (every hybrid family, GPU
sizes across the heuristic's brackets), the first N_PER_RELEASE of them that the release can
take, written in its spelling (`--attn-dp-size N` is `--dp-size N --enable-dp-attention`
before 0.5.22; older dests for <=0.5.13); a case using a flag the release lacks, or a value
its parser refuses (`extra_buffer_lazy` before 0.5.13), is left out; plus the regression
cases. Counted apart, not compared: a model class the release does not size
(releases/sizing.py `architectures`: Qwen3.5, GraniteMoeHybrid and LFM2 from 0.5.9,
Kimi-K3 from 0.5.17) or cannot load, and (0.5.9-0.5.10) a release config class that
leaves a sub-config a plain dict under the venv's newer transformers (kw_only dataclass
configs), where the release's ModelConfig reads values its own era would not.

Every resolved field is compared (mem_fraction_static, strategy, extra_buffer, overlap,
max running requests, speculative defaults, chunked prefill, decode graph max_bs, prefill
graph, page size, SSM/conv dtypes, context length, draft KV layers), and refusals by
exception class and message. Per release, `cases, equal` and the branches exercised are
printed (run with -s).

Budget: 15 releases x (one subprocess, ~5 s import + ~0.05 s per case), N_PER_RELEASE = 200
generated cases + 3 regression cases each: about 2,900 cases compared in about 2.5 minutes
on 2 cores (measured 156 s for this file alone, 260 s together with test_release_flags.py
and tests/solver/test_release_profiles.py, on 2 cores shared with other jobs).
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES
from mambasizer.service.sglang_args import PARSER_ONLY_DESTS, RELEASE_DEST_ALIASES, _flags
from mambasizer.service.solver.releases.registry import at_least
from mambasizer.service.solver.releases.sizing import sizing_profile
from tests.conformance.release_wheels import release_source
from tests.conformance.test_launch_resolution import CASES, MODELS, _layout, _same_rejection, ours

ROOT = Path(__file__).resolve().parents[2]
# Every base release before 0.5.23 (post-releases resolve as their base).
RELEASES = tuple(v for v in SUPPORTED_RELEASES if ".post" not in v and v != DEFAULT_RELEASE)
# The release cannot load the model (a family it does not have: part of the sizing profile).
NOT_LOADABLE = ("contains custom code", "layer_types must be either")
N_PER_RELEASE = 200
UNSIZED: collections.Counter = collections.Counter()  # cases left out per release: class not sized

# 0.5.22 ties a defaulted decode-graph max_bs to --max-running-requests (E13): on an H200
# (143771 MiB) at tp 4, mrr 64 gives max_bs 64 instead of 512, 0.903 instead of 0.897.
CLAMP_CASE = {"id": "clamp", "model": "qwen3-next-80b-a3b-instruct", "server_args": {"tp_size": 4, "max_running_requests": 64},
              "env": {}, "gpu_mib": 143771}
# Overlap-schedule boundaries of the dataclass era, on Qwen3-Next (H200): 0.5.8 never routes
# it through the radix handling (overlap stays on), 0.5.9 turns overlap off for no_buffer;
# EAGLE with the radix cache off runs spec v1 (overlap off) up to 0.5.10, spec v2 from 0.5.11.
PLAIN_CASE = {"id": "plain", "model": "qwen3-next-80b-a3b-instruct", "server_args": {}, "env": {}, "gpu_mib": 143771}
EAGLE_CASE = {"id": "eagle", "model": "qwen3-next-80b-a3b-instruct",
              "server_args": {"disable_radix_cache": True, "speculative_algorithm": "EAGLE"}, "env": {}, "gpu_mib": 143771}
REGRESSION_CASES = [CLAMP_CASE, PLAIN_CASE, EAGLE_CASE]


def _release_fields(release: str) -> set[str]:
    _, by_dest = _flags(release)
    return {RELEASE_DEST_ALIASES.get(d, d) for d in by_dest}


def in_release_spelling(case: dict, release: str) -> dict | None:
    """The case's flags as `release`'s ServerArgs names them, or None when it uses a flag
    that release does not have."""
    sa = dict(case["server_args"])
    if not at_least(release, "0.5.22") and "attn_dp_size" in sa:
        dp = sa.pop("attn_dp_size")
        if dp > 1:
            sa.update(dp_size=dp, enable_dp_attention=True)
    if not set(sa) - {"dp_size", "enable_dp_attention"} <= _release_fields(release):
        return None
    _, by_dest = _flags(release)
    older = {ours: theirs for theirs, ours in RELEASE_DEST_ALIASES.items()
             if theirs in by_dest and ours not in by_dest and theirs not in PARSER_ONLY_DESTS}
    spelled = {older.get(k, k): v for k, v in sa.items()}
    for dest, value in spelled.items():
        # A value the release's parser refuses (extra_buffer_lazy before 0.5.13): the launch
        # never gets to resolution there (sglang_args refuses it for that release).
        choices = by_dest[dest].choices if dest in by_dest else None
        if choices is not None and isinstance(value, str) and value not in choices:
            return None
    return {**case, "server_args": spelled}


@cache
def cases_for(release: str) -> tuple[list[dict], list[dict]]:
    """(our cases, the same in the release's spelling)."""
    ours_cases, theirs_cases = [], []
    sizable = sizing_profile(release).architectures
    for case in REGRESSION_CASES + CASES:
        if _layout(case["model"]).architecture not in sizable:
            UNSIZED[release] += 1  # the plan refuses it for this release (check_release)
            continue
        spelled = in_release_spelling(case, release)
        if spelled is None:
            continue
        ours_cases.append(case)
        theirs_cases.append(spelled)
        if len(ours_cases) >= N_PER_RELEASE + len(REGRESSION_CASES):
            break
    return ours_cases, theirs_cases


@cache
def theirs_for(release: str) -> tuple[dict, ...]:
    _, spelled = cases_for(release)
    payload = json.dumps([{**c, "model": MODELS[c["model"]]} for c in spelled])
    env = dict(os.environ, PYTHONPATH=f"{release_source(release)}{os.pathsep}{ROOT}")
    done = subprocess.run(
        [sys.executable, "-m", "tests.conformance.release_resolve"], input=payload, cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return tuple(json.loads(done.stdout))


def _diff(a: dict, b: dict) -> str | None:
    b = {k: v for k, v in b.items() if k != "stale_config"}
    if b.get("check"):
        # The dataclass era asserts on `self.` where 0.5.23's hooks name `view.`: the same check.
        b = {**b, "check": b["check"].replace("self.", "view.")}
    if a["rejected"] or b["rejected"]:
        return None if _same_rejection(a, b) else f"rejected: ours={a['rejected']} {a.get('message', '')[:120]} | sglang={b['rejected']} {b.get('message', '')[:120]}"
    bad = {k: (a.get(k), b[k]) for k in b if a.get(k) != b[k]}
    return None if not bad else "; ".join(f"{k}: ours={v[0]!r} sglang={v[1]!r}" for k, v in bad.items())


def _branches(case: dict, theirs: dict) -> list[str]:
    """The resolution branches a case exercises, as the release resolved it."""
    sa = case["server_args"]
    out = [f"refused:{theirs['rejected']}" if theirs["rejected"] else "resolved"]
    if not theirs["rejected"]:
        out.append(f"strategy:{theirs['strategy']}")
        out += ["extra_buffer"] * bool(theirs["extra_buffer"]) + ["overlap off"] * bool(theirs["disable_overlap_schedule"])
    out += [f"spec:{sa['speculative_algorithm']}"] if sa.get("speculative_algorithm") else []
    out += ["radix off"] * bool(sa.get("disable_radix_cache")) + ["pp>1"] * (sa.get("pp_size", 1) > 1)
    out += ["attn-dp"] * (sa.get("attn_dp_size", 1) > 1) + ["page>1"] * (sa.get("page_size", 1) > 1)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_resolution_equals_the_releases_own(release):
    ours_cases, _ = cases_for(release)
    theirs = theirs_for(release)
    driver = [t["message"] for t in theirs if t["rejected"] == "DriverError"]
    assert not driver, driver[:3]
    mismatches = []
    apart = collections.Counter[str]()
    branches = collections.Counter[str]()
    for case, b in zip(ours_cases, theirs, strict=True):
        if b["rejected"] and any(m in b.get("message", "") for m in NOT_LOADABLE):
            apart["model not loadable by the release"] += 1
            continue
        if b.get("stale_config"):
            apart["release config class vs the venv's transformers"] += 1
            continue
        branches.update(_branches(case, b))
        d = _diff(ours(case, release=release), b)
        if d:
            mismatches.append(f"{case['id']} {case['model']} {case['server_args']} gpu={case['gpu_mib']}: {d}")
    compared = len(ours_cases) - sum(apart.values())
    apart["model class the release does not size (of the generated cases)"] = UNSIZED[release]
    print(f"\nsglang {release}: cases {compared}, equal {compared - len(mismatches)}; counted apart: {dict(apart)}")
    print(f"  branches: {dict(sorted(branches.items()))}")
    assert compared >= 100, f"only {compared} cases compared for {release}"
    assert not mismatches, "\n".join(mismatches[:10])


@pytest.mark.parametrize("release, max_bs, mfs", [("0.5.21", 512, 0.897), ("0.5.22", 64, 0.903)])
def test_decode_graph_max_bs_follows_max_running_requests_from_0_5_22(release, max_bs, mfs):
    """E13, in numbers, by ours and by the release's own resolution."""
    mine = ours(CLAMP_CASE, release=release)
    assert (mine["decode_cuda_graph_max_bs"], mine["mem_fraction_static"]) == (max_bs, mfs)
    theirs = theirs_for(release)[0]  # CLAMP_CASE leads every release's cases
    assert (theirs["decode_cuda_graph_max_bs"], theirs["mem_fraction_static"]) == (max_bs, mfs)


@pytest.mark.parametrize("release, mfs", [("0.5.14", 0.9), ("0.5.15", 0.897)])
def test_qwen3_next_prefill_graph_term_from_0_5_15_by_the_releases_own_code(release, mfs):
    """E7 in numbers: 0.5.15's breakable prefill graph costs Qwen3-Next 58 sizes * 8 MB
    = 464 MB on an H200 at tp 4 (chunked prefill 8192): mem_fraction_static 0.900 -> 0.897,
    by ours and by 0.5.14's / 0.5.15's own `ServerArgs.__post_init__`."""
    assert ours(CLAMP_CASE, release=release)["mem_fraction_static"] == mfs
    assert theirs_for(release)[0]["mem_fraction_static"] == mfs


@pytest.mark.parametrize("release, case, overlap_off", [
    ("0.5.8", PLAIN_CASE, False), ("0.5.9", PLAIN_CASE, True),
    ("0.5.10", EAGLE_CASE, True), ("0.5.11", EAGLE_CASE, False),
])
def test_overlap_boundaries_of_the_dataclass_era(release, case, overlap_off):
    """The overlap schedule at 0.5.8 -> 0.5.9 (Qwen3-Next's no_buffer handling) and 0.5.10 ->
    0.5.11 (spec v2 by default), by ours and by the release's own `ServerArgs`; the strategy
    is no_buffer throughout (`auto` resolves only from 0.5.14)."""
    mine = ours(case, release=release)
    ours_cases, _ = cases_for(release)
    theirs = theirs_for(release)[[c["id"] for c in ours_cases].index(case["id"])]
    assert (mine["disable_overlap_schedule"], mine["strategy"]) == (overlap_off, "no_buffer")
    assert (theirs["disable_overlap_schedule"], theirs["strategy"]) == (overlap_off, "no_buffer")
