"""check-log tells the SGLang release that wrote a log: the caller's sglang_version, the printed
version, the server_args record's fields (each release's own argparse surface,
service/sglang_flags_releases.json) and the start-up wordings that changed between releases
(service/startlog/formats.py, from the release research's §5 table); then it compares with
that release's plan.

The real logs are tests/data/bootlogs (copied with their sources, see INDEX.md there); none
prints its version in its text and none holds a server_args record, so the records below are
built from each release's parser table (a record's field names are not observed figures).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambasizer.schemas.releases import SUPPORTED_RELEASES
from mambasizer.service.sglang_args import FROM_CLI_ARGS_RENAMES, _flags
from mambasizer.service.solver import PlanInputError
from mambasizer.service.startlog.compare import check_log
from mambasizer.service.startlog.parse import parse_boot_log
from mambasizer.service.startlog.release import _bases, detect_release
from synth_log import estimated_budget, synth_log

DATA = Path(__file__).resolve().parents[1] / "data" / "bootlogs"


def _real(name: str) -> str:
    return json.loads((DATA / name).read_text())["verbatim"]


# --------------------------------------------------------------------------- real logs, by their wording

def test_real_0_5_9_log_is_told_by_its_wordings():
    """ktransformers#1870: the issue's environment says sglang 0.5.9; the log prints no version.
    `Load weight end. elapsed=..., dtype=...` is 0.5.9's wording alone."""
    found = detect_release(parse_boot_log(_real("qwen3.5-397b-a17b-1.json")))
    assert (found.release, found.source, found.candidates, found.same_accounting) == ("0.5.9", "inferred", ("0.5.9", "0.5.9"), True)
    assert found.note is None


def test_real_xpu_nano_log_is_a_range_and_says_it_guessed():
    """The Nemotron-3-Nano XPU report (version not stated): elapsed= without dtype= (0.5.10 on) and a
    KV line without dtype: (up to 0.5.12.post1)."""
    found = detect_release(parse_boot_log(_real("nemotron-3-nano-1.json")))
    assert (found.release, found.source, found.candidates, found.same_accounting) == ("0.5.12.post1", "inferred", ("0.5.10", "0.5.12.post1"), False)
    assert found.note == (
        "the release is guessed: the log's text allows 0.5.10-0.5.12.post1 (they do not all size alike); "
        "compared with 0.5.12.post1, the newest"
    )


@pytest.mark.parametrize(("name", "stated", "first", "last"), [
    ("nemotron-3-nano-omni-30b-a3b-1.json", "0.5.21", "0.5.13", "0.5.23"),  # KV line with dtype:
    ("qwen3.5-35b-a3b-1.json", None, "0.5.8", "0.5.12.post1"),  # KV line without dtype:
    ("qwen3.5-35b-a3b-2.json", None, "0.5.10", "0.5.23"),  # `quant=` and no dtype= in 'Load weight end'
])
def test_real_logs_ranges_hold_their_stated_release(name, stated, first, last):
    found = detect_release(parse_boot_log(_real(name)))
    assert found.source == "inferred" and found.candidates == (first, last)
    if stated is not None:  # the collection's source names the release: it lies in the range
        assert SUPPORTED_RELEASES.index(first) <= SUPPORTED_RELEASES.index(stated) <= SUPPORTED_RELEASES.index(last)


def test_a_log_that_tells_nothing_assumes_0_5_23_and_says_so():
    found = detect_release(parse_boot_log("max_total_num_tokens=1000, max_running_requests=8\n"))
    assert (found.release, found.source, found.candidates) == ("0.5.23", "assumed default", ("0.5.8", "0.5.23"))
    assert "SGLang 0.5.23's rules are assumed" in found.note


# --------------------------------------------------------------------------- server_args records

def _whole_record(base: str) -> dict:
    """Every field release `base`'s ServerArgs prints, at its parser's default."""
    return {FROM_CLI_ARGS_RENAMES.get(d, d): f.default for d, f in _flags(base)[1].items()}


@pytest.mark.parametrize("base", _bases())
def test_a_whole_record_tells_its_release_exactly(base):
    text = "server_args=" + repr({**_whole_record(base), "model_path": "x"}) + "\nmax_total_num_tokens=10\n"
    found = detect_release(parse_boot_log(text))
    assert found.source == "inferred" and found.same_accounting is True
    assert {r.split(".post")[0] for r in found.candidates} == {base}
    assert found.how.startswith("inferred from the server_args record's fields `")


def test_a_partial_record_bounds_by_the_fields_it_has():
    """`mamba_scheduler_strategy` is a field up to 0.5.13 (0.5.14 renamed it), and the KV line's
    dtype: is printed from 0.5.13: together, 0.5.13 alone; the old field reaches the plan under its new name."""
    text = (
        "server_args={'model_path': 'nvidia/Nemotron-H-8B-Base-8K', 'mamba_scheduler_strategy': 'no_buffer', 'mem_fraction_static': 0.85}\n"
        "Load weight end. elapsed=30.12 s, type=NemotronHForCausalLM, avail mem=63.60 GB, mem usage=15.50 GB.\n"
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000, K size: 0.01 GB, V size: 0.01 GB\n"
    )
    found = detect_release(parse_boot_log(text))
    assert (found.release, found.candidates, found.same_accounting) == ("0.5.13.post1", ("0.5.13", "0.5.13.post1"), True)
    assert "`mamba_scheduler_strategy` (up to 0.5.13.post1)" in found.how
    result = check_log(text)
    request = json.loads(next(n for n in result.notes if n.startswith("plan request: ")).removeprefix("plan request: "))
    assert request["sglang_version"] == "0.5.13.post1"
    assert request["server_args"]["mamba_radix_cache_strategy"] == "no_buffer"
    # The parallel sizes print as ServerArgs fields in every release (tp_size, not tensor_parallel_size).
    found = detect_release(parse_boot_log(text.replace("'mem_fraction_static'", "'tp_size': 2, 'mem_fraction_static'")))
    assert found.candidates == ("0.5.13", "0.5.13.post1")
    # A field 0.5.13 parses as attention_context_parallel_size, away from its default, is refused by
    # the flag 0.5.13's own parser spells it with, as the API refuses that launch.
    with pytest.raises(PlanInputError) as exc:
        check_log(text.replace("'mem_fraction_static'", "'attn_cp_size': 2, 'mem_fraction_static'"))
    assert exc.value.message.startswith("--attention-context-parallel-size changes SGLang 0.5.13's sizing"), exc.value.message


def test_record_and_wordings_that_disagree_trust_the_record():
    text = (
        "server_args={'model_path': 'x', 'dcp_size': 1}\n"  # dcp_size: 0.5.15 on
        "KV Cache is allocated. #tokens: 1000, K size: 0.01 GB, V size: 0.01 GB\n"  # no dtype: up to 0.5.12.post1
    )
    found = detect_release(parse_boot_log(text))
    assert (found.release, found.candidates) == ("0.5.23", ("0.5.15", "0.5.23"))
    assert "point to another release than the server_args record" in found.note


# --------------------------------------------------------------------------- printed, override, nearest

@pytest.mark.parametrize(("line", "release", "note"), [
    ("sglang==0.5.19", "0.5.19", None),
    ("SGLang version: 0.5.15.post1", "0.5.15.post1", None),
    ("sglang==0.5.24", "0.5.23", "SGLang 0.5.24 is newer than any release mambasizer carries: compared with 0.5.23, the nearest"),
    ("sglang==0.5.7", "0.5.8", "SGLang 0.5.7 is older than any release mambasizer carries: compared with 0.5.8, the nearest"),
    ("sglang==0.5.16.post2", "0.5.16", "0.5.16.post2 is a post-release of 0.5.16, which mambasizer carries as 0.5.16"),
    ("sglang==0.5.23+cu130", "0.5.23", "local build '0.5.23+cu130' of 0.5.23"),
])
def test_printed_version_is_used_or_the_nearest_said(line, release, note):
    found = detect_release(parse_boot_log(f"{line}\nmax_total_num_tokens=1000\n"))
    assert (found.release, found.source, found.note) == (release, "printed", note)


def test_a_development_build_version_falls_back_to_the_text():
    """The GB10 nightly of qwen3.5-35b-a3b-2.json reports `0.0.0.dev1+g977830e91`: no release."""
    text = "sglang==0.0.0.dev1+g977830e91\n" + _real("qwen3.5-35b-a3b-2.json")
    found = detect_release(parse_boot_log(text))
    assert (found.release, found.source, found.candidates) == ("0.5.23", "inferred", ("0.5.10", "0.5.23"))
    assert found.note.startswith("the printed version '0.0.0.dev1+g977830e91' is a development build's and names no release")


def test_the_request_wins_and_is_checked():
    log = parse_boot_log(_real("qwen3.5-397b-a17b-1.json"))
    found = detect_release(log, "0.5.14")
    assert (found.release, found.source) == ("0.5.14", "request")
    assert found.note.endswith("not 0.5.14")
    with pytest.raises(PlanInputError) as err:
        check_log(log, sglang_version="0.6.1")
    assert err.value.field == "sglang_version" and "0.5.23" in err.value.allowed


# --------------------------------------------------------------------------- narrowed by the figures

def test_a_guessed_range_is_narrowed_by_the_figures():
    """A BUILT log (synth_log.py: 0.5.23's wordings, no version line, a partial record) filled with
    0.5.13's plan of Qwen3.5-35B-A3B TP 2: the wordings allow 0.5.13 on; planning each accounting
    epoch in that range, only 0.5.13's prints every figure, so the comparison uses 0.5.13's rules."""
    base: dict = {"model": {"preset": "qwen3.5-35b-a3b"}, "server_args": {"tp_size": 2, "mem_fraction_static": 0.85}}
    base["budget"] = estimated_budget(base)
    text, planned = synth_log({**base, "sglang_version": "0.5.13"}, "Qwen/Qwen3.5-35B-A3B", version_line=False)
    result = check_log(text)
    release = result.data["release"]
    assert (release["sglang_version"], release["source"]) == ("0.5.13.post1", "inferred")
    assert release["candidates"] == {"first": "0.5.13", "last": "0.5.13.post1", "same_accounting": True}
    assert release["how"].endswith("; the figures only 0.5.13 print")
    assert result.all_match and _kv(result) == planned.max_total_num_tokens == 4668837
    # 0.5.23's plan of the same log: its figures print only from 0.5.18 on (KV 4661741, 1333 slots).
    text, planned = synth_log({**base, "sglang_version": "0.5.23"}, "Qwen/Qwen3.5-35B-A3B", version_line=False)
    release = check_log(text).data["release"]
    assert (release["sglang_version"], release["candidates"]["first"], release["candidates"]["last"]) == ("0.5.23", "0.5.18", "0.5.23")
    assert planned.max_mamba_cache_size == 1333


def _kv(result) -> int:
    return result.data["ranks"][0]["figures"]["kv_tokens"]["predicted"]
