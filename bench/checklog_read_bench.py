"""Reading a large start-up log (issue 25): the start-up reader over every line against the
prefilter (service/startlog/prefilter.py) that hands it only the lines it can use, side by side
in one run, on the same bytes, with the BootLog of both checked equal. Runnable alone:

    python bench/checklog_read_bench.py [--mb 50] [--chunk 65536]

The log is EXAMPLE_LOG (the OpenAPI example's start-up lines) followed by SGLang's per-request
`Decode batch.` lines up to `--mb` MB, fed in `--chunk`-byte chunks as a body streams in.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mambasizer.service.api.checklog import EXAMPLE_LOG  # noqa: E402
from mambasizer.service.startlog.parse import BootLogReader  # noqa: E402
from mambasizer.service.startlog.prefilter import kept_lines  # noqa: E402

DECODE = (b"[2026-12-01 10:01:00 TP0] Decode batch. #running-req: 32, #token: 123456, token usage: 0.07, cuda graph: True, "
          b"gen throughput (token/s): 1234.56, #queue-req: 0\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=1 << 16)
    args = parser.parse_args(argv)
    body = EXAMPLE_LOG.encode() + DECODE * (args.mb * 1_000_000 // len(DECODE))
    chunks = [body[i : i + args.chunk] for i in range(0, len(body), args.chunk)]

    t = time.perf_counter()
    reader = BootLogReader()
    for chunk in chunks:
        reader.feed(chunk)
    whole = reader.finish()
    every_line = time.perf_counter() - t

    t = time.perf_counter()
    kept = kept_lines(chunks)
    filtered = kept.read()
    prefilter = time.perf_counter() - t

    assert filtered == whole, "the prefilter read differs from the whole read"
    mb = len(body) / 1e6
    print(f"log: {mb:.1f} MB, {len(chunks)} chunks of {args.chunk} B; kept {len(kept.lines)} lines")
    print(f"{'read':<34}{'seconds':>10}{'MB/s':>10}")
    print(f"{'every line (BootLogReader)':<34}{every_line:>10.2f}{mb / every_line:>10.1f}")
    print(f"{'prefilter, then the kept lines':<34}{prefilter:>10.2f}{mb / prefilter:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
