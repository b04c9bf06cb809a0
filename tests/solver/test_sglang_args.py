"""service/sglang_args.py: SGLang 0.5.23 launch arguments, as operators write them.

The pure-Python tests run everywhere. The conformance tests build SGLang 0.5.23's own
argparse parser (`ServerArgs.add_cli_args`, what `prepare_server_args` uses) and check that
(1) our flag table is exactly that parser's, (2) every flag we model, ignore or refuse is one
of its flags, (3) parsing sample command lines with SGLang's parser gives the values we read,
and (4) resolving those command lines end to end (SGLang: parser -> ServerArgs ->
resolve_once -> check_server_args; ours: parse_sglang_args -> launch.resolve) agrees.

    .venv/bin/python -m tests.solver.test_sglang_args --write   # regenerate the flag table
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys

import pytest

from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service import sglang_args as sa
from mambasizer.service.sglang_args import parse_sglang_args
from mambasizer.service.solver.errors import PlanInputError

HAS_SGLANG = importlib.util.find_spec("sglang") is not None
needs_sglang = pytest.mark.skipif(not HAS_SGLANG, reason="the sglang 0.5.23 wheel is not installed")


# --------------------------------------------------------------------------- pure tests


def test_aliases_and_both_value_spellings():
    p = parse_sglang_args(["--tensor-parallel-size", "4", "--pipeline-parallel-size=2", "--page-size=16", "--mem-fraction-static", "0.85"])
    assert p.server_args == {"tp_size": 4, "pp_size": 2, "page_size": 16, "mem_fraction_static": 0.85}
    assert parse_sglang_args(["--tp-size=8"]).server_args == {"tp_size": 8}


def test_unique_prefixes_are_accepted_like_argparse():
    assert parse_sglang_args(["--tp", "2"]).server_args == {"tp_size": 2}
    assert parse_sglang_args(["--mem-frac", "0.8"]).server_args == {"mem_fraction_static": 0.8}
    with pytest.raises(PlanInputError) as exc:
        parse_sglang_args(["--mamba", "x"])  # --mamba-backend, --mamba-ssm-dtype, ...
    assert "ambiguous" in exc.value.message


def test_last_occurrence_wins_and_human_readable_ints():
    p = parse_sglang_args(["--tp", "2", "--tp", "4", "--context-length", "128k", "--max-total-tokens", "1Mi"])
    assert p.server_args == {"tp_size": 4, "context_length": 128_000, "max_total_tokens": 1 << 20}
    assert sa.human_readable_int("25.6k") == 25600
    with pytest.raises(ValueError):
        sa.human_readable_int("1.5Ki")


def test_store_true_flags_and_no_prefix():
    p = parse_sglang_args(["--disable-radix-cache", "--disable-overlap-schedule", "--enable-linear-replayssm-spec"])
    assert p.server_args == {"disable_radix_cache": True, "disable_overlap_schedule": True, "enable_linear_replayssm_spec": True}
    p = parse_sglang_args(["--no-enable-tf32-matmul"])
    assert p.server_args == {} and p.ignored == ["--no-enable-tf32-matmul"]
    with pytest.raises(PlanInputError):
        parse_sglang_args(["--disable-radix-cache=1"])


def test_speculative_algorithm_is_upper_cased_and_limited():
    assert parse_sglang_args(["--speculative-algorithm", "nextn"]).server_args == {"speculative_algorithm": "NEXTN"}
    assert parse_sglang_args(["--speculative-algorithm", "dflash"]).server_args == {"speculative_algorithm": "DFLASH"}
    with pytest.raises(PlanInputError) as exc:
        parse_sglang_args(["--speculative-algorithm", "UNO"])
    assert "not model" in exc.value.message and "--speculative-algorithm" in exc.value.allowed


def test_ignored_flags_are_listed_not_sized():
    argv = ["--model-path", "Qwen/Qwen3-Next-80B-A3B-Instruct", "--host", "0.0.0.0", "--port", "30000",
            "--trust-remote-code", "--served-model-name", "qwen", "--tool-call-parser", "qwen25",
            "--reasoning-parser", "qwen3", "--log-level", "info", "--tp", "4"]
    p = parse_sglang_args(argv)
    assert p.server_args == {"tp_size": 4}
    assert p.model_path == "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert {"--model-path", "--host", "--port", "--trust-remote-code", "--served-model-name", "--tool-call-parser"} <= set(p.ignored)


@pytest.mark.parametrize(
    "argv",
    [
        ["--enable-unified-memory"],
        ["--attention-backend", "trtllm_mha"],
        ["--enable-lora"],
        ["--moe-a2a-backend", "mooncake"],
        ["--disaggregation-mode", "encode"],
        ["--cuda-graph-bs-decode", "1", "2", "4"],
        ["--dtype", "float16"],
        ["--device", "cpu"],
        ["--config", "serve.yaml"],
    ],
)
def test_sizing_flags_that_are_not_modelled_are_refused(argv):
    with pytest.raises(PlanInputError) as exc:
        parse_sglang_args(argv)
    assert exc.value.field == "sglang_args"


def test_unmodelled_flags_at_sglangs_default_are_no_ops():
    p = parse_sglang_args(["--dtype", "auto", "--max-lora-chunk-size", "16", "--device", "cuda", "--deepep-mode", "auto"])
    assert p.server_args == {}
    assert {"--dtype", "--max-lora-chunk-size", "--device", "--deepep-mode"} <= set(p.ignored)


def test_unknown_flags_name_close_matches():
    with pytest.raises(PlanInputError) as exc:
        parse_sglang_args(["--page-sise", "16"])
    assert "unknown flag --page-sise" in exc.value.message and "--page-size" in exc.value.allowed
    with pytest.raises(PlanInputError):
        parse_sglang_args(["--not-a-flag"])
    with pytest.raises(PlanInputError):
        parse_sglang_args(["stray"])
    with pytest.raises(PlanInputError):
        parse_sglang_args(["--tp"])  # needs a value
    with pytest.raises(PlanInputError):
        parse_sglang_args(["--tp", "two"])


def test_deprecated_dp_attention_spelling_is_attention_dp():
    assert parse_sglang_args(["--tp", "8", "--dp-size", "4", "--enable-dp-attention"]).server_args == {"tp_size": 8, "attn_dp_size": 4}
    assert parse_sglang_args(["--tp", "8", "--attention-data-parallel-size", "2"]).server_args == {"tp_size": 8, "attn_dp_size": 2}
    p = parse_sglang_args(["--tp", "2", "--dp-size", "3"])  # replicas: each sized alike
    assert p.server_args == {"tp_size": 2} and any("replicas" in w for w in p.warnings)
    with pytest.raises(PlanInputError) as exc:
        parse_sglang_args(["--tp", "8", "--dp-size", "2", "--attn-dp-size", "4"])
    assert "not supported" in exc.value.message


def test_draft_model_is_accepted_with_a_warning_and_int8_checkpoint_is_modelled():
    p = parse_sglang_args(["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "org/draft", "--enable-int8-mamba-checkpoint",
                           "--int8-mamba-ckpt-size", "900"])
    assert p.server_args == {"speculative_algorithm": "EAGLE3", "enable_int8_mamba_checkpoint": True, "int8_mamba_ckpt_size": 900}
    assert p.draft_model_path == "org/draft"
    assert any("draft_model.num_layers" in w for w in p.warnings)


def test_env_words_and_launcher_words():
    p = parse_sglang_args(["SGLANG_MAMBA_SSM_DTYPE=bfloat16", "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK=1", "CUDA_VISIBLE_DEVICES=0,1",
                           "python3", "-m", "sglang.launch_server", "--tp", "2"])
    assert p.env == {"SGLANG_MAMBA_SSM_DTYPE": "bfloat16", "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": True}
    assert p.server_args == {"tp_size": 2} and "CUDA_VISIBLE_DEVICES=0,1" in p.ignored
    with pytest.raises(PlanInputError):
        parse_sglang_args(["SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=1", "--tp", "2"])


def test_every_modelled_flag_is_a_server_args_field():
    assert set(sa.MODELLED) <= set(ServerArgs.model_fields)
    assert set(sa.ENV_NAMES) == set(Env.model_fields)


# --------------------------------------------------------------------------- conformance with SGLang's parser


def real_parser() -> argparse.ArgumentParser:
    from tests.conformance.launch_ref import sglang_parser

    return sglang_parser()


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def flag_table(parser: argparse.ArgumentParser) -> dict:
    flags = []
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        nargs = action.nargs
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction, argparse.BooleanOptionalAction)):
            nargs = 0
        flags.append({
            "dest": action.dest,
            "options": list(action.option_strings),
            "nargs": nargs,
            "default": _jsonable(action.default),
            "negatable": isinstance(action, argparse.BooleanOptionalAction),
        })
    return {"sglang": "0.5.23", "generated_by": "tests/solver/test_sglang_args.py --write", "flags": flags}


@needs_sglang
def test_flag_table_is_sglangs_parser():
    assert json.loads(sa.FLAGS_FILE.read_text()) == flag_table(real_parser())


@needs_sglang
def test_every_flag_we_name_exists_in_sglangs_parser():
    parser = real_parser()
    dests = {a.dest for a in parser._actions}
    named = set(sa.MODELLED) | sa.SPECIAL | sa.IGNORED
    assert named <= dests, sorted(named - dests)
    # Every modelled field is a real ServerArgs field of SGLang too (same name).
    from tests.conformance.launch_ref import _load

    fields = set(_load().ServerArgs.__struct_fields__)
    assert set(sa.MODELLED) <= fields, sorted(set(sa.MODELLED) - fields)


SAMPLES = [
    ["--tp", "4", "--mem-fraction-static=0.85", "--speculative-algorithm", "NEXTN"],
    ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--page-size", "64", "--max-running-requests", "256"],
    ["--tp-size=2", "--attention-data-parallel-size=2", "--chunked-prefill-size", "4096", "--max-prefill-tokens", "32k"],
    ["--context-length", "128k", "--max-total-tokens", "1Mi", "--mamba-full-memory-ratio", "0.5", "--max-mamba-cache-size", "300"],
    ["--disable-radix-cache", "--disable-overlap-schedule", "--mamba-ssm-dtype", "bfloat16", "--kv-cache-dtype", "fp8_e4m3"],
    ["--mamba-radix-cache-strategy", "extra_buffer", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
     "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4", "--enable-linear-replayssm-spec", "--linear-replayssm-cache-len", "32"],
    ["--cuda-graph-max-bs-decode", "128", "--cuda-graph-max-bs-prefill", "2048", "--disable-prefill-cuda-graph", "--attention-backend", "flashinfer"],
    ["--disable-cuda-graph", "--mamba-track-interval", "128", "--pp-max-micro-batch-size", "16", "--disable-decode-cuda-graph"],
    ["--tp", "4", "--dp-size", "2", "--enable-dp-attention", "--enable-linear-replayssm", "--mamba-radix-cache-strategy", "no_buffer"],
    ["--mem-frac", "0.8", "--speculative-algo", "ngram", "--host", "0.0.0.0", "--port", "8000"],
    ["--model", "ignored-by-us", "--trust-remote-code", "--log-level", "warning", "--no-enable-tf32-matmul", "--tp", "2"],
]


@needs_sglang
@pytest.mark.parametrize("argv", SAMPLES, ids=[" ".join(a)[:60] for a in SAMPLES])
def test_sglangs_parser_reads_the_same_values(argv):
    parser = real_parser()
    theirs = vars(parser.parse_args(argv + ["--model-path", "m"] if "--model" not in argv else argv))
    ours = parse_sglang_args(argv)
    for dest, value in ours.server_args.items():
        if dest == "attn_dp_size" and theirs.get("enable_dp_attention"):
            # The deprecated spelling: SGLang moves dp_size into attn_dp_size while resolving.
            assert value == theirs["dp_size"] and theirs["attn_dp_size"] == 1
            continue
        expected = theirs[dest]
        if dest == "speculative_algorithm":
            expected = expected.upper()  # resolution upper-cases it
        assert value == expected, (dest, value, expected)
    # Every modelled flag the user passed was read by us (nothing silently dropped).
    defaults = vars(parser.parse_args(["--model-path", "m"]))
    changed = {d for d in sa.MODELLED if theirs.get(d) != defaults.get(d)}
    assert changed <= set(ours.server_args), sorted(changed - set(ours.server_args))


@needs_sglang
@pytest.mark.parametrize(
    "word, value",
    [("--pp", "2"), ("--tp", "2"), ("--mem", "0.5"), ("--mamba-ssm", "bfloat16"), ("--speculative-num", "2"),
     ("--context", "4096"), ("--kv-cache", "fp8_e4m3"), ("--max-total", "4096"), ("--page", "16")],
)
def test_abbreviations_resolve_or_fail_like_argparse(word, value):
    parser = real_parser()
    import contextlib
    import io

    with contextlib.redirect_stderr(io.StringIO()):
        try:
            theirs = vars(parser.parse_args([word, value, "--model-path", "m"]))
            defaults = vars(parser.parse_args(["--model-path", "m"]))
            their_dest = next(d for d in theirs if theirs[d] != defaults[d] and d != "model_path")
        except SystemExit:
            their_dest = None
    try:
        flag, _ = sa._lookup(word)
        our_dest = flag.dest
    except PlanInputError:
        our_dest = None
    assert our_dest == their_dest


END_TO_END = [
    ("qwen3-next-80b-a3b-instruct", ["--tp", "4"]),
    ("qwen3-next-80b-a3b-instruct", ["--tp", "4", "--speculative-algorithm", "nextn", "--page-size", "64"]),
    ("qwen3-next-80b-a3b-instruct", ["--tp", "8", "--dp-size", "2", "--enable-dp-attention", "--max-running-requests", "128"]),
    ("kimi-linear-48b-a3b-instruct", ["--tp", "2", "--pp-size", "2", "--disable-overlap-schedule"]),
    ("kimi-linear-48b-a3b-instruct", ["--tp", "2", "--pp-size", "2", "--mamba-radix-cache-strategy", "extra_buffer_lazy"]),
    ("nvidia-nemotron-nano-9b-v2", ["--page-size", "16", "--mamba-radix-cache-strategy=no_buffer"]),
    ("nvidia-nemotron-nano-9b-v2", ["--pipeline-parallel-size", "2", "--speculative-algorithm", "EAGLE"]),
    ("lfm2-2.6b", ["--chunked-prefill-size", "4096", "--cuda-graph-max-bs-decode", "64"]),
    ("qwen3.5-27b", ["--tp", "2", "--speculative-algorithm", "NEXTN", "--enable-linear-replayssm-spec"]),
    ("qwen3.5-27b", ["--context-length", "1M"]),
    ("granite-4.0-h-small", ["--tp", "2", "--mamba-ssm-dtype", "bfloat16", "--max-total-tokens", "200k"]),
]


@needs_sglang
@pytest.mark.parametrize("preset, argv", END_TO_END, ids=[f"{p} {' '.join(a)}"[:70] for p, a in END_TO_END])
def test_command_lines_resolve_like_sglang(preset, argv):
    from tests.conformance.launch_ref import resolve_argv_with_sglang
    from tests.conformance.test_launch_resolution import MODELS, ours

    parsed = parse_sglang_args(argv)
    case = {"model": preset, "server_args": parsed.server_args, "env": parsed.env, "gpu_mib": 143771}
    a = ours(case)
    b = resolve_argv_with_sglang(MODELS[preset], argv, parsed.env, 143771)
    if a["rejected"] or b["rejected"]:
        assert a["rejected"] == b["rejected"] and a["message"].startswith(b["message"]), (a, b)
    else:
        assert a == {k: b[k] for k in a}, {k: (a[k], b[k]) for k in a if a[k] != b[k]}


if __name__ == "__main__":
    if "--write" in sys.argv:
        sa.FLAGS_FILE.write_text(json.dumps(flag_table(real_parser()), indent=1) + "\n")
        print(f"wrote {sa.FLAGS_FILE}")
