"""SGLang start-up logs read back into figures: text -> per-rank observed figures.

    log = parse_boot_log(text)
    log.ranks["TP0"]["kv_tokens"]        # 580364, exactly as printed
    log.server_args                      # the `server_args=...` record, scalars only

The lines read are those SGLang 0.5.x prints while it starts (format strings from
SGLang 0.5.23's model_runner.py, memory_pool.py, kv_cache_configurator.py,
scheduler.py, engine.py, and the older 0.5 wordings seen in real logs):

    Load weight begin. avail mem=%.2f GB
    Load weight end. [elapsed=%.2f s, ][type=..., ][dtype=..., |quant=..., ]avail mem=%.2f GB, mem usage=%.2f GB.
    Mamba Cache is allocated. max_mamba_cache_size: %d, conv_state size: %.2fGB, ssm_state size: %.2fGB
        [intermediate_ssm_state_cache size: %.2fGB intermediate_conv_window_cache size: %.2fGB]
    KV Cache is allocated. [dtype: ..., ]#tokens: %d, K size: %.2f GB, V size: %.2f GB   (or KV size: %.2f GB)
    Post-capture KV sizing: KV cache allocated. dtype: %s, #tokens: %d, KV size: %.2f GB, avail mem=%.2f GB
    Memory pool end. avail mem=%.2f GB
    max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d,
        max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB
    server_args=ServerArgs(model_path='...', ...)   (0.5.x before the dict form)
    server_args={'model_path': '...', ...}          (0.5.23)

Each line may carry SGLang's rank prefix (`[TP0]`, `[2026-02-27 17:10:27 TP1 PP1]`,
`[DP0 TP0 EP0]`), markdown quoting, or be wrapped onto indented continuation lines.
Every figure is searched for by its own key, so a line quoting a few of them
(`max_total_num_tokens=...`, `available_gpu_mem=...`) is read too. Unknown lines are
ignored. Matching uses `str.find` and anchored number patterns only: linear in the input
(no backtracking).

The log is read as a stream (`BootLogReader.feed`, chunk by chunk): each record is read as
soon as the next one starts and then dropped, so memory is bounded by one record
(MAX_RECORD_CHARS; the rest of a longer one is not read) and the figures kept (at most
MAX_RANKS ranks), whatever the log's size: a 50 MB multi-rank log costs what its longest
record does. Callers bound the size they accept (the API's body limits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, get_args

from mambasizer.schemas.checklog import FigureName
from mambasizer.service.startlog.formats import marks as format_marks

MAX_RECORD_CHARS = 1 << 20  # one record (a line and its continuation lines); SGLang's longest, server_args, is ~10 KB
MAX_RANKS = 4096  # distinct rank labels kept (a real world is at most a few hundred ranks)

# Figures compared against the plan, in report order: the wire's FigureName, defined once there.
FIGURES: tuple[str, ...] = get_args(FigureName)
# Read too, reported by the parser, not compared.
EXTRAS = (
    "intermediate_conv_window_gb",
    "k_size_gb",
    "v_size_gb",
    "kv_size_gb",
    "memory_pool_end_avail_gb",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "kv_cache_dtype_printed",
    "post_capture_kv",
)

Number = int | float


class BootLogError(ValueError):
    """The text is not a readable SGLang start-up log."""


@dataclass
class BootLog:
    ranks: dict[str, dict[str, Any]] = field(default_factory=dict)  # rank -> figure -> value as printed
    server_args: dict[str, Any] = field(default_factory=dict)
    sglang_version: str | None = None
    gpu: str | None = None
    lines_read: int = 0
    # Bytes that are not UTF-8, in lines the reader does not need (skipped, counted); one in a
    # line it needs is a BootLogError.
    undecodable_bytes: int = 0
    undecodable_lines: int = 0
    # Wordings that only some releases print (mambasizer.service.startlog.formats): read by
    # mambasizer.service.startlog.release to tell the release when the log does not print it.
    format_marks: set[str] = field(default_factory=set)

    def rank(self, label: str) -> dict[str, Any]:
        return self.ranks.setdefault(label, {})


# --------------------------------------------------------------------------- records

_DEFAULT_RANK = "TP0"
_RANK_WORD = re.compile(r"(?:DP|PP|TP|EP|ATTN_CP|MOE_DP|CP)\d+(?:\.\.\d+)?")
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_TIME = re.compile(r"\d\d:\d\d:\d\d(?:[.,]\d+)?")
_MAX_PREFIX = 80  # a rank prefix is short; looking further would only cost time


def _rank_prefix(line: str) -> tuple[str | None, str]:
    """(rank label or None, the text after the prefix). The prefix is the first
    `[...]` near the start whose words are a timestamp and/or rank words."""
    open_at = line.find("[", 0, 16)
    if open_at < 0:
        return None, line
    close_at = line.find("]", open_at, open_at + _MAX_PREFIX)
    if close_at < 0:
        return None, line
    words = line[open_at + 1 : close_at].split()
    ranks = [w for w in words if _RANK_WORD.fullmatch(w)]
    stamps = sum(1 for w in words if _DATE.fullmatch(w) or _TIME.fullmatch(w))
    if not words or len(ranks) + stamps != len(words):
        return None, line
    # A timestamp alone (a single-GPU log prints no rank) is stripped too.
    return (" ".join(ranks) or None), line[close_at + 1 :]


def _continues(raw: str, stripped: str) -> bool:
    """An indented line continues the record before it (logs re-wrapped by hand), unless it
    opens a list item, a table row or a rank prefix."""
    return raw[:1] in (" ", "\t") and not stripped.startswith(("-", "*", "|", "["))


# --------------------------------------------------------------------------- values

# Digits are bounded: a figure never has more, and int() of a huge digit run is refused.
_INT = re.compile(r"[ \t]*(-?\d{1,20})(?![\d.])")
_GB = re.compile(r"[ \t]*(-?\d{1,15}(?:\.\d{1,6})?)[ \t]*GB")
_MB = re.compile(r"[ \t]*(-?\d{1,15}(?:\.\d{1,6})?)[ \t]*MB")


def _after(text: str, key: str, pattern: re.Pattern, start: int = 0) -> str | None:
    at = text.find(key, start)
    if at < 0:
        return None
    m = pattern.match(text, at + len(key))
    return m.group(1) if m else None


def _gb(text: str, key: str, start: int = 0) -> float | None:
    value = _after(text, key, _GB, start)
    return float(value) if value is not None else None


def _mb(text: str, key: str, start: int = 0) -> float | None:
    value = _after(text, key, _MB, start)
    return float(value) if value is not None else None


def _int(text: str, key: str, start: int = 0) -> int | None:
    value = _after(text, key, _INT, start)
    return int(value) if value is not None else None


def _put(figures: dict, name: str, value: Any) -> bool:
    """First value wins: the target's lines come before the draft model's."""
    if value is None:
        return False
    figures.setdefault(name, value)
    return True


def _read_figures(body: str, figures: dict) -> bool:
    """Every figure `body` prints, into `figures`. True when one was found."""
    found = False
    at = body.find("Load weight begin")
    if at >= 0:
        found |= _put(figures, "avail_mem_before_load_gb", _gb(body, "avail mem=", at))
    at = body.find("Load weight end")
    if at >= 0:
        found |= _put(figures, "avail_mem_after_load_gb", _gb(body, "avail mem=", at))
        found |= _put(figures, "weight_mem_usage_gb", _gb(body, "mem usage=", at))
    found |= _put(figures, "max_mamba_cache_size", _int(body, "max_mamba_cache_size:"))
    found |= _put(figures, "conv_state_gb", _gb(body, "conv_state size:"))
    found |= _put(figures, "ssm_state_gb", _gb(body, "ssm_state size:"))
    found |= _put(figures, "intermediate_ssm_state_gb", _gb(body, "intermediate_ssm_state_cache size:"))
    found |= _put(figures, "intermediate_conv_window_gb", _gb(body, "intermediate_conv_window_cache size:"))
    found |= _read_kv(body, figures)
    found |= read_mamba_refusal(body, figures)
    at = body.find("Memory pool end")
    if at >= 0:
        found |= _put(figures, "memory_pool_end_avail_gb", _gb(body, "avail mem=", at))
    found |= _put(figures, "max_total_num_tokens", _int(body, "max_total_num_tokens="))
    found |= _put(figures, "chunked_prefill_size", _int(body, "chunked_prefill_size="))
    found |= _put(figures, "max_prefill_tokens", _int(body, "max_prefill_tokens="))
    found |= _put(figures, "max_running_requests", _int(body, "max_running_requests="))
    found |= _put(figures, "context_len", _int(body, "context_len="))
    gmem = _gb(body, "available_gpu_mem=")
    found |= _put(figures, "available_gpu_mem_gb", gmem if gmem is not None else _gb(body, "available_cpu_mem="))
    at = body.find("Using KV cache dtype:")
    if at >= 0:
        printed = body[at + len("Using KV cache dtype:") :].split()
        found |= _put(figures, "kv_cache_dtype_printed", printed[0] if printed else None)
    return found


REFUSAL_KEY = "Computed max_mamba_cache_size="


def read_mamba_refusal(body: str, figures: dict) -> bool:
    """SGLang's refusal when the mamba state pool comes out empty (0.5.13 on,
    `_handle_max_mamba_cache`): `Computed max_mamba_cache_size=%d (total_rest_memory=%.2f GB,
    mamba_cache_per_req=%.2f MB)`. Also read from a plan's own error (compare.py), which
    words it as SGLang does."""
    at = body.find(REFUSAL_KEY)
    if at < 0:
        return False
    found = _put(figures, "computed_max_mamba_cache_size", _int(body, REFUSAL_KEY, at))
    found |= _put(figures, "total_rest_memory_gb", _gb(body, "total_rest_memory=", at))
    found |= _put(figures, "mamba_cache_per_req_mb", _mb(body, "mamba_cache_per_req=", at))
    return found


_KV_TARGET_LEAD = set(" \t`'\"-*|>:")


def _read_kv(body: str, figures: dict) -> bool:
    post = body.find("Post-capture KV sizing: KV cache allocated")
    if post >= 0:
        figures.setdefault("post_capture_kv", True)
        tokens = _int(body, "#tokens:", post)
        figures.setdefault("kv_tokens", tokens) if tokens is not None else None
        _put(figures, "kv_size_gb", _gb(body, "KV size:", post))
        return tokens is not None
    at = body.find("KV Cache is allocated")
    if at < 0:
        at = body.find("KV Cache VA upper bound")
        if at >= 0:
            figures.setdefault("post_capture_kv", True)
    if at < 0:
        return False
    # A labelled pool ("MiniMax ... KV Cache", a draft's) is not the target's KV pool.
    if any(ch not in _KV_TARGET_LEAD for ch in body[:at]):
        return False
    found = _put(figures, "kv_tokens", _int(body, "#tokens:", at))
    kv = _gb(body, "KV size:", at)
    if kv is not None:
        _put(figures, "kv_size_gb", kv)
    else:
        _put(figures, "k_size_gb", _gb(body, "K size:", at))
        _put(figures, "v_size_gb", _gb(body, "V size:", at))
    return found


# --------------------------------------------------------------------------- version, GPU

_VERSION = re.compile(r"(?i)sglang(?:==|[ :=]+v?|:v|/v| version[ :=]+v?)(\d+\.\d+\.\d+(?:\.?(?:post|dev|rc)\d+)?(?:\+[0-9a-z.]+)?)")
_SGLANG_WORD = re.compile(r"(?i)sglang")
_GPU = re.compile(r"(?:NVIDIA |AMD (?:Instinct )?|Intel )?(?:[HBAL]\d{2,3}|GB\d{2,3}|RTX \d{4}(?: Ti)?|MI\d{3}X?|A\d{2,3})(?: [A-Z0-9]{2,8})?")
_GPU_KEYS = ("device_name=", "device_name:", "GPU:", "gpu_name=", "Device name:")


def _version(body: str) -> str | None:
    for hit in _SGLANG_WORD.finditer(body):
        m = _VERSION.match(body, hit.start())
        if m:
            return m.group(1)
    return None


def _gpu(body: str) -> str | None:
    for key in _GPU_KEYS:
        at = body.find(key)
        if at >= 0:
            rest = body[at + len(key) : at + len(key) + 80].strip(" '\"")
            m = _GPU.match(rest)
            if m:
                return m.group(0)
    return None


# --------------------------------------------------------------------------- server_args record


_CALL_OPEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]{0,99}\(")
_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z_0-9]{0,99})[ \t]*=")


class _ReprReader:
    """A reader of the `server_args=` record: Python-repr syntax, never evaluated.

    Scalars (str, int, float, True/False/None) and lists/tuples/dicts of them are
    decoded; anything else (`<Enum.X: 1>`, `Foo(...)`) is skipped by bracket counting and
    kept as None. Each character is read at most a bounded number of times, and nesting is
    capped, so hostile text costs linear time."""

    MAX_DEPTH = 8

    def __init__(self, text: str, pos: int) -> None:
        self.s = text
        self.i = pos

    def _ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        self.i = i

    def record(self) -> dict[str, Any]:
        """`Name(k=v, ...)` or `{'k': v, ...}` at the cursor."""
        s = self.s
        self._ws()
        if self.i < len(s) and s[self.i] == "{":
            value = self._container(0)
            return value if isinstance(value, dict) else {}
        m = _CALL_OPEN.match(s, self.i)
        if not m:
            return {}
        self.i = m.end()
        out: dict[str, Any] = {}
        while True:
            self._ws()
            k = _KEYWORD.match(s, self.i)
            if not k:
                return out
            self.i = k.end()
            out[k.group(1)] = self._value(1)
            self._ws()
            if self.i < len(s) and s[self.i] == ",":
                self.i += 1
                continue
            return out

    _SCALAR = re.compile(r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?|\.\d+)|True|False|None|inf|nan")

    def _value(self, depth: int) -> Any:
        s = self.s
        self._ws()
        if self.i >= len(s):
            return None
        ch = s[self.i]
        if ch in "'\"":
            return self._string()
        if ch in "[({":
            return self._container(depth)
        m = self._SCALAR.match(s, self.i)
        if m and (m.end() >= len(s) or s[m.end()] in ",)]} \t\r\n:"):
            self.i = m.end()
            word = m.group(0)
            if word in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[word]
            if word in ("inf", "nan"):
                return None
            return float(word) if any(c in word for c in ".eE") else int(word) if len(word) <= 40 else None
        self._skip_opaque()
        return None

    def _string(self) -> str | None:
        s, quote = self.s, self.s[self.i]
        i = self.i + 1
        parts: list[str] = []
        start = i
        while i < len(s):
            c = s[i]
            if c == "\\":
                parts.append(s[start:i])
                nxt = s[i + 1 : i + 2]
                parts.append({"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}.get(nxt, "\\" + nxt))
                i += 2
                start = i
                continue
            if c == quote:
                parts.append(s[start:i])
                self.i = i + 1
                return "".join(parts)
            if c == "\n":
                break
            i += 1
        self.i = i
        return None

    def _container(self, depth: int) -> Any:
        if depth >= self.MAX_DEPTH:
            self._skip_opaque()
            return None
        s = self.s
        opener = s[self.i]
        closer = {"[": "]", "(": ")", "{": "}"}[opener]
        self.i += 1
        items: list[Any] = []
        pairs: dict[Any, Any] = {}
        while True:
            self._ws()
            if self.i >= len(s):
                return None
            if s[self.i] == closer:
                self.i += 1
                return pairs if opener == "{" else items
            key = self._value(depth + 1)
            self._ws()
            if opener == "{":
                if self.i >= len(s) or s[self.i] != ":":
                    self._skip_to(closer)
                    return None
                self.i += 1
                value = self._value(depth + 1)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    pairs[key] = value
            else:
                items.append(key)
            self._ws()
            if self.i < len(s) and s[self.i] == ",":
                self.i += 1
            elif self.i < len(s) and s[self.i] != closer:
                self._skip_to(closer)
                return None

    def _skip_opaque(self) -> None:
        """Skip one value we do not decode: up to the `,` or closing bracket that ends it
        at this nesting level (strings inside are skipped whole)."""
        s, i, depth = self.s, self.i, 0
        while i < len(s):
            c = s[i]
            if c in "'\"":
                self.i = i
                self._string()
                i = max(self.i, i + 1)
                continue
            if c in "([{<":
                depth += 1
            elif c in ")]}>":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                break
            elif c == "\n":
                break
            i += 1
        self.i = i

    def _skip_to(self, closer: str) -> None:
        self._skip_opaque()
        if self.i < len(self.s) and self.s[self.i] == closer:
            self.i += 1


def parse_server_args(body: str) -> dict[str, Any] | None:
    at = body.find("server_args=")
    if at < 0:
        return None
    record = _ReprReader(body, at + len("server_args=")).record()
    return record or None


# --------------------------------------------------------------------------- entry point


class BootLogReader:
    """A start-up log read as a stream: `feed(chunk)` as many times as needed (bytes or
    str), then `finish()` for the BootLog. Records (a line plus the indented lines that
    continue it) are read one at a time; nothing else of the log is kept."""

    def __init__(self) -> None:
        self.log = BootLog()
        self.bytes_read = 0
        self._partial = b""  # the bytes of a line not yet ended
        self._partial_dropped = False  # that line passed MAX_RECORD_CHARS: the rest is skipped
        self._dropped_bytes = 0  # how many (byte offsets stay true after it)
        self._record: tuple[str | None, list[str], int] | None = None  # rank, parts, chars
        self._record_bad: tuple[int, int] | None = None  # the record's (first undecodable byte, count)
        self._line_bad: tuple[int, int] | None = None  # the same, for the line being read
        self._seen_text = False
        self._server_args_unread = False  # a `server_args=` record that could not be read

    # ---- input

    def feed(self, chunk: bytes | str) -> None:
        if isinstance(chunk, str):
            text = chunk
            try:
                chunk = text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates (a surrogateescape'd byte): read as the bytes they stand for
                chunk = text.encode("utf-8", "surrogateescape" if _only_escapes(text) else "surrogatepass")
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._hold(chunk[start:])
                break
            self._hold(chunk[start:nl])
            self._end_line()
            start = nl + 1

    def feed_at(self, offset: int, line: bytes) -> None:
        """Feed one whole line (ending in a newline, or the log's last) found at byte `offset` of
        the log: the lines between were dropped by mambasizer.service.startlog.prefilter, which
        keeps every line this reader can use. The offset keeps byte positions in errors true."""
        if self._partial or self._partial_dropped:
            self._end_line()
        self.bytes_read = offset
        self.feed(line)

    def note_skipped(self, undecodable_bytes: int, undecodable_lines: int, seen_text: bool) -> None:
        """What the prefilter dropped: undecodable bytes in lines this reader does not read,
        and whether the log held any text."""
        self.log.undecodable_bytes += undecodable_bytes
        self.log.undecodable_lines += undecodable_lines
        self._seen_text = self._seen_text or seen_text

    def _hold(self, piece: bytes) -> None:
        if self._partial_dropped or not piece:
            self._dropped_bytes += len(piece)
            return
        room = 4 * MAX_RECORD_CHARS - len(self._partial)  # UTF-8: at most 4 bytes a character
        if len(piece) > room:
            self._dropped_bytes += len(piece) - max(room, 0)
            piece, self._partial_dropped = piece[: max(room, 0)], True
        self._partial += piece

    def _end_line(self) -> None:
        raw_bytes, truncated, dropped = self._partial, self._partial_dropped, self._dropped_bytes
        self._partial, self._partial_dropped, self._dropped_bytes = b"", False, 0
        offset = self.bytes_read
        self.bytes_read += len(raw_bytes) + dropped + 1
        self._line_bad = None
        try:
            text = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            if truncated and exc.start >= len(raw_bytes) - 3:  # a character cut at the bound
                text = raw_bytes[: exc.start].decode("utf-8")
            else:
                # Bytes that are not UTF-8 (a progress bar, a locale, a path): each becomes U+FFFD
                # and the line is read only to tell whether it is one check-log needs (_read_record).
                escaped = raw_bytes.decode("utf-8", "surrogateescape")
                bad = sum(1 for c in escaped if "\udc80" <= c <= "\udcff")
                text = escaped.translate(_ESCAPES_TO_REPLACEMENT)
                self._line_bad = (offset + exc.start, bad)
        for raw in text.splitlines() or [""]:  # str's line breaks (\r, \x0b, ...) as before
            self._line(raw)
        self._line_bad = None

    def _line(self, raw: str) -> None:
        stripped = raw.strip()
        if not stripped:
            return
        self._seen_text = True
        if self._record is not None and _continues(raw, stripped):
            rank, parts, chars = self._record
            if chars + len(stripped) <= MAX_RECORD_CHARS:
                parts.append(stripped)
                self._record = (rank, parts, chars + len(stripped) + 1)
            self._mark_bad()
            return
        self._flush()
        rank, body = _rank_prefix(raw)
        self._record = (rank, [body[:MAX_RECORD_CHARS]], min(len(body), MAX_RECORD_CHARS))
        self._mark_bad()

    def _mark_bad(self) -> None:
        """The current record holds the current line's undecodable bytes (counted once a line)."""
        if self._line_bad is None:
            return
        first, count = self._line_bad
        self._line_bad = (first, 0)  # the line's other pieces (split on \r ...) add no more
        if self._record_bad is None:
            self._record_bad = (first, count)
        else:
            self._record_bad = (self._record_bad[0], self._record_bad[1] + count)

    def _flush(self) -> None:
        if self._record is not None:
            rank, parts, _ = self._record
            bad, self._record, self._record_bad = self._record_bad, None, None
            body = " ".join(parts)
            if bad is not None:
                self._skip_undecodable(body, *bad)
                return
            self._read_record(rank, body)

    def _skip_undecodable(self, body: str, first: int, count: int) -> None:
        """A record holding bytes that are not UTF-8: skipped and counted when it is none of the
        lines the reader reads; a BootLogError naming the byte when it is one."""
        needed = (
            "server_args=" in body or _version(body) is not None or _gpu(body) is not None
            or bool(format_marks(body)) or _read_figures(body, {})
        )
        if needed:
            raise BootLogError(
                f"the log is not UTF-8 text at byte {first}, in a start-up line check-log reads ({body[:120]!r}): "
                "save the log as UTF-8, or give that line with its bytes fixed"
            )
        self.log.undecodable_bytes += count
        self.log.undecodable_lines += 1

    # ---- one record

    def _read_record(self, rank: str | None, body: str) -> None:
        log = self.log
        if log.sglang_version is None:
            log.sglang_version = _version(body)
        if log.gpu is None:
            log.gpu = _gpu(body)
        if "server_args=" in body:
            if not log.server_args:
                record = parse_server_args(body)
                if record:
                    log.server_args = record
                    log.lines_read += 1
                else:
                    self._server_args_unread = True
            return  # the record's own `max_running_requests=` etc. are flags, not figures
        log.format_marks.update(format_marks(body))
        label = rank or _DEFAULT_RANK
        figures: dict[str, Any] = {}
        if _read_figures(body, figures):
            if label not in log.ranks and len(log.ranks) >= MAX_RANKS:
                return
            log.lines_read += 1
            target = log.rank(label)
            for name, value in figures.items():
                if name == "avail_mem_after_load_gb" and name in target:
                    # A later load on this rank (a speculative draft model loads after the
                    # target): SGLang sizes the pools after both (SIZING_SPEC §1.1, F_post).
                    target["avail_mem_after_last_load_gb"] = value
                target.setdefault(name, value)

    # ---- the end

    def finish(self) -> BootLog:
        """The BootLog. BootLogError when the log is empty or holds none of the start-up
        lines (a `server_args` record that cannot be read is said so)."""
        if self._partial or self._partial_dropped:
            self._end_line()
        self._flush()
        if not self._seen_text:
            raise BootLogError("the log is empty")
        if not self.log.lines_read and self._server_args_unread:
            raise BootLogError(
                "its server_args record cannot be read (cut short or not SGLang's format) and it holds none of "
                "the start-up figure lines ('Load weight end', 'Mamba Cache is allocated', 'KV Cache is allocated', "
                "'max_total_num_tokens=')"
            )
        if not self.log.lines_read:
            garbled = self.log.undecodable_bytes
            raise BootLogError(
                "no SGLang start-up line found (looked for 'Load weight end', 'Mamba Cache is allocated', "
                "'KV Cache is allocated', 'max_total_num_tokens=', 'server_args=')"
                + (f"; {garbled} byte(s) of it are not UTF-8 text" if garbled else "")
            )
        return self.log


_ESCAPES_TO_REPLACEMENT = dict.fromkeys(range(56448, 56576), "�")


def _only_escapes(text: str) -> bool:
    """Every lone surrogate in `text` is one surrogateescape makes of a byte (U+DC80-U+DCFF)."""
    return all(not ("\ud800" <= c <= "\udfff") or "\udc80" <= c <= "\udcff" for c in text)


def parse_boot_log(text: str | bytes) -> BootLog:
    """Read `text` whole (BootLogReader reads a stream). BootLogError when it is not
    text, or holds none of the start-up lines."""
    reader = BootLogReader()
    reader.feed(text)
    return reader.finish()
