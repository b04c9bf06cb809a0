"""mincore-based residency of one buffer: untouched anonymous pages are not resident,
touched ones are, and partial edge pages count only their overlap."""

from __future__ import annotations

import ctypes
import mmap
import sys

import pytest

from mambasizer.service.worker.residency import PAGE, resident_bytes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore is read on Linux")


def _region(pages: int):
    m = mmap.mmap(-1, pages * PAGE)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    return m, addr


def test_untouched_pages_are_not_resident_touched_ones_are():
    m, addr = _region(64)
    try:
        assert resident_bytes(addr, 64 * PAGE) == 0
        for p in range(0, 64, 2):  # every other page
            m[p * PAGE] = 1
        assert resident_bytes(addr, 64 * PAGE) == 32 * PAGE
        for p in range(1, 64, 2):
            m[p * PAGE] = 1
        assert resident_bytes(addr, 64 * PAGE) == 64 * PAGE
    finally:
        del addr
        m.close()


def test_a_buffer_that_does_not_start_on_a_page_counts_only_its_own_bytes():
    m, addr = _region(8)
    try:
        m[0] = 1
        m[7 * PAGE] = 1
        # [100, 7 pages + 50): touched first and last pages, untouched middle.
        assert resident_bytes(addr + 100, 7 * PAGE - 50) == (PAGE - 100) + 50
        # Inside one touched page.
        assert resident_bytes(addr + 10, 20) == 20
        assert resident_bytes(addr + 3 * PAGE + 10, 20) == 0
        assert resident_bytes(addr, 0) == 0
    finally:
        del addr
        m.close()


def test_a_zeroed_torch_tensor_is_resident_byte_for_byte():
    torch = pytest.importorskip("torch")
    t = torch.zeros(3 * (1 << 20) + 7, dtype=torch.uint8)
    assert resident_bytes(t.data_ptr(), t.untyped_storage().nbytes()) == t.untyped_storage().nbytes()
