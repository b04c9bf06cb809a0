"""ServerArgs -> the SGLang 0.5.23 launch flags that reproduce them, ready to paste.

The option spelling is SGLang's own (the first option string of the flag in the generated
`sglang_flags_0_5_23.json`); the recommend search re-plans every answer by parsing these very
flags back through `mambasizer.service.sglang_args`, so a flag that does not round-trip cannot be returned.
"""

from __future__ import annotations

from mambasizer.schemas.request import ServerArgs
from mambasizer.service.sglang_args import _flags

_DEFAULTS = ServerArgs()


def launch_flags(args: ServerArgs) -> list[str]:
    """Every field away from its default, as `--flag value` (booleans: `--flag`)."""
    _, by_dest = _flags()
    out: list[str] = []
    for name in ServerArgs.model_fields:
        value = getattr(args, name)
        if value == getattr(_DEFAULTS, name):
            continue
        option = by_dest[name].options[0]
        if isinstance(value, bool):
            out.append(option)  # every modelled boolean defaults to False
        elif isinstance(value, float):
            out += [option, repr(value)]
        else:
            out += [option, str(value)]
    return out
