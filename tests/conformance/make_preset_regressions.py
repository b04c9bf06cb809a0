"""Regenerate preset_regressions.json from SGLang 0.5.23's own sizing (the oracle):
    python tests/conformance/make_preset_regressions.py
The file pins what SGLang computes for every sizable preset at a realistic deployment."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

import preset_cases  # noqa: E402
import sglang_ref  # noqa: E402

if __name__ == "__main__":
    pinned = {}
    for name in sorted(preset_cases.DEPLOYMENTS):
        ref = sglang_ref.reference_plan(preset_cases.preset_request(name, hf_config=True))
        pinned[name] = {"deployment": preset_cases.DEPLOYMENTS[name], **preset_cases.pinned_fields(ref)}
    with open(os.path.join(HERE, "preset_regressions.json"), "w") as f:
        json.dump(pinned, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"pinned {len(pinned)} presets")
