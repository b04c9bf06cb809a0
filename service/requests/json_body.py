"""A request as JSON bytes -> a JSON object, by one set of rules on every front: a key given
twice in one object is refused (Python's json would keep the last silently), and Infinity /
NaN are read only inside a model's hf_config (a real config.json carries them)."""

from __future__ import annotations

import json
import math
from typing import Any

from mambasizer.service.requests.errors import MalformedRequest
from mambasizer.service.solver import PlanInputError


class _WithDuplicate(dict):
    """A JSON object that named a key twice (`duplicate`): Python's json keeps the last
    silently, so which value a client meant is unknown."""

    duplicate: str = ""


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    out = _WithDuplicate(obj)
    out.duplicate = dup
    return out


class _Constants:
    """json's parse_constant: Infinity, -Infinity and NaN read as Python's json reads them
    (a real config.json carries them: Nemotron-H's `time_step_limit: [0.0, Infinity]`);
    whether one may stand where it stands is decided after the parse (`_check_numbers`)."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, name: str) -> float:
        self.seen = True
        return float(name)

    def number(self, text: str) -> float:
        """json's parse_float: a literal too large for a float (1e400) reads as Infinity too."""
        value = float(text)
        if value in (math.inf, -math.inf):
            self.seen = True
        return value


# The JSON objects inside which non-finite numbers are accepted: a model's config.json,
# read as Python's json and transformers read it (its integer keys that size the model
# must still be finite integers: mambasizer.service.solver.families.check_config_integers).
NONFINITE_ALLOWED_UNDER = "hf_config"


def _path(parts: list) -> str:
    return ".".join(str(p) for p in parts) or "request"


def _check_numbers(obj: Any, check_finite: bool, check_dupes: bool) -> None:
    """The first duplicated key, or non-finite number outside an hf_config, as a
    PlanInputError naming its path (walked only when the parse saw one)."""
    stack: list[tuple[Any, list, bool]] = [(obj, [], False)]
    while stack:
        node, parts, in_config = stack.pop()
        if isinstance(node, dict):
            if check_dupes and isinstance(node, _WithDuplicate):
                raise PlanInputError(
                    _path([*parts, node.duplicate]),
                    f"is given more than once in the same JSON object ({node.duplicate[:100]!r}); give each key once",
                )
            for key, value in reversed(node.items()):
                stack.append((value, [*parts, key], in_config or key == NONFINITE_ALLOWED_UNDER))
        elif isinstance(node, list):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], [*parts, i], in_config))
        elif check_finite and not in_config and isinstance(node, float) and not math.isfinite(node):
            raise PlanInputError(
                _path(parts),
                f"is {_constant_name(node)}: numbers must be finite here (only a model's hf_config, a config.json, may carry Infinity or NaN)",
            )


def _constant_name(value: float) -> str:
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


def decode_json(data: bytes | str, label: str = "request body") -> dict:
    """The body as a JSON object, or MalformedRequest naming what is wrong with it; a key
    given twice in one object, or Infinity / NaN outside an hf_config, is a PlanInputError
    naming its path."""
    constants = _Constants()
    dupes: list[bool] = []

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj = _object(items)
        if isinstance(obj, _WithDuplicate):
            dupes.append(True)
        return obj

    try:
        obj = json.loads(data, parse_constant=constants, parse_float=constants.number, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise MalformedRequest("request", f"{label} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise MalformedRequest("request", f"{label} is nested too deeply") from None
    except ValueError as exc:  # bad UTF-8, an integer with too many digits
        raise MalformedRequest("request", f"{label} is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedRequest("request", f"{label} must be a JSON object (a PlanRequest), not {_json_type(obj)}")
    if constants.seen or dupes:
        _check_numbers(obj, constants.seen, bool(dupes))
    return obj


def _json_type(obj: Any) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "a boolean"
    if isinstance(obj, (int, float)):
        return "a number"
    if isinstance(obj, str):
        return "a string"
    if isinstance(obj, list):
        return "an array"
    return type(obj).__name__
