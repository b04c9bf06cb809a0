"""Conformance: the shipped launch-flag table of each release (service/sglang_flags_releases.json
applied to 0.5.23's table, as service/sglang_args reads it) equals that release's own parser
(`ServerArgs.add_cli_args`, built in a subprocess importing the release's wheel: see
tests/conformance/release_shim.py), entry by entry: dest, option strings and aliases,
nargs / store_true, default, negatable, choices.

One release per code era and flag epoch: 0.5.8 (E1), 0.5.10 (PCG flags), 0.5.13 (last
classic dataclass), 0.5.14 (annotated fields, renamed flags with aliases), 0.5.19 (last
with the deprecated aliases), 0.5.20 (msgspec structs, aliases gone), 0.5.22 (--attn-dp-size).
Regenerate with `python scripts/extract_sglang_flags.py` (all 16 releases, about 3 min).

Budget: about 70 s on 2 cores (one ~10 s subprocess per release).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mambasizer.service import sglang_args as sa
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
release_table = load_script(ROOT / "scripts" / "extract_sglang_flags.py", "extract_sglang_flags").release_table

RELEASES = ("0.5.8", "0.5.10", "0.5.13", "0.5.14", "0.5.19", "0.5.20", "0.5.22")


def _key(entry: dict) -> tuple:
    return tuple(entry["options"])


@pytest.mark.parametrize("release", RELEASES)
def test_shipped_flag_table_is_the_releases_own_parser(release):
    theirs = sorted(release_table(release), key=_key)
    ours = sorted(sa._entries(release), key=_key)
    print(f"sglang {release}: flags {len(theirs)}, equal {sum(a == b for a, b in zip(ours, theirs, strict=False))}")
    assert ours == theirs
