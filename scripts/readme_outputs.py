#!/usr/bin/env python3
"""Rewrite README's example outputs from the code (tests/docs/test_readme_outputs.py fails
when they drift):

    python scripts/readme_outputs.py            # rewrite README.md in place
    python scripts/readme_outputs.py --check    # exit 1 if README.md differs

Covered: every `$ mambasizer plan examples/F` block (the CLI's stdout, as many lines as the
README shows) and the `POST /v1/sweep` JSON example (its jq projection, computed here).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PLAN_BLOCK = re.compile(r"\$ mambasizer plan examples/(\S+)\n```\n\n```text\n(.*?)```", re.S)
SWEEP_BLOCK = re.compile(
    r"\$ curl -s localhost:8000/v1/sweep -d '(\{.*?\})' \\\n    \| jq -c '\.rows\[\] \| \{([a-z_, ]+)\}'\n(.*?)\n(?=\$ |```)", re.S
)


def _path() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def plan_blocks(text: str) -> list[tuple[str, list[str]]]:
    return [(m.group(1), m.group(2).rstrip("\n").split("\n")) for m in PLAN_BLOCK.finditer(text)]


def plan_output(example: str) -> list[str]:
    _path()
    from service.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["plan", str(ROOT / "examples" / example)])
    return [line.rstrip() for line in out.getvalue().rstrip("\n").split("\n")]


def sweep_block(text: str) -> tuple[dict, list[str]]:
    m = SWEEP_BLOCK.search(text)
    assert m is not None, "README has no sweep example"
    return json.loads(m.group(1)) | {"_keys": [k.strip() for k in m.group(2).split(",")]}, m.group(3).split("\n")


def sweep_output(body: dict) -> list[str]:
    _path()
    from service.sweep import run_sweep

    keys = body["_keys"]
    rows = run_sweep({k: v for k, v in body.items() if k != "_keys"})["rows"]
    return [json.dumps({k: row[k] for k in keys}, separators=(",", ":")) for row in rows]


def render(text: str) -> str:
    def plan(m: re.Match) -> str:
        shown = m.group(2).rstrip("\n").split("\n")
        real = plan_output(m.group(1))
        # Keep the README's cut (it may leave the warnings out), refreshed from the real output.
        new = real[: len(shown)] if len(real) >= len(shown) else real
        return m.group(0).replace(m.group(2), "\n".join(new) + "\n")

    text = PLAN_BLOCK.sub(plan, text)
    m = SWEEP_BLOCK.search(text)
    if m is not None:
        body, _ = sweep_block(text)
        text = text[: m.start(3)] + "\n".join(sweep_output(body)) + text[m.end(3):]
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print("README.md outputs drifted: run scripts/readme_outputs.py", file=sys.stderr)
            return 1
        print("README.md outputs are current")
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
