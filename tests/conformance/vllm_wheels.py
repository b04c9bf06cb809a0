"""vLLM releases for the vLLM conformance suite, without their dependencies.

Each release's wheel (~240 MB) is downloaded once with `pip download --no-deps` into the same
cache the SGLang release wheels use (`release_wheels.cache_root()`, $MAMBASIZER_SGLANG_CACHE,
default ~/.cache/mambasizer), only its Python sources are unpacked (`vllm/**.py`, ~63 MB, no
compiled extensions) into `vllm-src/<version>/`, and the wheel is deleted. The light
pure-Python packages vLLM's sizing modules import (pyzmq, aiohttp and its parts, cachetools,
cbor2, cloudpickle, uvloop, py-cpuinfo, llguidance, xgrammar, apache-tvm-ffi; ~60 MB) are
installed once with `pip install --no-deps --target` into `vllm-deps/`; torch (CPU),
transformers, numpy, pydantic, msgspec and the rest come from the project's venv. Nothing is
installed into the venv itself.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from release_wheels import cache_root

# What `import vllm.config, vllm.v1.core.kv_cache_*, vllm.platforms.interface` and the hybrid
# model modules need beyond the venv, found by importing them (see the module docstring).
DEPS = (
    "pyzmq", "aiohttp", "multidict", "yarl", "propcache", "aiohappyeyeballs", "aiosignal", "frozenlist",
    "cachetools", "cbor2", "cloudpickle", "uvloop", "py-cpuinfo", "llguidance", "xgrammar", "apache-tvm-ffi==0.1.11",
    "openai-harmony", "openai", "partial-json-parser",  # imported by vllm.reasoning / tool_parsers in older releases
)


def deps_dir() -> Path:
    dest = cache_root() / "vllm-deps"
    marker = dest / ".complete"
    if not marker.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(dest), *DEPS],
            check=True, timeout=900,
        )
        marker.write_text("ok\n")
    return dest


def release_source(version: str) -> Path:
    """A directory holding release `version`'s `vllm/` Python sources, unpacked on first use."""
    dest = cache_root() / "vllm-src" / version
    marker = dest / ".complete"
    if marker.exists():
        return dest
    wheels = cache_root() / "vllm-wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={version}", "-d", str(wheels)],
            check=True, timeout=900,
        )
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        raise RuntimeError(f"pip download left no wheel for vllm=={version} in {wheels}")
    with zipfile.ZipFile(found[0]) as zf:
        zf.extractall(dest, [m for m in zf.namelist() if m.startswith("vllm/") and m.endswith(".py")])
    marker.write_text("ok\n")
    found[0].unlink()  # the sources are all the suite reads
    return dest
