"""A process that dies with its parent: the heavy pool's fork server and workers must not
outlive a server killed with SIGKILL (a busy worker never reads its closed task pipe, and the
deadline that would have stopped it lived in the dead server).

* Linux: `prctl(PR_SET_PDEATHSIG, SIGKILL)`, via ctypes, in the worker processes. The fork
  server forks them from its one (main) thread, so the signal comes when the fork server
  exits, not when some short-lived thread does (the kernel ties it to the creating thread).
* Everywhere, and for the fork server itself (started by whichever API thread first needed
  the pool, so PDEATHSIG could fire when that thread ends): a daemon thread that polls the
  parent pid and exits the process once it changes (the parent died; the orphan was
  re-parented).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
POLL_S = 0.5


def _pdeathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl (musl without it, ...)
        return False


def _watch(parent: int, poll_s: float) -> None:
    while True:
        time.sleep(poll_s)
        if os.getppid() != parent:
            os._exit(1)  # no cleanup: the server that would read the result is gone


def die_with_parent(pdeathsig: bool = True, poll_s: float = POLL_S) -> None:
    """Make this process exit when its parent does (see the module docstring)."""
    parent = os.getppid()
    if pdeathsig:
        _pdeathsig(signal.SIGKILL)
    if os.getppid() != parent or parent == 1:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent, poll_s), name="parent-watch", daemon=True).start()
