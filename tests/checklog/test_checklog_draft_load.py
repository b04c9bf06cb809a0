"""A speculative launch loads the draft model after the target, and each load prints its own
"Load weight end ... avail mem=" line. SGLang sizes the pools after both loads (SIZING_SPEC
§1.1: F_post is measured after target and draft weights), so the measured budget check-log
rebuilds takes the last reading, while the compared figure stays the target's line."""

from __future__ import annotations

from mambasizer.service.startlog import compare as checklog
from mambasizer.service.startlog.parse import parse_boot_log

LOG = """\
[2026-12-01 10:00:01 TP0] Load weight begin. avail mem=138.11 GB
[2026-12-01 10:00:31 TP0] Load weight end. elapsed=30.12 s, type=Qwen3NextForCausalLM, avail mem=100.87 GB, mem usage=37.24 GB.
[2026-12-01 10:00:41 TP0] Load weight end. elapsed=3.02 s, type=Qwen3NextForCausalLMMTP, avail mem=98.77 GB, mem usage=2.10 GB.
"""


def test_the_last_load_sets_the_rebuilt_budget_and_the_first_stays_the_figure():
    log = parse_boot_log(LOG)
    assert log.ranks["TP0"]["avail_mem_after_load_gb"] == 100.87  # the target's line, as compared
    assert log.ranks["TP0"]["weight_mem_usage_gb"] == 37.24
    assert log.ranks["TP0"]["avail_mem_after_last_load_gb"] == 98.77
    ctx = checklog._Context()
    assert checklog._budget(log, ctx) == {"free_gib_before_load": 138.11, "free_gib_after_load": 98.77}
    assert any("after the draft model" in a for a in ctx.approximations)


def test_one_load_keeps_its_reading():
    log = parse_boot_log("\n".join(LOG.splitlines()[:2]) + "\n")
    assert "avail_mem_after_last_load_gb" not in log.ranks["TP0"]
    ctx = checklog._Context()
    assert checklog._budget(log, ctx) == {"free_gib_before_load": 138.11, "free_gib_after_load": 100.87}
    assert not any("draft" in a for a in ctx.approximations)
