#!/usr/bin/env python3
"""Extract every supported SGLang release's launch-argument surface from its wheel and write
it as a compact diff against 0.5.23's table (service/sglang_flags_releases.json).

    python scripts/extract_sglang_flags.py            # rewrite the file (downloads missing wheels)
    python scripts/extract_sglang_flags.py --check    # exit 1 if the file differs

The surface is read off each release's OWN parser, built in a subprocess that imports that
release (`tests/conformance/release_shim.py`, PYTHONPATH=release_source(v)): the three code
eras (<=0.5.13 a dataclass plus explicit add_argument calls, 0.5.14-0.5.19 annotated fields
with a generated CLI, 0.5.20+ msgspec structs in arg_groups/fields) all end in
`ServerArgs.add_cli_args(parser)`, so one extraction serves every era and nothing is
re-derived from their source text. A flag's entry: dest, option strings (aliases are
entries of their own that share the dest), nargs (0: no value), default, negatable
(`--no-x`), and choices (separately: 0.5.23's table predates them).

File layout: "base_choices" holds 0.5.23's choices by first option string; "releases"
holds, per base release, "removed" (first option strings of 0.5.23 entries that release
lacks or has in another form), "added" (its entries that 0.5.23 lacks) and "choices"
(first option -> choices wherever they differ from 0.5.23's, null for none).
Post-releases parse as their base (none of their diffs touches server_args).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES  # noqa: E402
from tests.conformance.release_wheels import release_source  # noqa: E402

BASE_FILE = ROOT / "service" / "sglang_flags_0_5_23.json"
OUTPUT = ROOT / "service" / "sglang_flags_releases.json"
CORE_KEYS = ("dest", "options", "nargs", "default", "negatable")


def base_releases() -> list[str]:
    seen: list[str] = []
    for version in SUPPORTED_RELEASES:
        base = version.split(".post")[0]
        if base not in seen:
            seen.append(base)
    return seen


def release_table(version: str) -> list[dict]:
    """`version`'s flag table, read off its own parser in a subprocess."""
    env = dict(os.environ, PYTHONPATH=f"{release_source(version)}{os.pathsep}{ROOT}")
    done = subprocess.run(
        [sys.executable, "-m", "tests.conformance.release_shim", "flags"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"sglang {version}: the parser did not build:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    if out["sglang"] != version:
        raise RuntimeError(f"imported sglang {out['sglang']} instead of {version}: is PYTHONPATH honoured?")
    return out["flags"]


def _core(entry: dict) -> dict:
    return {k: entry[k] for k in CORE_KEYS}


def diff_entry(base: list[dict], table: list[dict], base_choices: dict) -> dict:
    base_core = [_core(e) for e in base]
    core = [_core(e) for e in table]
    removed = [e["options"][0] for e in base_core if e not in core]
    added = [e for e in core if e not in base_core]
    choices = {}
    for e in table:
        key = e["options"][0]
        if e["choices"] != base_choices.get(key):
            choices[key] = e["choices"]
    return {"removed": removed, "added": added, "choices": choices}


def build(tables: dict[str, list[dict]]) -> dict:
    base = json.loads(BASE_FILE.read_text())["flags"]
    mine = tables[DEFAULT_RELEASE]
    if [_core(e) for e in mine] != base:
        raise RuntimeError(f"{BASE_FILE.name} is not sglang {DEFAULT_RELEASE}'s parser: regenerate it first "
                           "(python -m tests.solver.test_sglang_args --write)")
    base_choices = {e["options"][0]: e["choices"] for e in mine if e["choices"] is not None}
    releases = {v: diff_entry(base, t, base_choices) for v, t in tables.items() if v != DEFAULT_RELEASE}
    return {
        "base": DEFAULT_RELEASE,
        "generated_by": "scripts/extract_sglang_flags.py",
        "base_choices": base_choices,
        "releases": releases,
    }


def render(data: dict) -> str:
    return json.dumps(data, indent=None, separators=(",", ":"), sort_keys=False) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the shipped file differs")
    args = ap.parse_args()
    tables = {}
    for version in base_releases():
        tables[version] = release_table(version)
        print(f"sglang {version}: {len(tables[version])} flags", file=sys.stderr)
    text = render(build(tables))
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT.relative_to(ROOT)} differs from the releases' parsers", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(text):,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
