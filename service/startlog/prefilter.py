"""The lines of a large log the start-up reader can use, found at C speed.

A production log is mostly per-request lines (`Decode batch. ...`, access logs); the reader
(mambasizer.service.startlog.parse.BootLogReader) reads every line in Python (3.4 MB/s against
the filter's 40.6 MB/s on a loaded 2-core machine: bench/checklog_read_bench.py, BENCHMARKS.md).
This filter finds, with `bytes.lower` and `bytes.find` over 1 MiB blocks, the lines that can
change what the reader returns, and hands only those to it, at their byte offsets:

* a line holding any of NEEDLES (lower-cased; every literal the reader and the release marks
  look for: figure keys, `server_args=`, `sglang`, the GPU keys, the wordings of formats.py);
* a non-blank line starting with a space or tab (it may continue the record before it), and
  the nearest non-blank line before it (that record's head).

Every other line is dropped, which is exact: a dropped line holds none of the reader's keys,
so its record yields nothing; it never continues a kept record (it starts with neither space nor
tab); and a kept line after it is a record's head, which ends the kept record before, as the
dropped line would have. Blank lines are ignored by the reader. Lines longer than the reader
keeps are passed cut one byte past its bound, so it cuts them exactly as it would. Bytes that
are not UTF-8 in dropped lines are counted as the reader counts them in the lines it skips.

tests/checklog/test_checklog_prefilter.py checks that reading through the filter equals reading
the whole log, on every real and synthetic log of the test data.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from mambasizer.service.startlog.parse import MAX_RECORD_CHARS, BootLog, BootLogError, BootLogReader

BLOCK = 1 << 18  # a scan holds the event loop for a few milliseconds at most
LINE_LIMIT = 4 * MAX_RECORD_CHARS + 1  # one byte past what the reader keeps of a line

# Lower-cased superset of every literal BootLogReader._read_record and formats.marks act on.
# A new key in the reader goes here too (the equality test above catches a missing one on
# the test logs).
NEEDLES: tuple[bytes, ...] = (
    b"server_args=", b"glang",  # the record; `sglang` (the version regex is case-insensitive)
    b"device", b"gpu",  # the GPU line's keys (device_name=, Device name:, GPU:, gpu_name=)
    b"load weight", b"memory pool end",  # their `avail mem=` / `mem usage=` are read after these words
    b"size:",  # max_mamba_cache_size:, conv_state / ssm_state size:, the intermediates' cache size:, KV size:
    b"kv ",  # KV Cache is allocated / VA upper bound, Using KV cache dtype:, the KV budget, Post-capture KV sizing
    b"post-capture",
    b"max_",  # max_total_num_tokens=, max_prefill_tokens=, max_running_requests(=, was reduced, is capped to)
    b"chunked_prefill_size=", b"context_len=",
    b"available_",  # available_gpu_mem= / available_cpu_mem=
    b"init torch distributed ends", b"finalized token capacity",
    b"total_rest_memory=", b"mamba_cache_per_req=",  # the mamba pool's refusal (its `Computed max_` is under max_)
)


@dataclass
class KeptLines:
    """What the filter kept: the lines at their byte offsets, and what it skipped."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)
    undecodable_bytes: int = 0  # in dropped lines
    undecodable_lines: int = 0
    seen_text: bool = False  # a non-blank byte anywhere
    total_bytes: int = 0

    def read(self) -> BootLog:
        """The BootLog the reader makes of the kept lines (BootLogError as it raises it)."""
        reader = BootLogReader()
        for offset, line in self.lines:
            reader.feed_at(offset, line)
        reader.note_skipped(self.undecodable_bytes, self.undecodable_lines, self.seen_text)
        return reader.finish()


def _blank(line: bytes) -> bool:
    if not line.strip():
        return True
    return not line.isascii() and not line.decode("utf-8", "replace").strip()


def _soft(line: bytes) -> bool:
    return line[:1] in (b" ", b"\t") and not _blank(line)


class StartupLines:
    """`feed(chunk)` the log's bytes as they come, then `finish()` for the KeptLines."""

    def __init__(self, max_kept_bytes: int | None = None) -> None:
        self.kept = KeptLines()
        # A bound on the lines kept (the API's: a log that is nothing but start-up wordings
        # would otherwise be held whole); None: any (the CLI).
        self.max_kept_bytes = max_kept_bytes
        self._kept_bytes = 0
        self._pending: list[bytes] = []  # fed bytes not yet scanned
        self._pending_size = 0
        self._line_len = 0  # bytes of the current (unfinished) line fed so far
        self._carry = b""  # the held-back head line (and blank lines after it) + the partial line
        self._carry_at = 0  # absolute offset of _carry[0]
        # Bytes dropped from lines longer than the reader keeps: (absolute offset of the first
        # byte after the drop, bytes dropped there), so kept lines keep their true offsets.
        self._drops: list[tuple[int, int]] = []
        self._buffered = 0  # bytes buffered (the fed ones less the dropped)

    def feed(self, chunk: bytes) -> None:
        self.buffer(chunk)
        if self.due:
            self.scan()

    def buffer(self, chunk: bytes) -> None:
        """Take `chunk` without scanning (cheap); `scan()` when `due`. The API buffers on the
        event loop and scans in a thread, so the loop is never held for a block's search."""
        if not chunk:
            return
        self.kept.total_bytes += len(chunk)
        for i in range(0, len(chunk), BLOCK):  # each piece is shorter than LINE_LIMIT
            self._piece(chunk[i : i + BLOCK])

    @property
    def due(self) -> bool:
        return self._pending_size >= BLOCK

    def scan(self) -> None:
        for _ in self.scan_steps():
            pass

    def scan_steps(self) -> Iterator[None]:
        """`scan()` one needle's search at a time: the API yields to its event loop after each
        step, so a request's scan never holds the loop (or the GIL) for more than one search
        over one block."""
        return self._scan(final=False)

    def finish(self) -> KeptLines:
        for _ in self._scan(final=True):
            pass
        return self.kept

    # ------------------------------------------------------------------------------------
    def _piece(self, piece: bytes) -> None:
        first = piece.find(b"\n")
        if first < 0:
            kept = self._in_line(piece, self._buffered)
        else:
            last = piece.rfind(b"\n")
            head = self._in_line(piece[:first], self._buffered)
            self._line_len = 0
            middle = piece[first : last + 1]
            kept = head + middle + self._in_line(piece[last + 1 :], self._buffered + len(head) + len(middle))
        if kept:
            self._pending.append(kept)
            self._pending_size += len(kept)
            self._buffered += len(kept)

    def _in_line(self, segment: bytes, at: int) -> bytes:
        """The part of `segment` (inside one line, buffered from position `at`) the reader would
        take: a line is passed up to LINE_LIMIT bytes; the rest is dropped, its place recorded."""
        room = LINE_LIMIT - self._line_len
        self._line_len += len(segment)
        if room >= len(segment):
            return segment
        kept = segment[: max(room, 0)]
        self._drops.append((at + len(kept), len(segment) - len(kept)))
        return kept

    def _absolute(self, buffered_pos: int) -> int:
        """The absolute byte offset of a position in the buffered (drop-less) stream."""
        shift = 0
        for at, dropped in self._drops:
            if at <= buffered_pos:
                shift += dropped
        return buffered_pos + shift

    def _take_pending(self) -> bytes:
        data = b"".join(self._pending)
        self._pending, self._pending_size = [], 0
        return data

    def _scan(self, final: bool) -> Iterator[None]:
        data = self._carry + self._take_pending()
        base = self._carry_at  # buffered position of data[0]
        end = len(data) if final else data.rfind(b"\n") + 1
        region = data[:end]
        if region.strip():
            self.kept.seen_text = True
        starts: set[int] = set()
        yield from self._kept_starts(region, starts)
        hold = len(region) if final else self._hold_from(region)
        self._emit(region, base, starts, hold)
        # Held back: from the last non-blank, non-soft line (whether it heads a continuation
        # is told by the next block), plus the partial line.
        self._carry, self._carry_at = data[hold:], base + hold

    def _hold_from(self, region: bytes) -> int:
        """Where the held-back part starts: the last non-blank line when it is not soft (its
        continuation may come next), else the end."""
        pos = len(region)
        while pos > 0:
            start = region.rfind(b"\n", 0, pos - 1) + 1
            line = region[start : pos - 1] if region[pos - 1 : pos] == b"\n" else region[start:pos]
            if not _blank(line):
                return len(region) if _soft(line) else start
            pos = start
        return 0

    def _kept_starts(self, region: bytes, starts: set[int]) -> Iterator[None]:
        """Into `starts`, the starts of the lines kept: those with a needle, the soft ones and
        their heads (a step per needle)."""
        lower = region.lower()
        yield
        for needle in NEEDLES:
            yield
            at = lower.find(needle)
            while at >= 0:
                start = region.rfind(b"\n", 0, at) + 1
                starts.add(start)
                nl = region.find(b"\n", at)
                if nl < 0:
                    break
                at = lower.find(needle, nl)
        for lead in (b"\n ", b"\n\t"):
            at = region.find(lead)
            while at >= 0:
                self._keep_soft(region, at + 1, starts)
                at = region.find(lead, at + 1)
        if region[:1] in (b" ", b"\t"):
            self._keep_soft(region, 0, starts)

    def _keep_soft(self, region: bytes, start: int, starts: set[int]) -> None:
        nl = region.find(b"\n", start)
        line = region[start : nl if nl >= 0 else len(region)]
        if _blank(line):
            return
        starts.add(start)
        pos = start  # the nearest non-blank line before it: the record's head (or a soft line)
        while pos > 0:
            prev = region.rfind(b"\n", 0, pos - 1) + 1
            if not _blank(region[prev : pos - 1]):
                starts.add(prev)
                return
            pos = prev

    def _emit(self, region: bytes, base: int, starts: set[int], hold: int) -> int:
        """Keep the lines starting before `hold`; count the undecodable bytes of the dropped
        ones. Returns where the held-back part starts."""
        kept = sorted(s for s in starts if s < hold)
        for start in kept:
            nl = region.find(b"\n", start)
            stop = len(region) if nl < 0 else nl + 1
            self.kept.lines.append((self._absolute(base + start), region[start:stop]))
            self._kept_bytes += stop - start
        if self.max_kept_bytes is not None and self._kept_bytes > self.max_kept_bytes:
            n = self.max_kept_bytes
            bound = f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
            raise BootLogError(
                f"more than {bound} of its lines are start-up lines check-log reads (SGLang prints a few per rank): "
                "send the start-up part of the log"
            )
        self._count_undecodable(region[:hold], set(kept))
        return hold

    def _count_undecodable(self, region: bytes, kept: set[int]) -> None:
        try:
            region.decode("utf-8")
            return
        except UnicodeDecodeError:
            pass
        start = 0
        while start < len(region):
            nl = region.find(b"\n", start)
            stop = len(region) if nl < 0 else nl
            if start not in kept:
                line = region[start:stop]
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    escaped = line.decode("utf-8", "surrogateescape")
                    self.kept.undecodable_bytes += sum(1 for c in escaped if "\udc80" <= c <= "\udcff")
                    self.kept.undecodable_lines += 1
            start = stop + 1


def kept_lines(chunks: Iterable[bytes]) -> KeptLines:
    """The KeptLines of an iterable of byte chunks."""
    lines = StartupLines()
    for chunk in chunks:
        lines.feed(chunk)
    return lines.finish()


__all__ = ["NEEDLES", "KeptLines", "StartupLines", "kept_lines"]
