"""A checkpoint's tensor inventory: every tensor's dtype, shape and stored bytes, from the
safetensors headers alone (8-byte length + JSON; the weights are never read)."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field


class HeaderError(ValueError):
    """A safetensors header that cannot be read (message says which file and why)."""


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int  # data_offsets[1] - data_offsets[0]: what the file stores


# Tensors a target model does not load: the checkpoint's MTP head (loaded only by the MTP
# draft, `mtp.` in Qwen3.5/3.6, `model.mtp` / `backbone.mtp` elsewhere).
MTP_PREFIXES = ("mtp.", "model.mtp.", "backbone.mtp.", "model.language_model.mtp.")


def _is_mtp(name: str) -> bool:
    return name.startswith(MTP_PREFIXES)


@dataclass(frozen=True)
class Inventory:
    tensors: tuple[Tensor, ...]
    files: tuple[str, ...] = field(default=())

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    @property
    def mtp_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors if _is_mtp(t.name))

    def by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
        return dict(sorted(out.items()))

    def summary(self) -> dict:
        return {"tensors": len(self.tensors), "bytes": self.total_bytes, "mtp_bytes": self.mtp_bytes,
                "bytes_by_dtype": self.by_dtype(), "files": list(self.files)}


def parse_header(header: Mapping, filename: str) -> list[Tensor]:
    """The tensors one safetensors header lists (`__metadata__` skipped)."""
    out = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = info["data_offsets"]
            out.append(Tensor(str(name), str(info["dtype"]), tuple(int(d) for d in info["shape"]), int(end) - int(begin)))
        except (KeyError, TypeError, ValueError):
            raise HeaderError(f"{filename}: tensor {str(name)[:100]!r} has no dtype / shape / data_offsets") from None
    return out


def read_local_header(path: str, filename: str, max_header_bytes: int) -> list[Tensor]:
    """The header of a local safetensors file: its first 8 bytes (little-endian length) and
    that many bytes of JSON, at most `max_header_bytes`; nothing else is read."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise HeaderError(f"{filename}: too short to be a safetensors file")
        (length,) = struct.unpack("<Q", head)
        if length > max_header_bytes:
            raise HeaderError(f"{filename}: header of {length:,} bytes is over the {max_header_bytes:,}-byte limit")
        raw = f.read(length)
    if len(raw) < length:
        raise HeaderError(f"{filename}: header truncated ({len(raw):,} of {length:,} bytes)")
    try:
        header = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise HeaderError(f"{filename}: header is not JSON") from None
    if not isinstance(header, dict):
        raise HeaderError(f"{filename}: header is not a JSON object")
    return parse_header(header, filename)
