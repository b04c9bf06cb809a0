"""A launch line (`sglang_args`: SGLang's own command line) inside a request -> its
`server_args` and `env`, and the launch rules that need the whole request: the weight-moving
flags a GPU-only estimate cannot price."""

from __future__ import annotations

from typing import Any

import mambasizer.schemas.request as request_schema
from mambasizer.schemas import PlanRequest
from mambasizer.schemas.releases import DEFAULT_RELEASE
from mambasizer.service.sglang_args import ParsedArgs, env_value, parse_sglang_args
from mambasizer.service.solver import PlanInputError

MAX_SGLANG_ARGS = request_schema.MAX_SGLANG_ARGS
MAX_SGLANG_ARG_CHARS = request_schema.MAX_SGLANG_ARG_CHARS


def take_sglang_args(raw: dict, value: Any) -> tuple[dict, ParsedArgs]:
    """`raw` with `sglang_args` read into `server_args` and `env`, and the parse."""
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise PlanInputError("sglang_args", "must be a list of strings, as a shell would pass them (e.g. [\"--tp-size\", \"8\"])")
    if len(value) > MAX_SGLANG_ARGS:
        raise PlanInputError("sglang_args", f"has {len(value)} entries; at most {MAX_SGLANG_ARGS} are accepted")
    for i, arg in enumerate(value):
        if len(arg) > MAX_SGLANG_ARG_CHARS:
            raise PlanInputError(f"sglang_args.{i}", f"is longer than {MAX_SGLANG_ARG_CHARS} characters")
    if "server_args" in raw:
        raise PlanInputError("sglang_args", "give either server_args or sglang_args, not both")
    # Parsed as the release the request names parses it (its flags, aliases, choices).
    parsed = parse_sglang_args(list(value), raw.get("sglang_version") or DEFAULT_RELEASE)
    env = raw.get("env")
    if env is None:
        env = {}
    elif not isinstance(env, dict):
        raise PlanInputError("env", "must be a JSON object")
    merged = dict(env)
    for key, val in (parsed.env or {}).items():
        if key in merged and env_value(key, merged[key]) != val:  # one value, read by SGLang's env rules
            raise PlanInputError(f"env.{key}", f"is {merged[key]!r} in env but sglang_args set it to {val!r}")
        merged[key] = val
    raw["server_args"] = dict(parsed.server_args)
    if merged or "env" in raw:
        raw["env"] = merged
    return raw, parsed


def _checkpoint_is_quantized(request: PlanRequest) -> bool:
    from mambasizer.schemas.request import HFConfigModel, PresetModel
    from mambasizer.service.presets import get_preset
    from mambasizer.service.solver.checkpoint_quant import quant_config_of

    m = request.model
    if isinstance(m, PresetModel):
        try:
            hf = dict(get_preset(m.preset).hf_config)
        except PlanInputError:
            return False  # the plan names the unknown preset
    elif isinstance(m, HFConfigModel):
        hf = dict(m.hf_config)
    else:
        return False
    text = hf.get("text_config") if isinstance(hf.get("text_config"), dict) else hf
    return quant_config_of(hf, text).config is not None


def weight_moving(request: PlanRequest, flags: list) -> tuple[str, ...]:
    """Flags that change what a rank loads: refused in a GPU-only (estimated) budget, whose
    weights are the checkpoint's own on the GPU; noted in a measured one, whose free memory
    after load already holds their effect."""
    if _checkpoint_is_quantized(request):
        # --quantization on a pre-quantized checkpoint names its serialized format: the
        # weights are the checkpoint's own either way (a mismatch is SGLang's error, not a size).
        flags = [(o, v) for o, v in flags if o != "--quantization"]
        if not flags:
            return ()
    given = " ".join(f"{o} {v}" if v is not True else o for o, v in flags)
    if request.budget.estimated:
        option = flags[0][0]
        raise PlanInputError(
            "sglang_args",
            f"{given}: changes the weights each GPU loads (online quantization, CPU offload, redundant experts or "
            f"draft quantization), which a GPU-only estimate does not model; remove {option}, or give a measured "
            "budget (free_gib_before_load and free_gib_after_load from a boot log), which already holds its effect",
        )
    return (f"{given}: changes the weights each GPU loads; ignored here because the measured budget already holds its effect",)
