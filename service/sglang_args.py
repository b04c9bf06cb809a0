"""SGLang launch arguments, as operators write them for a given release (0.5.23 unless the
request names another in `sglang_version`), turned into a PlanRequest.

    parse_sglang_args(["--tp", "4", "--mem-fraction-static=0.85", "--speculative-algorithm", "NEXTN"])

A request carries a launch line as `sglang_args`; the request front door
(mambasizer.service.requests) reads it with this parser, whichever way the request came in.

The command line is read the way SGLang's own argparse parser reads it
(`ServerArgs.add_cli_args`): the same flag names and aliases (`--tp-size` /
`--tensor-parallel-size`, ...), `--flag value` and `--flag=value`, unique-prefix
abbreviations (`--tp` for `--tp-size`), `--no-<flag>` for negatable booleans, the last
occurrence winning, and SGLang's `human_readable_int` for token counts (`128k`, `1Mi`).
The list of SGLang's flags (`sglang_flags_0_5_23.json`) is generated from the real parser
and checked against it by tests/solver/test_sglang_args.py; every other release's parser
(`sglang_flags_releases.json`, a diff against 0.5.23's: names, aliases, defaults, choices)
is read off that release's wheel by scripts/extract_sglang_flags.py and checked by
tests/conformance/test_release_flags.py. So `--mamba-scheduler-strategy` parses for 0.5.19
(a deprecated alias until 0.5.20 removed it) and is an unknown flag for 0.5.23.

Every SGLang flag falls in one of three groups:

* modelled: it becomes a `server_args` field (same name as SGLang's);
* ignored: it cannot change the mamba/KV sizing (networking, logging, tokenizer, parsers,
  metrics, weight loading: weights are inside the measured budget), listed in `.ignored`;
* not modelled: it can change the sizing or SGLang's launch checks in ways mambasizer does
  not reproduce -> `PlanInputError(field="sglang_args")`, unless it is given SGLang's
  default value (a no-op). Unknown flags are a `PlanInputError` too, with suggestions.

Leading `NAME=value` words set environment variables (`SGLANG_MAMBA_SSM_DTYPE=bfloat16
python -m sglang.launch_server ...`), and launcher words (`python`, `-m`,
`sglang.launch_server`, `sglang serve`) are skipped.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES
from mambasizer.schemas.request import Env
from mambasizer.service.sglang_flag_table import ignored_dests, verdict
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.releases.registry import base_release

FLAGS_FILE = Path(__file__).with_name("sglang_flags_0_5_23.json")
# Every other release's parser as a diff against 0.5.23's (scripts/extract_sglang_flags.py).
RELEASE_FLAGS_FILE = Path(__file__).with_name("sglang_flags_releases.json")
FIELD = "sglang_args"

# Up to 0.5.13 the parallel sizes are parsed under their long names and renamed to the
# ServerArgs fields by `ServerArgs.from_cli_args` (`args.tp_size = args.tensor_parallel_size`);
# 0.5.14 gives the options `dest=` the field names. The server_args record prints the fields.
FROM_CLI_ARGS_RENAMES = {
    "tensor_parallel_size": "tp_size",
    "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size",
    "expert_parallel_size": "ep_size",
    "attention_context_parallel_size": "attn_cp_size",
    "moe_data_parallel_size": "moe_dp_size",
}
# Flag dests an older release spells differently from ours (and from 0.5.23): the release's
# dest -> our ServerArgs field. 0.5.14 renamed them and kept the old options as aliases of
# the new dest until 0.5.20 removed the aliases.
RELEASE_DEST_ALIASES = {
    "mamba_scheduler_strategy": "mamba_radix_cache_strategy",
    "cuda_graph_max_bs": "cuda_graph_max_bs_decode",
    "piecewise_cuda_graph_max_tokens": "cuda_graph_max_bs_prefill",
    "disable_piecewise_cuda_graph": "disable_prefill_cuda_graph",
    # <=0.5.13's parser stores --tp-size / --pp-size / --dp-size under the long names (its
    # `from_cli_args` copies them onto tp_size / pp_size / dp_size).
    "tensor_parallel_size": "tp_size",
    "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size",
}
# What the launch parser maps a release's dest to: the renamed fields and the parallel sizes.
_PARSER_ALIASES = {**RELEASE_DEST_ALIASES, **FROM_CLI_ARGS_RENAMES}
# Of those, the dests that are parser names only: ServerArgs' field is ours in every release.
PARSER_ONLY_DESTS = frozenset(FROM_CLI_ARGS_RENAMES)


@dataclass
class ParsedArgs:
    server_args: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # --speculative-draft-model-path: its layer count cannot be read without the files.
    draft_model_path: str | None = None
    model_path: str | None = None
    # --revision: the checkpoint revision --model-path is read at (service/checkpoints).
    revision: str | None = None
    served_model_name: str | None = None
    # Flags that change what a rank loads (weights moved, added or requantized): a measured
    # budget already holds their effect; a GPU-only estimate does not model them and refuses
    # them by name (service/requests/launch_line.py). (option as given, value)
    weight_moving: list[tuple[str, Any]] = field(default_factory=list)
    # The SGLang release whose parser read the command line.
    release: str = DEFAULT_RELEASE

    @property
    def metrics_model_name(self) -> str | None:
        """SGLang's `model_name` metric label: --served-model-name, else --model-path."""
        return self.served_model_name or self.model_path


@dataclass(frozen=True)
class _Flag:
    dest: str
    options: tuple[str, ...]
    nargs: Any  # None: one value; 0: none; "+", "*", "?" as argparse
    default: Any
    negatable: bool
    choices: tuple | None = None


def _release(version: str) -> str:
    """The base release whose parser applies; a PlanInputError on `sglang_version` otherwise."""
    try:
        return base_release(version)
    except ValueError:
        raise PlanInputError(
            "sglang_version", f"{version!r} is not a supported SGLang release", list(SUPPORTED_RELEASES),
        ) from None


@lru_cache(maxsize=1)
def _release_diffs() -> dict:
    return json.loads(RELEASE_FLAGS_FILE.read_text())


def _entries(release: str) -> list[dict]:
    """Release `release`'s flag table: 0.5.23's, with that release's diff applied."""
    base = json.loads(FLAGS_FILE.read_text())["flags"]
    diffs = _release_diffs()
    choices = dict(diffs["base_choices"])
    if release == diffs["base"]:
        entries = base
    else:
        diff = diffs["releases"][release]
        removed = set(diff["removed"])
        entries = [e for e in base if e["options"][0] not in removed] + diff["added"]
        choices.update(diff["choices"])
    return [{**e, "choices": choices.get(e["options"][0])} for e in entries]


@lru_cache(maxsize=32)
def _flags(release: str = DEFAULT_RELEASE) -> tuple[dict[str, _Flag], dict[str, _Flag]]:
    """(option string -> flag, dest -> flag) for `release`'s launch parser (a base release).
    An alias is an entry of its own sharing the dest; by_dest holds the primary spelling."""
    by_option: dict[str, _Flag] = {}
    by_dest: dict[str, _Flag] = {}
    for entry in _entries(release):
        listed = entry["choices"]
        flag = _Flag(entry["dest"], tuple(entry["options"]), entry["nargs"], entry["default"], entry["negatable"],
                     tuple(listed) if listed is not None else None)
        primary = "--" + flag.dest.replace("_", "-")
        if flag.dest not in by_dest or primary in flag.options:
            by_dest[flag.dest] = flag
        for opt in flag.options:
            by_option[opt] = flag
    return by_option, by_dest


def option_for(dest: str, version: str = DEFAULT_RELEASE) -> str:
    """The option `version`'s parser spells our ServerArgs field `dest` with
    (mamba_radix_cache_strategy is --mamba-scheduler-strategy before 0.5.14)."""
    _, by_dest = _flags(_release(version))
    for theirs, ours in RELEASE_DEST_ALIASES.items():
        if ours == dest and theirs in by_dest and dest not in by_dest:
            dest = theirs
    flag = by_dest.get(dest)
    return flag.options[0] if flag is not None else "--" + dest.replace("_", "-")


# --------------------------------------------------------------------------- value parsers


def human_readable_int(text: str) -> int:
    """SGLang's token-count syntax: an int, or a number with an SI suffix (k, M, G, T;
    decimals allowed) or an IEC suffix (Ki, Mi, Gi, Ti; integers only). Case-sensitive."""
    value = text.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        if suffix.endswith("i"):
            if "." in number:
                raise ValueError(f"decimals are not allowed with IEC suffixes like {suffix!r}")
            return int(number) << {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[suffix]
        return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])
    return int(value)


def _int(text: str) -> int:
    return int(text)


def _float(text: str) -> float:
    return float(text)


def _choice(*allowed: str, transform: Callable[[str], str] = lambda s: s) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = transform(text)
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value

    parse.allowed = allowed  # type: ignore[attr-defined]
    return parse


_LINEAR_ATTN_BACKENDS = ("triton", "cutedsl", "flashinfer", "flashkda", "nvidia_kda", "ptx_kda", "helion", "intel_xpu")

# Modelled flags: SGLang dest -> value parser (None: a store_true flag). The dest is also
# our ServerArgs field name.
MODELLED: dict[str, Callable[[str], Any] | None] = {
    "tp_size": _int,
    "pp_size": _int,
    "attn_dp_size": _int,
    # Experts shard over it: read only by the estimated budget's weights.
    "ep_size": _int,
    "page_size": _int,
    "kv_cache_dtype": _choice("auto", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16"),
    "mamba_ssm_dtype": _choice("float32", "bfloat16", "float16"),
    "mamba_full_memory_ratio": _float,
    "max_mamba_cache_size": _int,
    "max_running_requests": _int,
    "max_total_tokens": human_readable_int,
    "disable_radix_cache": None,
    "mamba_radix_cache_strategy": _choice("auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"),
    "disable_overlap_schedule": None,
    # SGLang upper-cases the algorithm; UNO / plugins are not modelled.
    "speculative_algorithm": _choice("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", transform=str.upper),
    "speculative_dflash_block_size": _int,
    "speculative_dspark_block_size": _int,
    "speculative_num_draft_tokens": _int,
    "speculative_num_steps": _int,
    "speculative_eagle_topk": _int,
    "enable_linear_replayssm_spec": None,
    "linear_replayssm_cache_len": _int,
    "enable_linear_replayssm": None,
    "context_length": human_readable_int,
    "mem_fraction_static": _float,
    "pp_max_micro_batch_size": _int,
    "chunked_prefill_size": _int,
    "max_prefill_tokens": human_readable_int,
    "cuda_graph_max_bs_decode": _int,
    "cuda_graph_max_bs_prefill": _int,
    "disable_cuda_graph": None,
    "disable_prefill_cuda_graph": None,
    "disable_decode_cuda_graph": None,
    # Hopper backends that leave the page size alone; others change it (trtllm/flashmla).
    "attention_backend": _choice("fa3", "flashinfer", "triton"),
    "mamba_track_interval": _int,
    # Disaggregation / DCP / wide EP (service/solver/disaggregation.py, dcp.py, wide_ep.py).
    "disaggregation_mode": _choice("null", "prefill", "decode"),
    "disaggregation_decode_enable_radix_cache": None,
    "disaggregation_decode_extra_slots": _int,
    "dcp_size": _int,
    "moe_a2a_backend": _choice("none", "deepep"),
    "enable_two_batch_overlap": None,
    "enable_hierarchical_cache": None,
    "enable_symm_mem": None,
    "num_reserved_decode_tokens": _int,
    # Launch features (issue 28): the int8 checkpoint pool, the linear-attention kernels,
    # deterministic inference (service/solver/int8_checkpoint.py, platform.py, launch.py).
    "enable_int8_mamba_checkpoint": None,
    "int8_mamba_ckpt_size": _int,
    "mamba_max_states_per_path": _int,
    "linear_attn_backend": _choice(*_LINEAR_ATTN_BACKENDS),
    "linear_attn_decode_backend": _choice(*_LINEAR_ATTN_BACKENDS),
    "linear_attn_prefill_backend": _choice(*_LINEAR_ATTN_BACKENDS),
    "linear_attn_verify_backend": _choice(*_LINEAR_ATTN_BACKENDS, "nv_cutedsl"),
    "enable_deterministic_inference": None,
}

# Flags read for their meaning, not copied into server_args.
SPECIAL = {
    "dp_size", "enable_dp_attention", "speculative_draft_model_path", "device", "config", "model_path", "served_model_name",
    "revision",  # read for service/checkpoints (the revision --model-path is read at)
}

# Flags that cannot change the sizing: the table's no-effect rows (service/sglang_flag_table.py,
# which holds every flag's verdict and reason). Weight-related flags are there because weights
# are inside the measured budget (free memory after load), not sized by mambasizer.
IGNORED = ignored_dests()


def _suggest(word: str, candidates) -> list[str]:
    return difflib.get_close_matches(word, list(candidates), n=3, cutoff=0.6)


def _not_modelled(option: str, why: str = "", release: str = DEFAULT_RELEASE) -> PlanInputError:
    return PlanInputError(
        FIELD,
        f"{option} changes SGLang {release}'s sizing or launch checks in a way mambasizer does not model"
        + (f" ({why})" if why else "")
        + "; drop it, or leave it at SGLang's default",
        sorted(f"--{d.replace('_', '-')}" for d in MODELLED),
    )


def _lookup(option: str, release: str = DEFAULT_RELEASE) -> tuple[_Flag, str]:
    """argparse's lookup in `release`'s parser: the exact option, else a unique prefix of
    one (allow_abbrev). Returns the flag and the option string it resolved to."""
    by_option, _ = _flags(release)
    flag = by_option.get(option)
    if flag is not None:
        return flag, option
    matches = {opt: f for opt, f in by_option.items() if opt.startswith(option)}
    if len(matches) == 1:
        return next(iter(matches.values())), next(iter(matches))
    if len(matches) > 1:
        raise PlanInputError(FIELD, f"ambiguous option: {option} could match {', '.join(sorted(matches))}", sorted(matches))
    raise PlanInputError(
        FIELD,
        f"unknown flag {option}: not a launch argument of SGLang {release}",
        _suggest(option, by_option) or None,
    )


def _is_default(flag: _Flag, value: Any) -> bool:
    default = flag.default
    if flag.nargs == 0:
        return value == bool(default)
    if default is None or isinstance(value, list):
        return False
    try:
        if isinstance(default, bool):
            return False
        if isinstance(default, int):
            return human_readable_int(value) == default
        if isinstance(default, float):
            return float(value) == default
    except (ValueError, InvalidOperation):
        return False
    return str(value) == str(default)


_LAUNCHERS = {"python", "python3", "-m", "sglang.launch_server", "sglang", "serve", "launch_server"}
_ENV_WORD = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")
# The env vars mambasizer models are the request's `env` object's fields: a launch line's
# leading `NAME=value` words and that object are one input, read by one set of rules.
ENV_NAMES = tuple(Env.model_fields)
# Env vars that change the sizing or launch checks and are not modelled.
_UNMODELLED_ENV = {
    "SGLANG_ENABLE_POST_CAPTURE_KV_SIZING", "SGLANG_ENABLE_PP_SPEC", "SGLANG_VLM_CACHE_SIZE_MB",
    "SGLANG_MM_FEATURE_CACHE_MB", "SGLANG_RAGGED_VERIFY_MODE", "SGLANG_IS_IN_CI",
}


def env_value(name: str, value: Any) -> Any:
    """`value` of the modelled env var `name` as the request's `env` object reads it (SGLang's
    envs rules: EnvBool's true/1/yes/y and false/0/no/n in any case, EnvStr as written,
    the dtype choices): a launch line's word and the object's member give the same value."""
    try:
        return getattr(Env.model_validate({name: value}), name)
    except ValidationError as exc:
        raise PlanInputError(f"env.{name}", exc.errors()[0]["msg"].removeprefix("Value error, ")) from None


def split_env_words(argv: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The `NAME=value` words before a launch line's first flag (how a shell passes
    environment variables: `SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1 python -m
    sglang.launch_server ...`), and the line without them."""
    env: list[tuple[str, str]] = []
    rest: list[str] = []
    for i, word in enumerate(argv):
        if word.startswith("--"):
            return env, rest + list(argv[i:])
        m = _ENV_WORD.match(word)
        if m:
            env.append((m.group(1), m.group(2)))
        else:
            rest.append(word)
    return env, rest


def _tokens(argv: list[str], out: ParsedArgs) -> list[tuple[str, str | None, list[str]]]:
    """Split argv into (option as written, `=value` or None, following value words)."""
    # Leading env assignments, then launcher words.
    env, argv = split_env_words(argv)
    for name, value in env:
        _set_env(name, value, out)
    i = 0
    while i < len(argv) and not argv[i].startswith("--"):
        word = argv[i]
        if word not in _LAUNCHERS and not word.endswith(("/python", "/python3")):
            raise PlanInputError(FIELD, f"unexpected word {word!r}: SGLang takes no positional arguments (flags start with --)")
        i += 1
    items: list[tuple[str, str | None, list[str]]] = []
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word in ("-", "--"):
            raise PlanInputError(FIELD, f"unexpected word {word!r}: SGLang takes no positional arguments (flags start with --)")
        option, eq, inline = word.partition("=")
        i += 1
        following: list[str] = []
        while i < len(argv) and not _looks_like_flag(argv[i]):
            following.append(argv[i])
            i += 1
        items.append((option, inline if eq else None, following))
    return items


def _looks_like_flag(word: str) -> bool:
    # argparse: a word starting with '-' is an option unless it looks like a negative number.
    return word.startswith("-") and not re.fullmatch(r"-\d+(\.\d*)?", word)


def _set_env(name: str, value: str, out: ParsedArgs) -> None:
    if name in ENV_NAMES:
        out.env[name] = env_value(name, value)
    elif name in _UNMODELLED_ENV:
        raise PlanInputError(FIELD, f"{name} changes SGLang {out.release}'s sizing in a way mambasizer does not model", sorted(ENV_NAMES))
    else:
        out.ignored.append(f"{name}={value}")


def parse_sglang_args(argv: list[str], release: str = DEFAULT_RELEASE) -> ParsedArgs:
    """Read a launch command line as SGLang `release` parses it (see the module docstring):
    its flag names, aliases and choices; a flag that release does not know is refused."""
    if isinstance(argv, str):
        raise PlanInputError(FIELD, "must be a list of words (split the command line first)")
    base = _release(release)
    out = ParsedArgs(release=release)
    values: dict[str, tuple[str, Any]] = {}  # dest -> (option as written, value); last wins
    for option, inline, following in _tokens([str(w) for w in argv], out):
        flag, resolved = _lookup(option, base)
        # BooleanOptionalAction registers `--no-<flag>` itself.
        negated = flag.negatable and resolved.startswith("--no-")
        if flag.nargs == 0:
            if inline is not None:
                raise PlanInputError(FIELD, f"{option} takes no value (got {option}={inline})")
            value: Any = not negated
            rest = following
        elif flag.nargs in ("+", "*"):
            value = ([inline] if inline is not None else []) + following
            if flag.nargs == "+" and not value:
                raise PlanInputError(FIELD, f"{option} expects at least one value")
            rest = []
        else:
            if inline is not None:
                value, rest = inline, following
            elif following:
                value, rest = following[0], following[1:]
            elif flag.nargs == "?":
                value, rest = None, []
            else:
                raise PlanInputError(FIELD, f"{option} expects a value")
        if rest:
            raise PlanInputError(FIELD, f"unexpected word {rest[0]!r} after {option}: SGLang takes no positional arguments")
        _check_choice(flag, option, value, release)
        values[_PARSER_ALIASES.get(flag.dest, flag.dest)] = (option, value)

    for dest, (option, value) in values.items():
        _apply(dest, option, value, out)
    _resolve_dp(values, out)
    return out


# What a GPU-only estimate cannot price (the weights it computes are the checkpoint's own, on GPU).
WEIGHT_MOVING = frozenset({
    "quantization", "cpu_offload_gb", "offload_group_size", "offload_num_in_group", "offload_prefetch_step",
    "offload_mode", "ep_num_redundant_experts", "speculative_draft_model_quantization",
})


def _check_choice(flag: _Flag, option: str, value: Any, release: str) -> None:
    """argparse's `choices` check, with the release's own choices."""
    if flag.choices is None or flag.nargs == 0:
        return
    listed = [str(c) for c in flag.choices]
    for item in value if isinstance(value, list) else [value]:
        if item is not None and str(item) not in listed:
            raise PlanInputError(FIELD, f"{option}: invalid choice {item!r} for SGLang {release}", listed)


def _flag_of(dest: str, release: str) -> _Flag:
    """The flag behind our field `dest` in `release`'s parser (it may use an older dest)."""
    _, by_dest = _flags(release)
    if dest in by_dest:
        return by_dest[dest]
    old = next(d for d, ours in _PARSER_ALIASES.items() if ours == dest and d in by_dest)
    return by_dest[old]


def _apply(dest: str, option: str, value: Any, out: ParsedArgs) -> None:
    flag = _flag_of(dest, base_release(out.release))
    if dest in WEIGHT_MOVING and not _is_default(flag, value):
        out.weight_moving.append((option, value))
    if dest in MODELLED:
        parser = MODELLED[dest]
        if parser is None:
            out.server_args[dest] = bool(value)
            return
        try:
            out.server_args[dest] = parser(value)
        except (ValueError, InvalidOperation) as exc:
            allowed = list(getattr(parser, "allowed", ())) or None
            if allowed and dest in ("kv_cache_dtype", "speculative_algorithm", "attention_backend", "moe_a2a_backend"):
                raise _not_modelled(f"{option} {value}", f"mambasizer models {', '.join(allowed)}", out.release) from None
            raise PlanInputError(FIELD, f"{option}: invalid value {value!r} ({exc})", allowed) from None
        return
    if dest in SPECIAL:
        _special(dest, option, value, out)
        return
    if dest in IGNORED:
        out.ignored.append(option)
        return
    if _is_default(flag, value):
        out.ignored.append(option)
        return
    row = verdict(dest)
    raise _not_modelled(option, row.reason if row is not None else "", release=out.release)


def _special(dest: str, option: str, value: Any, out: ParsedArgs) -> None:
    if dest == "model_path":
        out.model_path = value
        out.ignored.append(option)
    elif dest == "served_model_name":
        out.served_model_name = value
        out.ignored.append(option)
    elif dest == "revision":
        out.revision = value
        out.ignored.append(option)
    elif dest == "speculative_draft_model_path":
        out.draft_model_path = value
        out.ignored.append(option)
        out.warnings.append(
            f"{option} {value}: the draft model's KV layers are priced by its layer count, which cannot be read "
            "without its files; pass it as draft_model.num_layers (without it, SGLang prices the target's "
            "num_nextn_predict_layers)"
        )
    elif dest == "device":
        if value != "cuda":
            raise _not_modelled(f"{option} {value}", "mambasizer sizes CUDA deployments", out.release)
        out.ignored.append(option)
    elif dest == "config":
        raise PlanInputError(FIELD, f"{option} {value}: the YAML config file cannot be read here; pass its flags on the command line")
    # dp_size / enable_dp_attention are resolved together in _resolve_dp.


def _resolve_dp(values: dict, out: ParsedArgs) -> None:
    """`--dp-size N --enable-dp-attention` is the deprecated spelling of `--attn-dp-size N`;
    `--dp-size N` alone runs N independent replicas, each sized like one."""
    dp_opt, dp_raw = values.get("dp_size", (None, "1"))
    try:
        dp = int(dp_raw)
    except ValueError:
        raise PlanInputError(FIELD, f"{dp_opt}: invalid int value {dp_raw!r}") from None
    dp_attention = bool(values.get("enable_dp_attention", (None, False))[1])
    attn_dp = out.server_args.get("attn_dp_size", 1)
    applied = False  # --dp-size N --enable-dp-attention became attn_dp_size N: both flags had effect
    if dp_attention:
        if attn_dp == 1:
            attn_dp = dp
            dp = 1
            if attn_dp != 1:
                out.server_args["attn_dp_size"] = attn_dp
                applied = True
        if not applied:
            out.ignored.append("--enable-dp-attention")
    if dp_opt is not None and not applied:
        out.ignored.append(dp_opt)
    if attn_dp < 1:
        raise PlanInputError(FIELD, f"--attn-dp-size must be positive (got {attn_dp}).")
    if attn_dp > 1 and dp > 1:
        raise PlanInputError(
            FIELD,
            f"--dp-size {dp} with --attn-dp-size {attn_dp}: data-parallel replicas combined with attention data "
            "parallelism are not supported.",
        )
    if dp > 1:
        out.warnings.append(f"--dp-size {dp}: {dp} independent replicas; each is sized like this one")
