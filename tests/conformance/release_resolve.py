"""Launch-flag resolution of an older SGLang release, in a subprocess that imports it:

    PYTHONPATH=<release_source(v)>:<repo> python -m tests.conformance.release_resolve < cases.json

reads [{"model": hf_config, "server_args": {...}, "env": {...}, "gpu_mib": N}, ...] and
prints that release's own resolution of each (the dicts of `launch_ref.resolve_with_sglang`).

Era shim (0.5.19+: `ServerArgs.resolve_once()` over arg_groups, then `check_server_args()`,
the same driver as 0.5.23's, tests/conformance/launch_ref.py), adapted to what the release has:
* the import stand-ins of tests/conformance/release_shim.py;
* of launch_ref's up-front lazy imports, only the modules this release ships;
* of the platform facts launch_ref pins (CUDA, SM90, FlashInfer), only those this
  release's `override_platform` knows (0.5.19-0.5.20 lack is_mps / is_sm110);
* the GPU capacity probe stood in where the release calls it (0.5.19: arg_groups/pipeline.py).
Releases up to 0.5.18 resolve in `ServerArgs.__post_init__` and are not driven here.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys


def _ships(root: str, module: str) -> bool:
    path = os.path.join(root, *module.split("."))
    return os.path.isdir(path) or os.path.exists(path + ".py")


def _lenient_platform(override_platform):
    """`override_platform(**facts)` without the facts this release does not know (found by
    trying them once: the release raises ValueError naming the unknown ones)."""
    unknown: set[str] = set()
    probed = False

    def call(**facts):
        nonlocal probed
        if not probed:
            while True:
                try:
                    with override_platform(**{k: v for k, v in facts.items() if k not in unknown}):
                        pass
                    break
                except ValueError as exc:
                    found = re.search(r"unknown platform fact\(s\): (\[.*\])", str(exc))
                    if not found:
                        raise
                    unknown.update(ast.literal_eval(found.group(1)))
            probed = True
        return override_platform(**{k: v for k, v in facts.items() if k not in unknown})

    return call


def main() -> int:
    from tests.conformance import release_shim

    release_shim.install()
    from tests.conformance import launch_ref

    root = os.environ["PYTHONPATH"].split(os.pathsep)[0]
    launch_ref._LAZY_MODULES = tuple(m for m in launch_ref._LAZY_MODULES if _ships(root, m))  # type: ignore[assignment]
    sg = launch_ref._load()
    sg.override_platform = _lenient_platform(sg.override_platform)
    if not hasattr(sg.memory_hook, "get_device_memory_capacity"):
        # 0.5.19 probes the capacity in arg_groups/pipeline.py (memory_hook from 0.5.20).
        import importlib

        sg.memory_hook = importlib.import_module("sglang.srt.arg_groups.pipeline")
    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        try:
            out.append(launch_ref.resolve_with_sglang(case["model"], case["server_args"], case["env"], case["gpu_mib"]))
        except Exception as exc:  # the driver itself failed (not SGLang refusing): report it
            out.append({"rejected": "DriverError", "message": f"{type(exc).__name__}: {exc}"})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
