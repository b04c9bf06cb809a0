"""Reading a log through the prefilter (the lines the start-up reader can use, found at C speed)
gives exactly what reading it whole gives: the same BootLog, or the same error, with the same
byte offsets. Checked on every real log of the test data, every line wording of
test_bootlog_formats.py, the synthetic and reconstructed logs, and noisy variants (per-request
lines, continuation lines, blank and CRLF lines, bytes that are not UTF-8, lines past the
reader's bound), each fed in several chunk sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambasizer.service.api.checklog import EXAMPLE_LOG
from mambasizer.service.startlog.parse import BootLogError, BootLogReader
from mambasizer.service.startlog.prefilter import LINE_LIMIT, kept_lines
from test_bootlog_formats import TEMPLATES

DATA = Path(__file__).resolve().parents[1] / "data" / "bootlogs"
REAL = {p.name: json.loads(p.read_text())["verbatim"].encode() for p in sorted(DATA.glob("*.json"))}
REAL["qwen3.8-27b-fp8-mi355x.json"] = json.loads((Path(__file__).parent / "data" / "qwen3.8-27b-fp8-mi355x.json").read_text())["verbatim"].encode()
WORDINGS = {f"wording-{t[0]}": (t[3] + "\n").encode() for t in TEMPLATES}

DECODE = b"[2026-12-01 10:01:00 TP0] Decode batch. #running-req: 32, #token: 123456, token usage: 0.07, cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0\n"
EXAMPLE = EXAMPLE_LOG.encode()
NOISY = {
    "interleaved": b"".join(line + b"\n" + DECODE * 3 for line in EXAMPLE.splitlines()),
    "wrapped": EXAMPLE.replace(b"avail mem=63.60 GB,", b"\n\n      avail mem=63.60 GB,").replace(b"ssm_state size", b"\r\n\tssm_state size"),
    "indented-noise": DECODE + b"  File \"x.py\", line 3\n    raise ValueError\n" + EXAMPLE + b"\t- item\n  | cell |\n" + DECODE,
    "blank-unicode": EXAMPLE.replace(b"[2026-12-01 10:00:31] Mamba", b"\xc2\xa0\n   [2026-12-01 10:00:31] Mamba"),
    "undecodable-outside": EXAMPLE + b"progress \xe2\x96| 3/4\n" + DECODE + b"path /home/j\xf6rg\r\n",
    "undecodable-inside": EXAMPLE.replace(b"#tokens: 1788366", b"#tokens: 17\xff88366"),
    "undecodable-continuation": EXAMPLE.replace(b"ssm_state size", b"\n   \xff ssm_state size"),
    "only-noise": DECODE * 100,
    "empty": b"  \n\n\t\n",
    "cr-only": EXAMPLE.replace(b"\n", b"\r"),
    "no-final-newline": EXAMPLE.rstrip(b"\n"),
    "leading-indent": b"   KV Cache is allocated. #tokens: 5, K size: 1.00 GB, V size: 1.00 GB\n" + EXAMPLE,
}
LONG = {
    # a line past the reader's bound before the start-up lines, and one holding the record
    "long-noise-line": b"x" * (LINE_LIMIT + 123) + b"\n" + EXAMPLE.replace(b"#tokens: 1788366", b"#tokens: 1788\xff366"),
    "long-needle-line": b"[2026-12-01 09:59:59] server_args={'model_path': 'a'" + b", 'x': 1" * (LINE_LIMIT // 8) + b"}\n" + EXAMPLE,
}
CASES = {**REAL, **WORDINGS, **NOISY}


def _direct(data: bytes, chunk: int):
    reader = BootLogReader()
    try:
        for i in range(0, len(data), chunk):
            reader.feed(data[i : i + chunk])
        return reader.finish()
    except BootLogError as exc:
        return f"BootLogError: {exc}"


def _filtered(data: bytes, chunk: int):
    kept = kept_lines(data[i : i + chunk] for i in range(0, len(data), chunk))
    try:
        return kept.read()
    except BootLogError as exc:
        return f"BootLogError: {exc}"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("chunk", [5, 4096, 1 << 30])
def test_the_filter_reads_as_the_reader(name, chunk):
    data = CASES[name]
    if chunk == 5 and len(data) > 20_000:
        chunk = 997
    assert _filtered(data, chunk) == _direct(data, 1 << 20)


@pytest.mark.parametrize("name", sorted(LONG))
def test_lines_past_the_bound(name):
    data = LONG[name]
    for chunk in (65536, 1 << 20, 1 << 30):
        assert _filtered(data, chunk) == _direct(data, 1 << 20)


def test_the_filter_keeps_few_lines_of_a_large_log():
    data = EXAMPLE + DECODE * 20_000  # 3 MB of per-request lines
    kept = kept_lines([data])
    assert [line for _, line in kept.lines] == [line + b"\n" for line in EXAMPLE.splitlines()]
    assert kept.read() == _direct(EXAMPLE, 1 << 20)
