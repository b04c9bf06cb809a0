"""A start-up log's `server_args=ServerArgs(...)` record -> the launch line that sets it.

check-log does not read the record its own way: each field the logging release's parser
knows, away from that parser's default, becomes its flag (`--tp-size 2`, `--enable-x`,
`--no-x`), and the line goes through `prepare` like any `sglang_args`. So a record gets the
verdicts `POST /v1/plan` gives the same launch: a flag the API refuses is refused here, by
the same message. Fields that are no launch flag (values SGLang derives and prints beside
them) are left out: no launch sets them.
"""

from __future__ import annotations

import json
from typing import Any

from mambasizer.service.sglang_args import (
    FROM_CLI_ARGS_RENAMES,
    RELEASE_DEST_ALIASES,
    _Flag,
    _flags,
)
from mambasizer.service.solver.releases.registry import base_release

# A ServerArgs field -> the dest an old release's parser gives it (`tp_size` <- `tensor_parallel_size`).
_PARSER_DEST = {field_name: dest for dest, field_name in FROM_CLI_ARGS_RENAMES.items()}
# Printed by SGLang but set by the caller's choice of machine, not by a sizing flag: left to
# the front door's own handling of --model-path (which resolves it) and nothing else.
_NOT_A_LAUNCH_FLAG = frozenset({"served_model_name"})


def _flag_for(key: str, by_dest: dict[str, _Flag]) -> _Flag | None:
    return by_dest.get(key) or by_dest.get(_PARSER_DEST.get(key, key))


def _at_default(flag: _Flag, value: Any) -> bool:
    default = flag.default
    if flag.nargs == 0:
        return bool(value) == bool(default)
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default
    if isinstance(default, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(default)
    return value == default


def _words(flag: _Flag, value: Any) -> list[str]:
    """The words that give `flag` the value `value` on SGLang's command line."""
    option = next((o for o in flag.options if not o.startswith("--no-")), flag.options[0])
    if flag.nargs == 0:
        if value:
            return [option]
        return ["--no-" + option.removeprefix("--")] if flag.negatable else []
    if isinstance(value, (list, tuple)):
        if flag.nargs in ("+", "*"):
            return [option, *(_text(v) for v in value)]
        return [option, json.dumps(list(value))]
    return [option, _text(value)]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def record_launch_line(record: dict, release: str) -> list[str]:
    """The launch words that set `record`'s fields away from `release`'s parser defaults, in
    the record's order (the model path first, as deployments write it)."""
    _, by_dest = _flags(base_release(release))
    words: list[str] = []
    for own_key, value in record.items():
        current = RELEASE_DEST_ALIASES.get(own_key, own_key)
        if own_key != current and current in record:
            continue  # both spellings printed: the current one wins
        if value is None or own_key in _NOT_A_LAUNCH_FLAG:
            continue
        flag = _flag_for(own_key, by_dest)
        if flag is None or _at_default(flag, value):
            continue  # a derived field no launch sets, or the parser's own default
        said = _words(flag, value)
        if own_key == "model_path":
            words[:0] = said
        else:
            words += said
    return words
