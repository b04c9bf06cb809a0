"""Bytes of one buffer that the kernel holds resident, from mincore(2).

The process's RSS delta around an allocation also moves with everything else the process
frees or the kernel reclaims meanwhile (a garbage collection, malloc trimming, another
thread), so it only approximates a pool's pages. mincore asks about the pool's own pages:
a CPU trial states exactly how much of each pool is backed by memory while it is held.
Linux only; elsewhere (or if the call fails) the answer is None.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import sys

PAGE = mmap.PAGESIZE
_libc = None
_BIT0 = bytes(i & 1 for i in range(256))


def _mincore():
    global _libc
    if _libc is None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        except OSError:
            return None
        _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        _libc.mincore.restype = ctypes.c_int
    return _libc.mincore


def resident_bytes(address: int, length: int) -> int | None:
    """Bytes of [address, address + length) on resident pages (partial edge pages count
    only their overlap), or None where mincore cannot say."""
    if length <= 0:
        return 0
    fn = _mincore()
    if fn is None:
        return None
    start = address - address % PAGE
    end = address + length
    pages = (end - start + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    if fn(start, end - start, vec) != 0:
        return None
    flags = bytes(vec).translate(_BIT0)  # bit 0 is residency; the others are reserved
    if pages == 1:
        return length if flags[0] else 0
    resident = flags.count(1) * PAGE
    # Leave out the parts of the first and last pages outside the buffer.
    if flags[0]:
        resident -= address - start
    if flags[-1]:
        resident -= start + pages * PAGE - end
    return resident
