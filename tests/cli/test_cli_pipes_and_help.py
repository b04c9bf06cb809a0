"""What every `mambasizer` command shares: a reader that closes the pipe early
(`mambasizer plan ... | head`) ends it quietly with the SIGPIPE code, never with a traceback
or 1 (which means "SGLang would not start"), and the top-level --help is for users."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mambasizer.service.cli import EXIT_BROKEN_PIPE

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _closed_reader(argv: list[str]) -> subprocess.CompletedProcess:
    """Run `mambasizer ARGV` with its stdout a pipe whose read end is already closed (what
    `| head -1` leaves once head exits): every write fails with EPIPE."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mambasizer.service.cli", *argv], stdout=write_fd, stderr=subprocess.PIPE,
            text=True, timeout=120, cwd=ROOT, env=ENV,
        )
    finally:
        os.close(write_fd)
    return proc


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "examples/kimi-k3-h200-tp8-pp8.json"],
        ["plan", "--json", "examples/kimi-k3-h200-tp8-pp8.json"],
        ["presets"],
        ["check", "--preset", "qwen3-next-80b-a3b-instruct", "--gpu", "h200", "--", "--tp-size", "4"],
    ],
)
def test_a_closed_pipe_exits_quietly(argv):
    proc = _closed_reader(argv)
    assert proc.returncode == EXIT_BROKEN_PIPE == 141
    assert proc.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored" line


def test_head_reads_the_first_line_and_the_command_exits_141():
    # The real shell pipeline: bash's PIPESTATUS holds the left side's exit code.
    script = "python -m mambasizer.service.cli plan examples/kimi-k3-h200-tp8-pp8.json | head -1; echo \"rc=${PIPESTATUS[0]}\""
    proc = subprocess.run(["bash", "-c", script.replace("python", sys.executable, 1)], capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("kimi-k3 (kimi_linear), sglang-0.5.23 accounting: SGLang 0.5.23 would start")
    assert lines[-1] in ("rc=0", "rc=141")  # 0 when the whole table fit in the pipe before head exited
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def test_top_level_help_is_for_users():
    proc = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT, env=ENV)
    assert proc.returncode == 0
    description = proc.stdout.split("\n\n")[1]
    assert description.startswith("Size SGLang 0.5.23's mamba state pool and KV cache for a hybrid LLM before it boots")
    assert "one module per subcommand" not in proc.stdout  # the developer docstring
    assert "exit codes: 0 ok, 1 SGLang would not start" in proc.stdout
