"""Operator settings that are bounded numbers (read timeouts, the trial memory budget): a flag,
else its environment variable, else the default; refused with a message naming the flag or
variable. Standard library only: the CLI parsers import it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def positive_number(text: str, name: str, *, unit: str, maximum: float, error: type[ValueError]) -> float:
    """`text` as a number of `unit` above 0 and at most `maximum`; else `error` naming `name`."""
    try:
        value = float(text)
    except ValueError:
        raise error(f"{name} must be a number of {unit}, not {text[:40]!r}") from None
    if not (0 < value <= maximum):  # also refuses nan and inf
        raise error(f"{name} must be a number of {unit} above 0 and at most {maximum:.15g}, not {text[:40]!r}")
    return value


def flag_or_env(flag: T | None, env_name: str, default: T, parse: Callable[[str, str], T],
                environ: Mapping[str, str] | None = None) -> T:
    """The flag when given, else the environment variable (parsed, named in its error) when
    set and not blank, else the default."""
    if flag is not None:
        return flag
    raw = (os.environ if environ is None else environ).get(env_name, "").strip()
    return parse(raw, env_name) if raw else default
