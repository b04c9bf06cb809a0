"""README's outputs are the code's real outputs: every `mambasizer plan examples/F` block, every
`mambasizer check-log` block (of a log shipped in examples/logs/), every `mambasizer recommend
examples/F` block, the check-log curl example and the sweep example are re-run and compared line
by line (a README block may stop before the
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


def test_every_recommend_block_is_the_real_output():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme_outputs.recommend_blocks(text)
    # Kimi-K3 on H200s, and Qwen3-Next across H200 / B200 / MI300X with prices
    assert [argv[1] for argv in (b[0] for b in blocks)] == ["examples/recommend-kimi-k3-h200.json", "examples/recommend-qwen3-next-three-gpus.json"]
    for argv, shown in blocks:
        assert shown == readme_outputs.cli_output(argv), f"README's block {argv} drifted: run scripts/readme_outputs.py"


def test_every_check_launch_example_is_the_real_output():
    """`check`'s launch form as deployments write it (--model-path, --gpu-memory-mib, a refusal)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme_outputs.check_launch_blocks(text)
    assert len(blocks) >= 3
    for argv, shown in blocks:
        assert shown == readme_outputs.check_output(argv), f"README's check example {argv} drifted: run scripts/readme_outputs.py"


def test_the_sweep_example_is_the_real_output():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body, shown = readme_outputs.sweep_block(text)
    assert shown == readme_outputs.sweep_output(body), "README's sweep example drifted: run scripts/readme_outputs.py"


def test_every_check_log_block_is_the_real_output_of_a_shipped_log():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme_outputs.checklog_blocks(text)
    assert len(blocks) >= 2  # the ktransformers#1870 log and the Nemotron-3-Nano XPU log
    for argv, shown in blocks:
        logs = [a for a in argv if a.endswith(".log")]
        assert logs and all((ROOT / a).is_file() for a in logs), f"README's check-log example uses a log that does not ship: {logs}"
        real = readme_outputs.cli_output(argv)
        # each run between `...` lines is the real output's, in order
        assert readme_outputs.refresh_elided(shown, real) == shown, f"README's check-log block {argv} drifted: run scripts/readme_outputs.py"
        assert shown[-1] == real[-1]  # the verdict line


def test_the_check_log_curl_example_is_the_real_answer():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = readme_outputs.checklog_curl(text)
    assert found is not None, "README has no POST /v1/check-log example"
    log_path, figure, shown = found
    assert (ROOT / log_path).is_file()
    assert shown == readme_outputs.checklog_curl_output(log_path, figure)


def test_the_example_logs_equal_their_sources():
    import json

    from mambasizer.service.api.checklog import EXAMPLE_LOG

    logs = ROOT / "examples" / "logs"
    for name, source in (("ktransformers-1870.log", "qwen3.5-397b-a17b-1.json"), ("nemotron-3-nano-xpu.log", "nemotron-3-nano-1.json")):
        entry = json.loads((ROOT / "tests" / "data" / "bootlogs" / source).read_text(encoding="utf-8"))
        assert (logs / name).read_text(encoding="utf-8") == entry["verbatim"].rstrip("\n") + "\n", name
        assert name in (logs / "SOURCES.md").read_text(encoding="utf-8")
    assert (logs / "nemotron-h-8b-sglang-0.5.23.log").read_text(encoding="utf-8") == EXAMPLE_LOG


def test_the_recommend_disaggregated_example_is_the_real_output():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme_outputs.recommend_disaggregated_blocks(text)
    assert len(blocks) == 3  # the sides, the pair, why
    for example, flag, projection, shown in blocks:
        assert (ROOT / example).is_file()
        real = readme_outputs.recommend_disaggregated_output(example, flag, projection)
        assert shown == real, f"README's recommend/disaggregated example ({projection}) drifted: run scripts/readme_outputs.py"
