"""What a CPU trial may take (issue 17): the least of the host's available memory, the room
under this process's memory cgroup and every ancestor (v2, v1 fallback, found through
/proc/self/cgroup) and the room under its RLIMIT_AS / RLIMIT_DATA. A fake cgroup tree tests
the cgroup figures; a real `resource.setrlimit` in a subprocess tests the rlimits, the
refusal and the shortfall an OOM at the limit reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mambasizer.service.worker import host_memory

GIB, MIB = 1 << 30, 1 << 20
ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, **files: int | str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (path / name.replace("_", ".", 1)).write_text(f"{value}\n")


def _proc(tmp_path: Path, *lines: str) -> str:
    f = tmp_path / "proc_self_cgroup"
    f.write_text("\n".join(lines) + "\n")
    return str(f)


def test_cgroup_v2_the_process_own_cgroup_not_the_root(tmp_path):
    root = tmp_path / "cg"
    _write(root, memory_max="max", memory_current=50 * GIB)
    _write(root / "kubepods" / "pod1" / "ctr", memory_max=8 * GIB, memory_current=7 * GIB)
    proc = _proc(tmp_path, "0::/kubepods/pod1/ctr")
    assert host_memory.cgroup_room_bytes(str(root), proc) == 1 * GIB


def test_cgroup_v2_a_tighter_ancestor_bounds_it(tmp_path):
    root = tmp_path / "cg"
    _write(root / "kubepods", memory_max=4 * GIB, memory_current=int(3.5 * GIB))
    _write(root / "kubepods" / "pod1", memory_max=8 * GIB, memory_current=1 * GIB)
    proc = _proc(tmp_path, "0::/kubepods/pod1")
    assert host_memory.cgroup_room_bytes(str(root), proc) == GIB // 2


def test_cgroup_v1_memory_controller_path(tmp_path):
    root = tmp_path / "cg"
    _write(root / "memory", memory_limit_in_bytes=9223372036854771712, memory_usage_in_bytes=GIB)  # v1's "no limit"
    _write(root / "memory" / "docker" / "abc", memory_limit_in_bytes=3 * GIB, memory_usage_in_bytes=GIB)
    proc = _proc(tmp_path, "12:pids:/docker/abc", "4:memory:/docker/abc", "1:name=systemd:/docker/abc")
    assert host_memory.cgroup_room_bytes(str(root), proc) == 2 * GIB


def test_a_namespaced_container_reads_its_own_root(tmp_path):
    # With a cgroup namespace the process's path names nothing under the mount: the root is its own.
    root = tmp_path / "cg"
    _write(root, memory_max=2 * GIB, memory_current=GIB // 4)
    proc = _proc(tmp_path, "0::/not/mounted/here")
    assert host_memory.cgroup_room_bytes(str(root), proc) == 2 * GIB - GIB // 4


def test_no_limit_anywhere_is_none(tmp_path):
    root = tmp_path / "cg"
    _write(root, memory_max="max", memory_current=GIB)
    assert host_memory.cgroup_room_bytes(str(root), _proc(tmp_path, "0::/")) is None
    assert host_memory.cgroup_room_bytes(str(tmp_path / "nowhere"), str(tmp_path / "no_proc")) is None


def test_usage_above_the_limit_leaves_no_room(tmp_path):
    root = tmp_path / "cg"
    _write(root, memory_max=GIB, memory_current=2 * GIB)
    assert host_memory.cgroup_room_bytes(str(root), _proc(tmp_path, "0::/")) == 0


def test_the_room_is_the_cgroup_when_it_is_the_smallest(tmp_path):
    root = tmp_path / "cg"
    _write(root / "ctr", memory_max=300 * MIB, memory_current=100 * MIB)
    room = host_memory.room(str(root), _proc(tmp_path, "0::/ctr"))
    assert room == host_memory.Room(200 * MIB, "cgroup")


_CHILD = r"""
import json, resource, sys
import torch  # before the limit: its own mappings are not the trial's
import psutil
from mambasizer.schemas import PlanRequest
from mambasizer.schemas.trial import TrialOptions
from mambasizer.service.worker import host_memory
from mambasizer.service.worker import trial as trial_mod
from mambasizer.service.worker.devices import CpuBackend

body = json.loads(sys.argv[1])
limit = psutil.Process().memory_info().vms + 512 * (1 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
room = host_memory.room()
out = {"room": room.bytes, "bound": room.bound}
refused = trial_mod.run_trial(PlanRequest.model_validate(body), TrialOptions(), CpuBackend(), cpu_margin=0)
out["refused"] = [refused.status, refused.reason]
# The old admission (the host's figure alone): the allocation meets the limit for real.
trial_mod.host_available_bytes = lambda: 1 << 50
hit = trial_mod.run_trial(PlanRequest.model_validate(body), TrialOptions(), CpuBackend(), cpu_margin=0)
st = hit.stages[0]
out["hit"] = [hit.status, hit.reason, st.oom.shortfall_bytes if st.oom else None, st.oom.remaining_bytes if st.oom else None,
              st.oom.free_bytes if st.oom else None]
print(json.dumps(out))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced as tested on Linux")
def test_a_real_rlimit_bounds_admission_and_the_reported_shortfall():
    pytest.importorskip("torch")
    from worker_helpers import QWEN_SMALL  # 1 GiB of pools on one stage

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(QWEN_SMALL)], capture_output=True, text=True, env=env, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["bound"] == "rlimit"
    assert 256 * MIB < out["room"] <= 512 * MIB
    status, reason = out["refused"]
    assert status == "rejected"
    assert reason.startswith("a CPU trial of this plan needs 1.00 GiB (its largest selected stage), more than this machine can spare now")
    status, reason, shortfall, remaining, free = out["hit"]
    assert status == "oom" and "out of memory" in reason
    # Measured against the limit that was hit: what was left to allocate minus the room.
    assert free is not None and free <= 512 * MIB
    assert shortfall == remaining - free > 0
    assert f"{shortfall / GIB:.3f} GiB short" in reason and "0.000 GiB short" not in reason
