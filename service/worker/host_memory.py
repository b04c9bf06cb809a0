"""How much memory a CPU trial may take on this machine, as the kernel will enforce it.

The smallest of three figures:
  * the host's available memory (psutil: the node's, not the container's);
  * the room under this process's memory cgroup: limit minus usage at its own cgroup and
    every ancestor (a parent's limit holds too), found through /proc/self/cgroup, cgroup v2
    (`memory.max` / `memory.current`) or v1 (`memory.limit_in_bytes` / `memory.usage_in_bytes`);
  * the room under the process's own limits: RLIMIT_AS minus its address space, RLIMIT_DATA
    minus its data segment (`ulimit -v` / `-d`; torch's CPU allocator fails at them).

A trial admitted by the host figure alone in a container with less fails at the container's
cap instead of being refused (issue 17). The roots are parameters so tests can lay out a
fake cgroup tree.
"""

from __future__ import annotations

import os
from typing import NamedTuple

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"
_UNLIMITED = 1 << 60  # v1 writes "no limit" as a page-rounded 2^63


class Room(NamedTuple):
    bytes: int
    bound: str  # "host", "cgroup" or "rlimit": which figure is the smallest


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _UNLIMITED else value


def _cgroup_paths(proc_cgroup: str) -> tuple[str | None, str | None]:
    """(v2 path, v1 memory-controller path) of this process, as /proc/self/cgroup gives them."""
    v2 = v1 = None
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    return v2, v1


def _levels(base: str, path: str | None) -> list[str]:
    """`base` joined with `path` and each of its ancestors, down to `base` itself."""
    out = []
    parts = [p for p in (path or "").split("/") if p and p != ".."]
    for n in range(len(parts), -1, -1):
        out.append(os.path.join(base, *parts[:n]))
    return out


def cgroup_room_bytes(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_CGROUP) -> int | None:
    """The least limit - usage over this process's memory cgroup and its ancestors; None
    when no level has a limit (or none can be read)."""
    v2, v1 = _cgroup_paths(proc_cgroup)
    rooms = []
    layouts = (
        (root, v2, "memory.max", "memory.current"),
        (os.path.join(root, "memory"), v1, "memory.limit_in_bytes", "memory.usage_in_bytes"),
    )
    for base, path, limit_file, usage_file in layouts:
        for level in _levels(base, path):
            limit = _read_int(os.path.join(level, limit_file))
            if limit is None:
                continue
            usage = _read_int(os.path.join(level, usage_file))
            rooms.append(max(0, limit - (usage or 0)))
    return min(rooms) if rooms else None


def rlimit_room_bytes() -> int | None:
    """The least room under RLIMIT_AS (address space) and RLIMIT_DATA (data segment) of
    this process; None when neither is set."""
    import resource

    import psutil

    mem = psutil.Process().memory_info()
    rooms = []
    for which, used in ((resource.RLIMIT_AS, mem.vms), (resource.RLIMIT_DATA, getattr(mem, "data", mem.vms))):
        soft, _hard = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY and soft >= 0:
            rooms.append(max(0, soft - int(used)))
    return min(rooms) if rooms else None


def room(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_CGROUP) -> Room:
    """What a new allocation of this process can take without swapping or hitting a limit."""
    import psutil

    best = Room(int(psutil.virtual_memory().available), "host")
    for value, bound in ((cgroup_room_bytes(root, proc_cgroup), "cgroup"), (rlimit_room_bytes(), "rlimit")):
        if value is not None and value < best.bytes:
            best = Room(value, bound)
    return best


def available_bytes() -> int:
    return room().bytes
