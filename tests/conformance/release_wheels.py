"""Older SGLang releases for the per-release conformance suite: each release's wheel is
downloaded once (`pip download --no-deps`) into a cache directory and its `sglang/` tree
unpacked beside it, so a subprocess can import that release with
`PYTHONPATH=<release_source(v)>` while the venv keeps 0.5.23 installed.

Cache: $MAMBASIZER_SGLANG_CACHE, default ~/.cache/mambasizer (wheels in sglang-wheels/,
unpacked trees in sglang-src/<version>/). Sizing code is plain Python in every release
(0.5.11+ wheels also carry Rust extensions that the sizing path never imports), so the cp311
wheel pip picks serves on any CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("MAMBASIZER_SGLANG_CACHE", Path.home() / ".cache" / "mambasizer"))


def _wheel(version: str) -> Path:
    wheels = cache_root() / "sglang-wheels"
    found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"sglang=={version}", "-d", str(wheels)],
        check=True, timeout=600,
    )
    found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    if not found:
        raise RuntimeError(f"pip download left no wheel for sglang=={version} in {wheels}")
    return found[0]


def release_source(version: str) -> Path:
    """A directory holding release `version`'s `sglang/` package (only `sglang/srt` and the
    package's top-level modules), downloaded and unpacked on first use."""
    dest = cache_root() / "sglang-src" / version
    marker = dest / ".complete"
    if marker.exists():
        return dest
    with zipfile.ZipFile(_wheel(version)) as zf:
        members = [m for m in zf.namelist() if m.startswith("sglang/") and not m.endswith(".so")]
        zf.extractall(dest, members)
    marker.write_text("ok\n")
    return dest
