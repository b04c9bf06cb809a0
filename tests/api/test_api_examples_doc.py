"""docs/api-examples.md is real output: scripts/gen_api_examples.py renders it from the app
and the CLI, and this test fails when the committed file has drifted from what they print
(it once lacked the Plan's `advice` field)."""

from __future__ import annotations

import difflib
from pathlib import Path

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    return load_script(ROOT / "scripts" / "gen_api_examples.py", "gen_api_examples")


def test_api_examples_doc_is_current():
    gen = _generator()
    rendered = gen.render()
    committed = gen.OUTPUT.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(committed.splitlines(True), rendered.splitlines(True),
                                        "docs/api-examples.md (committed)", "rendered now", n=1))
    assert rendered == committed, f"regenerate with: python scripts/gen_api_examples.py\n{diff[:4000]}"


def test_rendered_doc_carries_the_real_plan():
    """The generator does not paper over a difference: the API body and the CLI's --json agree,
    the refused request is the problem+json the app sends, and the figures are the solver's."""
    from mambasizer.service.planner import plan

    gen = _generator()
    text = gen.render()
    p = plan({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4},
              "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 101.3, "gpu_memory_mib": 143771}})
    assert "\nidentical\n" in text and "DIFFERENT" not in text
    assert f'"max_running_requests": {p.max_running_requests},' in text
    assert f'"max_total_num_tokens": {p.max_total_num_tokens},' in text
    assert '"advice": []' in text
    assert "HTTP/1.1 422 " in text and '"field":"server_args.pp_size"' in text
    assert "None" not in text.split("## The same on the command line")[1].split("## Cost")[0]
