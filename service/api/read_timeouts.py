"""Header and body read timeouts for uvicorn's h11 protocol (slow clients, "slowloris").

uvicorn bounds only the idle time between two requests (keep-alive). A client that opens a
connection and sends nothing, trickles its headers, or sends its body a byte a second holds
the connection (and a file descriptor, and a task waiting on the body) for as long as it
likes. This protocol closes it instead:

* headers: from the connection's start (or the first byte of the next request on a
  kept-alive connection) until the request's headers are complete: `header_timeout`
  seconds; past it the client gets `408 Request Timeout` and the connection is closed;
* body: from the end of the headers until the body is complete: `body_timeout` seconds;
  past it the connection is closed (the app, waiting on the body, sees a disconnect).

The time the app takes to answer is not counted (a trial may run for minutes). The
deadlines are whole-phase deadlines, not idle timeouts, so trickling bytes never extends
them. The settings live here (importable without uvicorn, for the CLI parsers); the protocol is
mambasizer.service.api.timed_h11 (`timed_h11(...)`, uvicorn's `http=`), used by `mambasizer serve`
and `mambasizer worker`.
"""

from __future__ import annotations

from mambasizer.service.settings import flag_or_env, positive_number

DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
HEADER_TIMEOUT_ENV = "MAMBASIZER_HEADER_TIMEOUT_S"
BODY_TIMEOUT_ENV = "MAMBASIZER_BODY_TIMEOUT_S"
MAX_TIMEOUT_S = 3600.0


class TimeoutSettingError(ValueError):
    """A read timeout (flag or env var) that cannot be used; the message names it."""


def parse_timeout(text: str, name: str) -> float:
    return positive_number(text, name, unit="seconds", maximum=MAX_TIMEOUT_S, error=TimeoutSettingError)


def resolve(flag: float | None, env_name: str, default: float, environ: dict | None = None) -> float:
    """The flag when given, else the environment variable, else the default."""
    return flag_or_env(flag, env_name, default, parse_timeout, environ)


__all__ = [
    "BODY_TIMEOUT_ENV",
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "HEADER_TIMEOUT_ENV",
    "MAX_TIMEOUT_S",
    "TimeoutSettingError",
    "parse_timeout",
    "resolve",
]
