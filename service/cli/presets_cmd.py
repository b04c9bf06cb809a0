"""`mambasizer presets`: the shipped model presets, whether each is sized, and why not.

    mambasizer presets           # a table: name, sizable, model id, reason
    mambasizer presets --json    # the same list as GET /v1/presets
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mambasizer.service.cli import EXIT_OK


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "presets",
        help="list the shipped presets with sizable/reason",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--json", action="store_true", help="print the list as GET /v1/presets returns it")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from mambasizer.service.presets import PRESETS

    rows = [p.summary() for p in PRESETS.values()]
    if args.json:
        sys.stdout.write(json.dumps({"presets": rows}, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    width = max(len(r["name"]) for r in rows)
    mid = max(len(r["model_id"]) for r in rows)
    print(f"{'name':<{width}}  sizable  {'model_id':<{mid}}  reason")
    for r in rows:
        reason = r["reason"] or ""
        if len(reason) > 100:
            reason = reason[:97] + "..."
        print(f"{r['name']:<{width}}  {'yes' if r['sizable'] else 'no':<7}  {r['model_id']:<{mid}}  {reason}".rstrip())
    n = sum(r["sizable"] for r in rows)
    print(f"\n{n} of {len(rows)} presets are sized (every one SGLang 0.5.23 can load); the reason says why the others are not.")
    return EXIT_OK
