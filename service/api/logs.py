"""Structured logs: one JSON object per line.

Every mambasizer logger passes its structured data as `extra={"fields": {...}}`; the
formatter merges them into the line. `mambasizer serve` installs it on the root logger,
so uvicorn's own start-up and shutdown lines come out as JSON too.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

_RESERVED = frozenset({"ts", "level", "logger", "msg"})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            for k, v in fields.items():
                out[k if k not in _RESERVED else f"field_{k}"] = v
        if record.exc_info:
            # Server-side only: responses never carry this.
            out["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str = "info", stream=None) -> None:
    """JSON lines on stderr for every logger (uvicorn's included)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers = []
        lg.propagate = True
