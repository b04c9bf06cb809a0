"""The solver knows no preset names: importing it (and planning a pasted config with it)
loads no mambasizer.service.presets, nor the API, CLI or worker. service/planner.py resolves presets."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, sys
import mambasizer.service.solver
from mambasizer.service.solver.plan import inline_layout, parse_request
from mambasizer.service.solver.solve import solve
req = parse_request(json.loads(sys.argv[1]))
p = solve(req, inline_layout(req.model))
loaded = sorted(sys.modules)
print(json.dumps({"loaded": loaded, "tokens": p.max_total_num_tokens}))
"""


def _fresh(request: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(request)], cwd=ROOT, capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout)


def test_solver_imports_and_plans_without_presets():
    from mambasizer.service.planner import plan
    from samples import TINY

    got = _fresh(TINY)
    loaded = set(got["loaded"])
    assert "mambasizer.service.solver.plan" in loaded and "mambasizer.service.solver.remedies" in loaded
    assert "mambasizer.service.presets" not in loaded
    assert not [m for m in loaded if m.startswith(("mambasizer.service.api", "mambasizer.service.cli", "mambasizer.service.worker", "mambasizer.service.planner"))]
    # The same number as through the one public entry (which resolves presets too).
    assert got["tokens"] == plan(TINY).max_total_num_tokens > 0


def test_planner_resolves_a_preset_the_solver_never_named():
    from mambasizer.service.planner import model_layout, parse_request, plan
    from mambasizer.service.solver.plan import preset_layout

    req = parse_request({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"rest_gib": 8.0}})
    layout = model_layout(req)
    assert layout is model_layout(req)  # built once per preset, kept for the process
    assert layout.name == "qwen3-next-80b-a3b-instruct"
    assert preset_layout(layout.name, {}) is layout
    assert plan(req).max_total_num_tokens > 0
