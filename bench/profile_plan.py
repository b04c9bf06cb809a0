#!/usr/bin/env python3
"""Profile one benchmark request with pyinstrument (in the `test` extra).

    python bench/profile_plan.py                       # our solver, every request in bench/requests/
    python bench/profile_plan.py --sglang              # SGLang 0.5.23's own sizing path (oracle, probe off)
    python bench/profile_plan.py --request qwen3-next-tp4-eagle.json --iters 20000 --form preset

Prints pyinstrument's call tree (wall time over `--iters` calls, after one warm call).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.harness import REQUEST_FILES, load_requests  # noqa: E402
from bench.run import expand_preset, load_oracle, oracle_probe_off  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", action="append", help="a file name in bench/requests/ (repeatable; default all)")
    ap.add_argument("--sglang", action="store_true", help="profile SGLang's path (tests/conformance/sglang_ref.py)")
    ap.add_argument("--form", choices=("hf_config", "preset"), default="hf_config", help="our request form")
    ap.add_argument("--iters", type=int, help="calls to profile (default 5000 ours, 30 SGLang)")
    ap.add_argument("--interval", type=float, default=0.0001, help="sampling interval, s")
    args = ap.parse_args(argv)
    from pyinstrument import Profiler

    fn: Callable[[Any], Any]  # SGLang's oracle or our solver: both take a request dict
    if args.sglang:
        fn = load_oracle()
        iters = args.iters or 30
    else:
        from mambasizer.service.planner import plan as fn

        iters = args.iters or 5000
    for name, req in load_requests(args.request).items():
        arg = req if (args.form == "preset" and not args.sglang) else expand_preset(req)
        fn(arg)
        # The oracle's own locals probe is a profile hook too: off while pyinstrument samples.
        with oracle_probe_off() if args.sglang else contextlib.nullcontext():
            prof = Profiler(interval=args.interval)
            prof.start()
            for _ in range(iters):
                fn(arg)
            prof.stop()
        print(f"===== {name} ({REQUEST_FILES[name]}), {'SGLang oracle' if args.sglang else 'ours, ' + args.form}, {iters} calls")
        print(prof.output_text(unicode=False, color=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
