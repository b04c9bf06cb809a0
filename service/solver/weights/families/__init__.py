"""One walker per family: each describes its model class's parameters to a Rank, stage by stage."""

from __future__ import annotations

from mambasizer.service.solver.weights.families.falcon import walk_falcon
from mambasizer.service.solver.weights.families.granite import walk_granite
from mambasizer.service.solver.weights.families.kimi import walk_kimi
from mambasizer.service.solver.weights.families.lfm2 import walk_lfm2
from mambasizer.service.solver.weights.families.nemotron import walk_nemotron
from mambasizer.service.solver.weights.families.qwen import walk_qwen

WALKERS = {
    "qwen3_next": walk_qwen,
    "qwen3_5": walk_qwen,
    "nemotron_h": walk_nemotron,
    "falcon_h1": walk_falcon,
    "granitemoehybrid": walk_granite,
    "lfm2": walk_lfm2,
    "kimi_linear": walk_kimi,
}

