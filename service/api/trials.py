"""Who may run a trial from `POST /v1/plan`, and how one runs there.

A trial occupies memory (the API process's own for an embedded CPU trial, a GPU for the
remote worker), so the API runs none until the operator enables them, and then can ask
clients for their own credential:

* `--enable-trials` / `MAMBASIZER_TRIALS_ENABLED=true|1|yes`: off by default. Until then a
  request with `trial` gets its plan and `trial: {"status": "rejected", "reason": ...}`.
* `MAMBASIZER_TRIAL_TOKEN`, or the file named by `--trial-token-file` /
  `MAMBASIZER_TRIAL_TOKEN_FILE`: clients must send `Authorization: Bearer <token>` (one
  header, compared in constant time). It is not the worker's token: the API presents its
  own to the worker. A missing or wrong credential leaves the plan as it is (200) and
  refuses the trial (`rejected`), so the answer a plan-only client relies on never changes.
* `--trial-memory-gib` / `MAMBASIZER_TRIAL_MEMORY_GIB` (default 2): the most host memory an
  embedded CPU trial may allocate (its largest stage plus held weights); larger ones are
  refused before any allocation. Embedded trials run one at a time (the runner's turnstile).

A trial stops when its client goes away: the API watches the connection while the trial
runs and cancels it on disconnect (an embedded trial stops between two allocations and
releases its memory; a remote call is aborted, which the worker sees as its own disconnect).
What a client reads about a refused trial is said in its own terms: no internal URL, host
or exception text.
"""

from __future__ import annotations

import hmac
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mambasizer.service.settings import flag_or_env, positive_number

if TYPE_CHECKING:  # this module stays importable without Starlette (the CLI parser uses it)
    from starlette.requests import Request

log = logging.getLogger("mambasizer.api")

ENABLED_ENV = "MAMBASIZER_TRIALS_ENABLED"
TOKEN_ENV = "MAMBASIZER_TRIAL_TOKEN"
TOKEN_FILE_ENV = "MAMBASIZER_TRIAL_TOKEN_FILE"
MEMORY_ENV = "MAMBASIZER_TRIAL_MEMORY_GIB"
DEFAULT_MEMORY_GIB = 2.0
MAX_MEMORY_GIB = 1 << 20  # a bound on the setting itself, far above any host
GIB = 1 << 30
TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no", "")

DISABLED_DETAIL = (
    "trials are disabled on this server; the plan above is unaffected "
    "(an operator enables them with --enable-trials or MAMBASIZER_TRIALS_ENABLED=true)"
)
NO_CREDENTIAL_DETAIL = "this server requires a trial credential: send Authorization: Bearer <trial token>; the plan above is unaffected"
BAD_CREDENTIAL_DETAIL = "the trial credential was not accepted; the plan above is unaffected"
TWO_CREDENTIALS_DETAIL = "send exactly one Authorization header; the trial was not run and the plan above is unaffected"
FAILED_DETAIL = "the trial failed on the server's side and was not completed; the plan above is unaffected"


class TrialSettingsError(ValueError):
    """A trial setting (flag, env var or token file) cannot be used; the message names it."""


@dataclass(frozen=True)
class TrialSettings:
    enabled: bool = False
    token: str | None = None  # None: any client may ask for a trial (when enabled)
    memory_gib: float = DEFAULT_MEMORY_GIB

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    @classmethod
    def from_env(cls, environ: dict | None = None, *, enabled: bool | None = None,
                 token_file: str | None = None, memory_gib: float | None = None) -> TrialSettings:
        """The settings from the environment, each overridden by its flag when given.
        Raises TrialSettingsError naming the setting."""
        env = os.environ if environ is None else environ
        if enabled is None:
            enabled = parse_bool(env.get(ENABLED_ENV, ""), ENABLED_ENV)
        memory_gib = flag_or_env(memory_gib, MEMORY_ENV, DEFAULT_MEMORY_GIB, parse_memory_gib, env)
        token_file = token_file or env.get(TOKEN_FILE_ENV, "").strip() or None
        token: str | None
        if token_file:
            token = read_token_file(token_file)
        else:
            token = env.get(TOKEN_ENV, "").strip() or None
        return cls(enabled=bool(enabled), token=token, memory_gib=float(memory_gib))


def parse_bool(text: str, name: str) -> bool:
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise TrialSettingsError(f"{name} must be true/1/yes or false/0/no, not {text[:40]!r}")


def parse_memory_gib(text: str, name: str) -> float:
    return positive_number(text, name, unit="GiB", maximum=MAX_MEMORY_GIB, error=TrialSettingsError)


def read_token_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read(64 << 10).strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TrialSettingsError(f"trial token file {path}: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    if not token:
        raise TrialSettingsError(f"trial token file {path} is empty")
    return token


def refused(reason: str) -> dict:
    return {"status": "rejected", "reason": reason}


def credential_refusal(request: Request, settings: TrialSettings) -> str | None:
    """None when the request may run a trial; else the detail to answer."""
    if settings.token is None:
        return None
    values = request.headers.getlist("authorization")
    if not values:
        return NO_CREDENTIAL_DETAIL
    if len(values) > 1:
        return TWO_CREDENTIALS_DETAIL
    # Constant-time on the bytes; a non-ASCII header simply does not match.
    if not hmac.compare_digest(values[0].encode("latin-1"), f"Bearer {settings.token}".encode("latin-1", "replace")):
        return BAD_CREDENTIAL_DETAIL
    return None


__all__ = [
    "DEFAULT_MEMORY_GIB",
    "ENABLED_ENV",
    "MEMORY_ENV",
    "TOKEN_ENV",
    "TOKEN_FILE_ENV",
    "TrialSettings",
    "TrialSettingsError",
    "credential_refusal",
    "refused",
]
