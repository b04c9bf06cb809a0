"""The real public SGLang start-up logs (tests/data/bootlogs, copied unchanged from the
collection described in their INDEX): the reader gets exactly the figures each file lists
from its verbatim text.

Some files are an operator's transcription (fidelity B/C): a figure written in a table or in
prose ("160 slots, conv 0.09 + ssm 6.29") is not a log line, and NOT_LOG_LINES names each
one with the reason; every other figure the file lists must be read, with its printed value,
and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambasizer.service.startlog.parse import BootLogError, parse_boot_log

DATA = Path(__file__).resolve().parents[1] / "data" / "bootlogs"
FILES = sorted(p.name for p in DATA.glob("*.json"))

# The file's figure key -> the reader's name, where the collection spelled it differently.
ALIASES = {
    "intermediate_ssm_state_cache_gb": "intermediate_ssm_state_gb",
    "intermediate_conv_window_cache_gb": "intermediate_conv_window_gb",
    # Ultra-1 quotes the scheduler's figure as `max_running_requests=16` in backticks.
    "max_running_requests_effective": "max_running_requests",
}

_TABLE = "transcribed into a table by the operator, not a log line"
_PROSE = "written in prose by the operator, not a log line"
NOT_LOG_LINES = {
    "nemotron-3-nano-omni-30b-a3b-1.json": {"max_running_requests": "from the operator's server_args summary ('max_running_requests 32')"},
    "nemotron-3-super-120b-a12b-1.json": dict.fromkeys(("max_mamba_cache_size", "conv_state_gb", "ssm_state_gb", "intermediate_ssm_state_cache_gb", "intermediate_conv_window_cache_gb", "kv_tokens", "k_size_gb", "v_size_gb", "draft_k_size_gb", "draft_v_size_gb", "max_running_requests_flag"), _TABLE),
    "nemotron-3-super-120b-a12b-2.json": dict.fromkeys(("max_mamba_cache_size", "ssm_state_gb", "intermediate_ssm_state_cache_gb", "intermediate_conv_window_cache_gb", "max_running_requests", "context_len"), _PROSE),
    "nemotron-3-ultra-550b-a55b-1.json": dict.fromkeys(("ssm_state_gb", "conv_state_gb", "kv_tokens", "k_size_gb", "v_size_gb"), _PROSE),
}


def _expected(name: str, figures: dict) -> dict:
    skip = NOT_LOG_LINES.get(name, {})
    out = {}
    for key, value in figures.items():
        if "_author" in key or isinstance(value, dict) or key in skip:
            continue
        out[ALIASES.get(key, key)] = value
    return out


def _read(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_all_ten_logs_are_here():
    assert len(FILES) == 10, FILES


@pytest.mark.parametrize("name", FILES)
def test_reader_gets_exactly_the_listed_figures(name):
    entry = _read(name)
    figures = dict(entry["figures"])
    per_rank = figures.pop("per_rank", None)
    expected = _expected(name, figures)
    if not expected and per_rank is None:
        # Every figure of this file is transcribed: its text holds no start-up line.
        with pytest.raises(BootLogError, match="no SGLang start-up line"):
            parse_boot_log(entry["verbatim"])
        return
    log = parse_boot_log(entry["verbatim"])
    if per_rank is not None:
        # Per-rank figures on their rank; the rest (the scheduler's summary) on TP0.
        want = {rank: _expected(name, f) for rank, f in per_rank.items()}
        want["TP0"] = {**want["TP0"], **expected}
        assert log.ranks == want
        return
    merged: dict = {}
    for rank_figures in log.ranks.values():
        for key, value in rank_figures.items():
            assert merged.setdefault(key, value) == value, (key, log.ranks)
    assert merged == expected


def test_qwen35_397b_is_read_rank_by_rank():
    """The one raw (fidelity A) log: two ranks, timestamps in the prefix, every figure."""
    log = parse_boot_log(_read("qwen3.5-397b-a17b-1.json")["verbatim"])
    assert sorted(log.ranks) == ["TP0", "TP1"]
    assert log.ranks["TP1"]["kv_tokens"] == 580364
    assert log.ranks["TP0"]["available_gpu_mem_gb"] == 3.63
    assert "max_total_num_tokens" not in log.ranks["TP1"]  # the summary is printed on TP0 only


def test_nano_wrapped_lines_keep_their_rank_label():
    log = parse_boot_log(_read("nemotron-3-nano-1.json")["verbatim"])
    assert sorted(log.ranks) == ["TP0", "TP0..3"]
    assert log.ranks["TP0..3"]["avail_mem_after_load_gb"] == 7.95
    assert log.ranks["TP0"]["available_gpu_mem_gb"] == 3.39
