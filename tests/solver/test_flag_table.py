"""The flag table (service/sglang_flag_table.py): one row per flag of SGLang 0.5.23's parser,
and every row's verdict is what `parse_sglang_args` does with a non-default value of it.

    .venv/bin/python -m pytest tests/solver/test_flag_table.py -q -p no:cacheprovider
"""

from __future__ import annotations

import collections
import json

import pytest

from mambasizer.service import sglang_args
from mambasizer.service.sglang_args import parse_sglang_args
from mambasizer.service.sglang_flag_table import FLAGS_FILE, flag_table, verdict
from mambasizer.service.solver.errors import PlanInputError

ENTRIES = json.loads(FLAGS_FILE.read_text())["flags"]
# The primary spelling of each dest (aliases share it).
PRIMARY: dict[str, dict] = {}
for _e in ENTRIES:
    PRIMARY.setdefault(_e["dest"], _e)
CHOICES = json.loads(sglang_args.RELEASE_FLAGS_FILE.read_text())["base_choices"]

# Valid values for the modelled flags whose value parser is stricter than "a number".
MODELLED_VALUES = {
    "kv_cache_dtype": "fp8_e4m3", "mamba_ssm_dtype": "bfloat16", "mamba_radix_cache_strategy": "no_buffer",
    "speculative_algorithm": "EAGLE", "attention_backend": "triton", "disaggregation_mode": "decode",
    "moe_a2a_backend": "deepep", "linear_attn_backend": "flashinfer", "linear_attn_decode_backend": "flashinfer",
    "linear_attn_prefill_backend": "flashinfer", "linear_attn_verify_backend": "nv_cutedsl",
    "mem_fraction_static": "0.8", "mamba_full_memory_ratio": "0.5", "max_total_tokens": "128k", "context_length": "32k",
    "max_prefill_tokens": "8k", "model_path": "org/model", "served_model_name": "m", "speculative_draft_model_path": "org/d",
    "device": "cuda", "dp_size": "2", "mamba_max_states_per_path": "4",
}


def _argv(dest: str) -> list[str]:
    """A launch line giving `dest` a value other than SGLang's default (its default where
    the parser allows no other: a store_true flag that is on, a single choice)."""
    e = PRIMARY[dest]
    opt = e["options"][0]
    if e["nargs"] == 0:
        if e["default"] is True:
            return [f"--no-{opt[2:]}"] if e["negatable"] else [opt]
        return [opt]
    if dest in MODELLED_VALUES:
        return [opt, MODELLED_VALUES[dest]]
    choices = CHOICES.get(opt)
    if choices:
        return [opt, str(next((c for c in choices if c != e["default"]), e["default"]))]
    default = e["default"]
    if isinstance(default, bool) or default is None:
        value = "1"
    elif isinstance(default, int):
        value = str(default + 1)
    elif isinstance(default, float):
        value = str(default + 0.5)
    else:
        value = "x"
    return [opt, value] + (["2"] if e["nargs"] in ("+", "*") else [])


def test_one_row_per_flag_of_sglangs_parser():
    table = flag_table()
    assert set(table) == set(PRIMARY)
    counts = collections.Counter(r.verdict for r in table.values())
    print(f"\nflag table: {len(table)} dests of SGLang 0.5.23's parser: {dict(counts)}")
    assert all(r.reason for r in table.values())


def test_modelled_rows_are_the_parsers_modelled_flags():
    modelled = {d for d, r in flag_table().items() if r.verdict == "modelled"}
    assert modelled == set(sglang_args.MODELLED) | (sglang_args.SPECIAL - {"config"})
    assert sglang_args.IGNORED == {d for d, r in flag_table().items() if r.verdict == "no_effect"}


@pytest.mark.parametrize("dest", sorted(PRIMARY))
def test_every_flag_has_its_verdict(dest):
    row = verdict(dest)
    assert row is not None
    argv = _argv(dest)
    e = PRIMARY[dest]
    at_default = (e["nargs"] == 0 and e["default"] is True and not e["negatable"]) or (
        len(argv) == 2 and argv[1] == str(e["default"]) and dest not in MODELLED_VALUES)
    if row.verdict == "refused" and not at_default:
        with pytest.raises(PlanInputError) as exc:
            parse_sglang_args(argv)
        assert exc.value.field == "sglang_args"
        if dest != "config":
            assert row.reason in exc.value.message, exc.value.message
        return
    parsed = parse_sglang_args(argv)
    if row.verdict == "no_effect" or at_default:
        assert parsed.server_args == {} and argv[0] in parsed.ignored, (argv, parsed)
    elif dest in sglang_args.MODELLED:
        assert dest in parsed.server_args, (argv, parsed.server_args)


@pytest.mark.parametrize("argv", [
    ["--disable-cuda-graph-padding"], ["--deepep-mode", "normal"], ["--deepep-mode", "low_latency"],
    ["--enable-deterministic-inference"], ["--speculative-dflash-block-size", "8"],
    ["--disaggregation-transfer-backend", "nixl"],
])
def test_real_launch_line_flags_are_accepted(argv):
    """Flags from public launch lines that do not move memory (each row cites why)."""
    from mambasizer.service.planner import plan
    from mambasizer.service.requests import prepare
    from mambasizer.service.requests.command_line import launch_body

    body = launch_body(["--tp", "4", *argv], budget={"rest_gib": 60.0}, preset="qwen3-next-80b-a3b-instruct")
    prepared = prepare(body)
    assert plan(prepared.request).feasible
