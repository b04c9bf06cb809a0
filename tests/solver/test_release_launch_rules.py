"""Per-release flags and launch resolution, pure (no SGLang import): `sglang_args` parsed as
the named release parses it, and the launch rules of service/solver/releases/launch_rules.py
in numbers. The tables themselves are checked against each release's own parser and
resolution by tests/conformance/test_release_flags.py and test_release_launch.py."""

from __future__ import annotations

import pytest

from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service import requests as wire
from mambasizer.service.sglang_args import parse_sglang_args
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.families import layout_from_hf_config
from mambasizer.service.solver.launch import resolve
from tests.conformance.test_launch_resolution import MODELS

H200_MIB = 143771


def _refusal(argv, release):
    with pytest.raises(PlanInputError) as err:
        parse_sglang_args(argv, release)
    return err.value


# --------------------------------------------------------------------------- flags


def test_the_deprecated_strategy_alias_parses_until_0_5_20():
    argv = ["--mamba-scheduler-strategy", "extra_buffer"]
    assert parse_sglang_args(argv, "0.5.19").server_args == {"mamba_radix_cache_strategy": "extra_buffer"}
    for release in ("0.5.20", "0.5.23"):
        err = _refusal(argv, release)
        assert err.field == "sglang_args"
        assert "--mamba-scheduler-strategy" in err.message and f"SGLang {release}" in err.message
        assert "--mamba-radix-cache-strategy" in err.allowed


def test_old_dests_become_our_fields():
    # <=0.5.13 names: the strategy, the decode graph's max bs, PCG's max tokens and switch.
    parsed = parse_sglang_args(
        ["--mamba-scheduler-strategy", "no_buffer", "--cuda-graph-max-bs", "64", "--piecewise-cuda-graph-max-tokens", "4096",
         "--disable-piecewise-cuda-graph"], "0.5.13.post1",
    )
    assert parsed.server_args == {"mamba_radix_cache_strategy": "no_buffer", "cuda_graph_max_bs_decode": 64,
                                  "cuda_graph_max_bs_prefill": 4096, "disable_prefill_cuda_graph": True}
    assert parsed.release == "0.5.13.post1"


def test_flags_a_release_lacks_and_choices_it_lacks_are_refused_naming_it():
    assert "--mamba-radix-cache-strategy" in _refusal(["--mamba-radix-cache-strategy", "auto"], "0.5.13").message
    assert "SGLang 0.5.21" in _refusal(["--attn-dp-size", "2"], "0.5.21").message
    assert parse_sglang_args(["--attn-dp-size", "2", "--tp", "2"], "0.5.22").server_args["attn_dp_size"] == 2
    # extra_buffer_lazy is a choice from 0.5.13 on.
    err = _refusal(["--mamba-scheduler-strategy", "extra_buffer_lazy"], "0.5.12")
    assert "invalid choice 'extra_buffer_lazy' for SGLang 0.5.12" in err.message
    assert err.allowed == ["auto", "no_buffer", "extra_buffer"]
    assert parse_sglang_args(["--mamba-scheduler-strategy", "extra_buffer_lazy"], "0.5.13").server_args
    # 0.5.8 knows only float32 / bfloat16 SSM states.
    assert "invalid choice 'float16'" in _refusal(["--mamba-ssm-dtype", "float16"], "0.5.8").message


def test_an_unknown_release_is_refused_on_sglang_version():
    err = _refusal(["--tp", "2"], "0.5.7")
    assert err.field == "sglang_version" and "0.5.23" in err.allowed and "0.5.8" in err.allowed


def test_a_request_parses_its_sglang_args_as_its_release():
    body = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"rest_gib": 60},
            "sglang_args": ["--tp", "4", "--mamba-scheduler-strategy", "no_buffer", "--disable-overlap-schedule"]}
    prepared = wire.prepare({**body, "sglang_version": "0.5.19"})
    assert prepared.request.server_args.mamba_radix_cache_strategy == "no_buffer"
    with pytest.raises(PlanInputError) as err:
        wire.prepare(body)  # 0.5.23 by default
    assert "--mamba-scheduler-strategy" in err.value.message and "0.5.23" in err.value.message


# --------------------------------------------------------------------------- launch rules


def _launch(model, release, **server_args):
    layout = layout_from_hf_config(MODELS[model], name=model)
    return resolve(layout, ServerArgs(**server_args), Env(), gpu_memory_mib=H200_MIB, draft_layers=None, needs_mfs=True,
                   release=release)


def test_qwen3_next_breakable_prefill_graph_from_0_5_15():
    """0.5.15 turns on the breakable prefill graph for Qwen3-Next (0.5.10-0.5.14 blacklist
    it for the piecewise graph). H200, tp 4: reserved = 512 + 8192*1.5 + 512*2 + 4/8*1024
    = 14336 MB -> round((143771 - 14336)/143771, 3) = 0.900; 0.5.15 adds 58 captured sizes
    * 8 MB = 464 MB -> 0.897 (0.003 lower)."""
    before, after = _launch("qwen3-next-80b-a3b-instruct", "0.5.14", tp_size=4), _launch("qwen3-next-80b-a3b-instruct", "0.5.15", tp_size=4)
    assert (before.prefill_cuda_graph, before.mem_fraction_static) == (False, 0.9)
    assert (after.prefill_cuda_graph, after.mem_fraction_static) == (True, 0.897)
    assert _launch("qwen3-next-80b-a3b-instruct", "0.5.23", tp_size=4).mem_fraction_static == 0.897


def test_auto_strategy_is_no_buffer_until_0_5_14():
    """S goes 3 -> 5 at 0.5.14: auto resolves to extra_buffer with overlap on."""
    old = _launch("qwen3-next-80b-a3b-instruct", "0.5.13", tp_size=4)
    new = _launch("qwen3-next-80b-a3b-instruct", "0.5.14", tp_size=4)
    assert (old.strategy, old.extra_buffer, old.disable_overlap_schedule) == ("no_buffer", False, True)
    assert (new.strategy, new.extra_buffer, new.disable_overlap_schedule) == ("extra_buffer", True, False)
    # <=0.5.13's no_buffer sets a page size above 1 back to 1 instead of refusing it.
    assert _launch("qwen3-next-80b-a3b-instruct", "0.5.13", tp_size=4, page_size=64).page_size == 1
    assert _launch("qwen3-next-80b-a3b-instruct", "0.5.13", tp_size=4, speculative_algorithm="NEXTN").rejections[0].exception == "ValueError"


def test_kimi_linear_radix_cache_is_off_until_0_5_14_and_extra_buffer_from_0_5_16():
    assert _launch("kimi-linear-48b-a3b-instruct", "0.5.13").disable_radix_cache is True
    assert _launch("kimi-linear-48b-a3b-instruct", "0.5.15").strategy == "no_buffer"
    assert _launch("kimi-linear-48b-a3b-instruct", "0.5.16").strategy == "extra_buffer"


def test_speculative_reserve_2_then_4_gb_then_gone():
    """After the 10 GB floor: 2048 MB (<=0.5.9), 4096 MB (0.5.10-0.5.13), none from 0.5.14 (0.5.10 alone also drops PCG with spec).
    Nemotron-H 8B, tp 1, EAGLE: reserved = max(512 + 12288 + 256*2 + 128 (+ PCG 464 from
    0.5.11), 10240) = 13440 / 13904 MB."""
    mfs = {v: _launch("nemotron-h-8b-base-8k", v, speculative_algorithm="EAGLE").mem_fraction_static
           for v in ("0.5.9", "0.5.13", "0.5.14")}
    assert mfs == {"0.5.9": round((H200_MIB - 13440 - 2048) / H200_MIB, 3), "0.5.13": round((H200_MIB - 13904 - 4096) / H200_MIB, 3),
                   "0.5.14": round((H200_MIB - 13904) / H200_MIB, 3)}


def test_0_5_8_exports_its_float32_ssm_flag_default():
    launch = _launch("qwen3-next+ssm-bf16", "0.5.8")
    assert (launch.ssm_dtype, launch.env_mamba_ssm_dtype) == ("float32", "float32")
    assert _launch("qwen3-next+ssm-bf16", "0.5.9").ssm_dtype == "bfloat16"


# --------------------------------------------------------------------------- per-release profile


def test_every_release_reads_its_launch_rules_once():
    """launch_profile is resolved once per release string (the same object every call), a
    post-release reads its base's rules, and a release outside the list is refused by name."""
    from mambasizer.schemas.releases import SUPPORTED_RELEASES
    from mambasizer.service.solver.releases import launch_rules as rules
    from mambasizer.service.solver.releases.registry import base_release, release_key

    for v in SUPPORTED_RELEASES:
        lp = rules.launch_profile(v)
        assert rules.launch_profile(v) is lp
        assert lp.release == base_release(v) and lp == rules.launch_profile(base_release(v))
        assert lp.is_default == (base_release(v) == "0.5.23")
    assert release_key("0.5.15.post1") == (0, 5, 15) < release_key("0.5.16")
    # spot values straight from the tables: 0.5.13's no_buffer era, 0.5.19's PP rule, 0.5.20's fallback
    assert rules.launch_profile("0.5.13").legacy_radix_era and not rules.launch_profile("0.5.14").legacy_radix_era
    assert rules.launch_profile("0.5.19").breakable_pp_off and not rules.launch_profile("0.5.18").breakable_pp_off
    assert rules.launch_profile("0.5.19").fallback_mem_fraction == 0.88 and rules.launch_profile("0.5.20").fallback_mem_fraction == 0.95
    assert rules.launch_profile("0.5.10").spec_reserve_mb("EAGLE") == 4 * 1024 and rules.launch_profile("0.5.14").spec_reserve_mb("EAGLE") == 0
    for bad in ("0.5.24", "0.5.7", "latest"):
        with pytest.raises(ValueError, match="unsupported SGLang release"):
            rules.launch_profile(bad)
        with pytest.raises(ValueError, match=r"supported: 0\.5\.8"):
            release_key(bad)
