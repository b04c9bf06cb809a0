"""README's outputs are the code's real outputs: every `mambasizer plan examples/F` block and
the sweep example are re-run and compared line by line (a README block may stop before the
end of the output, never differ from it). `scripts/readme_outputs.py` rewrites them."""

from __future__ import annotations

from pathlib import Path

from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
readme_outputs = load_script(ROOT / "scripts" / "readme_outputs.py", "readme_outputs")


def test_every_plan_block_is_the_real_output():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme_outputs.plan_blocks(text)
    assert len(blocks) >= 2  # the GPU-only and the measured worked examples
    for example, shown in blocks:
        real = readme_outputs.plan_output(example)
        assert shown == real[: len(shown)], f"README's block for examples/{example} drifted: run scripts/readme_outputs.py"


def test_the_sweep_example_is_the_real_output():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body, shown = readme_outputs.sweep_block(text)
    assert shown == readme_outputs.sweep_output(body), "README's sweep example drifted: run scripts/readme_outputs.py"
