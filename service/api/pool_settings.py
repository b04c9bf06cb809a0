"""The heavy-work pool's settings (mambasizer.service.api.workpool): flags, environment variables,
defaults and bounds. Standard library only: the CLI's parsers import it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mambasizer.service.settings import flag_or_env, positive_number

DEFAULT_WORKERS = 2
DEFAULT_QUEUE = 8
DEFAULT_DEADLINE_S = 10.0
DEFAULT_MEMORY_MIB = 1536
# Heavy requests one client may have admitted (running + waiting) at once: with the default
# 2 workers + 8 waiting, one client holds at most 4 of the 10 places and others still get in.
DEFAULT_PER_CLIENT = 4
MAX_WORKERS = 64
MAX_QUEUE = 1024
MAX_DEADLINE_S = 600.0
MAX_MEMORY_MIB = 1 << 20
MIN_MEMORY_MIB = 256  # below this a worker cannot even import the solver

ENV_WORKERS = "MAMBASIZER_HEAVY_WORKERS"
ENV_QUEUE = "MAMBASIZER_HEAVY_QUEUE"
ENV_DEADLINE = "MAMBASIZER_REQUEST_DEADLINE_S"
ENV_MEMORY = "MAMBASIZER_HEAVY_WORKER_MEMORY_MIB"
ENV_PER_CLIENT = "MAMBASIZER_HEAVY_PER_CLIENT"
ENV_CLIENT_HEADER = "MAMBASIZER_HEAVY_CLIENT_HEADER"
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,64}")


class PoolSettingError(ValueError):
    """A pool flag or environment variable that cannot be used (the message names it)."""


def _count(maximum: int, minimum: int = 1):
    def parse(text: str, name: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise PoolSettingError(f"{name} must be a whole number, not {text[:40]!r}") from None
        if not minimum <= value <= maximum:
            raise PoolSettingError(f"{name} must be between {minimum} and {maximum}, not {value}")
        return value

    return parse


parse_workers = _count(MAX_WORKERS)
parse_queue = _count(MAX_QUEUE, minimum=0)


def parse_deadline(text: str, name: str) -> float:
    return positive_number(text, name, unit="seconds", maximum=MAX_DEADLINE_S, error=PoolSettingError)


parse_memory_mib = _count(MAX_MEMORY_MIB, minimum=MIN_MEMORY_MIB)
parse_per_client = _count(MAX_WORKERS + MAX_QUEUE)


def parse_client_header(text: str, name: str) -> str:
    """A header name (letters, digits, dashes) whose last value names the client: set it only
    behind a proxy that writes it (a client could otherwise claim any identity)."""
    if not _HEADER_NAME.fullmatch(text):
        raise PoolSettingError(f"{name} must be an HTTP header name (letters, digits and dashes), not {text[:40]!r}")
    return text.lower()


@dataclass(frozen=True)
class PoolSettings:
    workers: int = DEFAULT_WORKERS
    queue: int = DEFAULT_QUEUE
    deadline_s: float = DEFAULT_DEADLINE_S
    memory_mib: int = DEFAULT_MEMORY_MIB
    per_client: int = DEFAULT_PER_CLIENT
    client_header: str | None = None  # None: the client is the peer address

    @classmethod
    def resolve(cls, workers: int | None = None, queue: int | None = None, deadline_s: float | None = None,
                memory_mib: int | None = None, environ: Any = None, per_client: int | None = None,
                client_header: str | None = None) -> PoolSettings:
        """Each flag, else its environment variable, else the default (PoolSettingError naming
        the flag's variable when one cannot be used)."""
        return cls(
            workers=flag_or_env(workers, ENV_WORKERS, DEFAULT_WORKERS, parse_workers, environ),
            queue=flag_or_env(queue, ENV_QUEUE, DEFAULT_QUEUE, parse_queue, environ),
            deadline_s=flag_or_env(deadline_s, ENV_DEADLINE, DEFAULT_DEADLINE_S, parse_deadline, environ),
            memory_mib=flag_or_env(memory_mib, ENV_MEMORY, DEFAULT_MEMORY_MIB, parse_memory_mib, environ),
            per_client=flag_or_env(per_client, ENV_PER_CLIENT, DEFAULT_PER_CLIENT, parse_per_client, environ),
            client_header=flag_or_env(client_header, ENV_CLIENT_HEADER, None, parse_client_header, environ),
        )

    @property
    def capacity(self) -> int:
        return self.workers + self.queue


__all__ = ["PoolSettingError", "PoolSettings", "parse_client_header", "parse_deadline", "parse_memory_mib", "parse_per_client",
           "parse_queue", "parse_workers"]
