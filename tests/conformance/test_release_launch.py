"""Conformance per release: `launch.resolve(..., release=v)` against release v's OWN flag
resolution (`ServerArgs(...).resolve_once()` + `check_server_args()`), run on the CPU in a
subprocess that imports that release (tests/conformance/release_resolve.py; the wheel is
fetched once into the cache by release_wheels.release_source), for one release per epoch
of the arg_groups era: 0.5.19 (E11), 0.5.20 and 0.5.21 (E12), 0.5.22 (E13); 0.5.23 (E14)
is tests/conformance/test_launch_resolution.py. Releases up to 0.5.18 resolve inside
`ServerArgs.__post_init__` and have no driver yet: their rules (releases/launch_rules.py)
are checked here only by the regression numbers below.

Cases: the seeded flag sets test_launch_resolution generates (every hybrid family, GPU
sizes across the heuristic's brackets), N_PER_RELEASE of them per release, written in that
release's spelling (`--attn-dp-size N` is `--dp-size N --enable-dp-attention` before 0.5.22;
a case using a flag the release lacks is left out), plus the regression cases. Every
resolved field is compared (mem_fraction_static, strategy, extra_buffer, overlap, max
running requests, speculative defaults, chunked prefill, decode graph max_bs, prefill
graph, page size, SSM/conv dtypes, context length, draft KV layers), and refusals by
exception class. Per release, `cases, equal` is printed (run with -s to see it).

Budget: about 60 s on 2 cores (4 subprocesses: ~5 s import + ~0.05 s per case).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from mambasizer.service.sglang_args import RELEASE_DEST_ALIASES, _flags
from mambasizer.service.solver.releases.registry import at_least
from tests.conformance.release_wheels import release_source
from tests.conformance.test_launch_resolution import CASES, MODELS, _same_rejection, ours

ROOT = Path(__file__).resolve().parents[2]
RELEASES = ("0.5.19", "0.5.20", "0.5.21", "0.5.22")
N_PER_RELEASE = 200

# 0.5.22 ties a defaulted decode-graph max_bs to --max-running-requests (E13): on an H200
# (143771 MiB) at tp 4, mrr 64 gives max_bs 64 instead of 512, 0.903 instead of 0.897.
CLAMP_CASE = {"id": "clamp", "model": "qwen3-next-80b-a3b-instruct", "server_args": {"tp_size": 4, "max_running_requests": 64},
              "env": {}, "gpu_mib": 143771}


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
    return {**case, "server_args": sa}


@cache
def cases_for(release: str) -> tuple[list[dict], list[dict]]:
    """(our cases, the same in the release's spelling)."""
    ours_cases, theirs_cases = [], []
    for case in [CLAMP_CASE] + CASES:
        spelled = in_release_spelling(case, release)
        if spelled is None:
            continue
        ours_cases.append(case)
        theirs_cases.append(spelled)
        if len(ours_cases) > N_PER_RELEASE:
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
    if a["rejected"] or b["rejected"]:
        return None if _same_rejection(a, b) else f"rejected: ours={a['rejected']} {a.get('message', '')[:120]} | sglang={b['rejected']} {b.get('message', '')[:120]}"
    bad = {k: (a.get(k), b[k]) for k in b if a.get(k) != b[k]}
    return None if not bad else "; ".join(f"{k}: ours={v[0]!r} sglang={v[1]!r}" for k, v in bad.items())


@pytest.mark.parametrize("release", RELEASES)
def test_resolution_equals_the_releases_own(release):
    ours_cases, _ = cases_for(release)
    theirs = theirs_for(release)
    driver = [t["message"] for t in theirs if t["rejected"] == "DriverError"]
    assert not driver, driver[:3]
    mismatches = []
    for case, b in zip(ours_cases, theirs, strict=True):
        d = _diff(ours(case, release=release), b)
        if d:
            mismatches.append(f"{case['id']} {case['model']} {case['server_args']} gpu={case['gpu_mib']}: {d}")
    equal = len(ours_cases) - len(mismatches)
    print(f"sglang {release}: cases {len(ours_cases)}, equal {equal}")
    assert not mismatches, "\n".join(mismatches[:10])


@pytest.mark.parametrize("release, max_bs, mfs", [("0.5.21", 512, 0.897), ("0.5.22", 64, 0.903)])
def test_decode_graph_max_bs_follows_max_running_requests_from_0_5_22(release, max_bs, mfs):
    """E13, in numbers, by ours and by the release's own resolution."""
    mine = ours(CLAMP_CASE, release=release)
    assert (mine["decode_cuda_graph_max_bs"], mine["mem_fraction_static"]) == (max_bs, mfs)
    theirs = theirs_for(release)[0]
    assert (theirs["decode_cuda_graph_max_bs"], theirs["mem_fraction_static"]) == (max_bs, mfs)
