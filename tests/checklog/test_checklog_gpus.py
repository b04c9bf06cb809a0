"""check-log resolves the run on the GPU it ran on: the log's device line (or the caller's
`gpu`) names a catalog part, and the rebuilt plan carries it as `budget.gpu`, so the backend,
the page and the capacity defaults are that part's (service/solver/platform.py).

No public start-up log of a hybrid model on a B200 exists (tests/data/bootlogs/INDEX.md: the
Blackwell logs there are GB10), so the B200 logs here are BUILT from the B200 plan in SGLang 0.5.23's line formats (synth_log.py).
What is checked is check-log's part: the device line picks the resolution.
"""

from __future__ import annotations

from typing import Any

from mambasizer.service.planner import plan
from mambasizer.service.startlog.compare import check_log
from synth_log import estimated_budget, synth_log

MODEL_PATH = "nvidia/Nemotron-H-56B-Base-8K"
BASE: dict[str, Any] = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2, "mem_fraction_static": 0.85}}
# A healthy boot's free memory as estimated on a B200 (so the weights line matches too)
MEASURED = estimated_budget(BASE, "b200")
REQUEST: dict[str, Any] = {**BASE, "budget": {**MEASURED, "gpu": "b200"}}


def _kv(result) -> tuple[int, int | None]:
    fig = result.data["ranks"][0]["figures"]["kv_tokens"]
    return fig["logged"], fig["predicted"]


def test_a_b200_log_is_planned_on_b200():
    text, b200 = synth_log(REQUEST, MODEL_PATH, device_name="NVIDIA B200")
    hopper = plan({**REQUEST, "budget": MEASURED})
    # the two resolutions differ on this model: trtllm_mha pages the KV by 64 on Blackwell
    assert (b200.resolved.attention_backend, b200.resolved.page_size) == ("trtllm_mha", 64)
    assert (hopper.resolved.attention_backend, hopper.resolved.page_size) == ("fa3", 1)
    assert (b200.max_total_num_tokens, hopper.max_total_num_tokens) == (2_717_760, 2_717_819)
    result = check_log(text)
    assert result.all_match, result.data
    assert _kv(result) == (2_717_760, 2_717_760)
    assert result.plan.resolved.gpu == "b200" and result.plan.resolved.page_size == 64
    assert not any("not modelled" in n for n in result.notes)


def test_the_callers_gpu_wins_over_a_missing_device_line():
    text, _ = synth_log(REQUEST, MODEL_PATH, version_line=False)
    assert _kv(check_log(text)) == (2_717_760, 2_717_819)  # no device line: Hopper's resolution, a mismatch
    named = check_log(text, gpu="b200")
    assert named.all_match and _kv(named) == (2_717_760, 2_717_760)


def test_a_part_outside_the_catalog_keeps_its_cause():
    text, _ = synth_log(REQUEST, MODEL_PATH, device_name="NVIDIA A40")
    result = check_log(text)
    assert result.plan.resolved.gpu == "h200"  # the default resolution, with the cause said
    assert not result.all_match
    fig = result.data["ranks"][0]["figures"]["kv_tokens"]
    assert "GPU NVIDIA A40: a platform whose resolution is not modelled" in fig["cause"]
