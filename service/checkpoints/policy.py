"""Where a checkpoint may be read from, and how much of it: the operator's choice, not the caller's.

The CLI reads as SGLang on that machine would: any local directory, the Hugging Face cache,
and the Hub unless `HF_HUB_OFFLINE` is set. `serve` reads only directories under its model
roots (`--model-root`, `MAMBASIZER_MODEL_ROOTS`) and the Hub (with its cache) only when
enabled (`--hub`, `MAMBASIZER_HUB`). The policy in force is a context variable: the server
sets its own around each request (and passes it to its work pool); nothing else changes it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

# A config.json or hf_quant_config.json larger than this is not a config (Nemotron-3.5-Lightning's
# 5,981-entry hf_quant_config.json is about 0.6 MiB).
DEFAULT_MAX_JSON_BYTES = 16 << 20
# safetensors' own limit on a header (`safetensors` refuses a larger one: MAX_HEADER_SIZE).
DEFAULT_MAX_HEADER_BYTES = 100_000_000
DEFAULT_HUB_TIMEOUT_S = 10.0

ROOTS_ENV = "MAMBASIZER_MODEL_ROOTS"  # os.pathsep-separated, as PATH
HUB_ENV = "MAMBASIZER_HUB"
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class ReadPolicy:
    """What resolving a model path may touch. `roots=None`: any directory (the CLI)."""

    roots: tuple[str, ...] | None = None
    hf_cache: bool = True
    hub: bool = True
    max_json_bytes: int = DEFAULT_MAX_JSON_BYTES
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    hub_timeout_s: float = DEFAULT_HUB_TIMEOUT_S
    # Which front end set it, for the messages that say how to change it.
    owner: str = "cli"

    def hub_allowed(self, environ: Mapping[str, str]) -> bool:
        return self.hub and not offline(environ)


def offline(environ: Mapping[str, str]) -> bool:
    """huggingface_hub's own reading of HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, at call time."""
    value = environ.get("HF_HUB_OFFLINE") or environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in ("1", "ON", "YES", "TRUE")


CLI_POLICY = ReadPolicy()


def serve_policy(roots: list[str] | None, hub: bool | None, environ: Mapping[str, str] | None = None,
                 hub_timeout_s: float | None = None) -> ReadPolicy:
    """The server's policy from its flags, else their environment variables. Roots are kept
    resolved (symlinks followed) so a path is compared with what it really is."""
    env = os.environ if environ is None else environ
    given = list(roots or [])
    if not given and env.get(ROOTS_ENV, "").strip():
        given = [p for p in env[ROOTS_ENV].split(os.pathsep) if p.strip()]
    if hub is None:
        hub = env.get(HUB_ENV, "").strip().lower() in _TRUE
    resolved = tuple(os.path.realpath(os.path.abspath(os.path.expanduser(p))) for p in given)
    return ReadPolicy(roots=resolved, hf_cache=hub, hub=hub, owner="serve",
                      hub_timeout_s=hub_timeout_s if hub_timeout_s is not None else DEFAULT_HUB_TIMEOUT_S)


_CURRENT: contextvars.ContextVar[ReadPolicy | None] = contextvars.ContextVar("mambasizer_checkpoint_policy", default=None)


def current_policy() -> ReadPolicy:
    return _CURRENT.get() or CLI_POLICY


@contextlib.contextmanager
def policy_scope(policy: ReadPolicy | None) -> Iterator[None]:
    """Resolve under `policy` inside the block (None: leave the one in force)."""
    if policy is None:
        yield
        return
    token = _CURRENT.set(policy)
    try:
        yield
    finally:
        _CURRENT.reset(token)
