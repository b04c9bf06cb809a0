"""`stage_pool_bytes` (what every plan reports per stage, computed in closed form on the
hot path) equals the byte totals of the tensor manifest the GPU worker allocates
(`pool_bytes(stage_tensors(x))`), pool by pool, for every stage of generated plans and on
both device kinds (the CPU worker's conv windows are laid out differently)."""

import os
import sys

from mambasizer.service.planner import plan, stage_allocation_inputs
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.allocation import pool_bytes, stage_pool_bytes, stage_tensors

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import cases


def test_closed_form_pool_bytes_equal_the_manifest():
    stages = spec = replay = 0
    for case in cases.generate_cases(1500, 11):
        request = cases.wire(case)
        try:
            p = plan(request)
        except PlanInputError:
            continue
        if not p.feasible:
            continue
        for device in ("cuda", "cpu"):
            for x in stage_allocation_inputs(request, p, device):
                manifest = pool_bytes(stage_tensors(x))
                manifest.pop("side_tables", None)  # not a budget pool: the plan does not report it
                manifest.pop("int8_checkpoint", None)  # nor the int8 checkpoint pool (int8_checkpoint.py)
                assert stage_pool_bytes(x) == manifest
                stages += 1
                spec += x.speculative and x.local_mamba_layers > 0
                replay += x.replayssm_spec and x.local_mamba_layers > 0
    assert stages > 2000 and spec > 100 and replay > 20
