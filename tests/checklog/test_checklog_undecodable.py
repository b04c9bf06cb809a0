"""Bytes that are not UTF-8 (a progress bar cut mid-character, a Latin-1 path, a locale's
message) do not make a production log unreadable (issue 25): outside the start-up lines
check-log reads they are skipped and counted in `notes`; inside one of those lines they are an
error naming the byte. On the CLI, the text/plain body (the raw form) and the JSON form (which
carries text: a client decodes the bytes with replacement, or its lone surrogates are a 422)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from mambasizer.service.api.app import create_app
from mambasizer.service.api.checklog import EXAMPLE_LOG
from mambasizer.service.cli import main
from mambasizer.service.startlog.compare import check_log

CLEAN = EXAMPLE_LOG.encode()
# After the start-up lines: a tqdm bar cut inside a block character, a Latin-1 path, a CRLF line.
NOISE = (
    b"[2026-12-01 10:00:41] Capturing batches (bs=64 avail_mem=10.40 GB): 100%|\xe2\x96\x88\xe2\x96| 36/36\n"
    b"[2026-12-01 10:00:42] loading tokenizer from /home/j\xf6rg/models\r\n"
    b"[2026-12-01 10:00:43] The server is fired up and ready to roll!\n"
)
NOISY = CLEAN + NOISE
NOTE = "3 byte(s) that are not UTF-8 text, in 2 lines check-log does not read (none of the start-up lines), were skipped"
# The byte inside the KV line check-log reads: an error naming it.
BROKEN = CLEAN.replace(b"#tokens: 1788366", b"#tokens: 1788\xff366")
BROKEN_AT = CLEAN.index(b"#tokens: 1788366") + len(b"#tokens: 1788")


def test_the_bytes_outside_the_start_up_lines_are_skipped_and_counted():
    clean, noisy = check_log(CLEAN), check_log(NOISY)
    assert noisy.all_match and noisy.data["ranks"] == clean.data["ranks"]
    assert (clean.data["notes"], noisy.data["notes"]) == ([], [NOTE])
    assert NOTE in noisy.notes  # also printed under the table


def test_a_byte_inside_a_line_it_reads_is_an_error_naming_it():
    with pytest.raises(ValueError, match=f"not UTF-8 text at byte {BROKEN_AT}, in a start-up line check-log reads"):
        check_log(BROKEN)


def test_cli(tmp_path, capsys):
    (tmp_path / "noisy.log").write_bytes(NOISY)
    (tmp_path / "broken.log").write_bytes(BROKEN)
    assert main(["check-log", "--json", str(tmp_path / "noisy.log")]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [NOTE]
    assert main(["check-log", str(tmp_path / "noisy.log")]) == 0
    assert f"note: {NOTE}\n" in capsys.readouterr().out
    assert main(["check-log", str(tmp_path / "broken.log")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"not UTF-8 text at byte {BROKEN_AT}, in a start-up line check-log reads" in err


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def test_api_raw_body(client):
    resp = client.post("/v1/check-log", content=NOISY, headers={"content-type": "text/plain"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["notes"] == [NOTE] and resp.json()["ranks"] == check_log(CLEAN).data["ranks"]
    # the same in chunks that cut the bad bytes apart
    resp = client.post("/v1/check-log", content=(NOISY[i : i + 7] for i in range(0, len(NOISY), 7)), headers={"content-type": "text/plain"})
    assert resp.status_code == 200 and resp.json()["notes"] == [NOTE]
    bad = client.post("/v1/check-log", content=BROKEN, headers={"content-type": "application/octet-stream"})
    assert bad.status_code == 422 and bad.json()["field"] == "log"
    assert f"byte {BROKEN_AT}, in a start-up line" in bad.json()["detail"]


def test_api_json_form(client):
    # JSON carries text: the bytes decoded with replacement are read as any text (U+FFFD is UTF-8).
    replaced = NOISY.decode("utf-8", "replace")
    resp = client.post("/v1/check-log", json={"log": replaced})
    assert resp.status_code == 200 and resp.json()["notes"] == [] and resp.json()["ranks"] == check_log(CLEAN).data["ranks"]
    # Lone surrogates (Python's surrogateescape) are no JSON string a schema accepts: a 422 naming `log`.
    escaped = json.dumps({"log": NOISY.decode("utf-8", "surrogateescape")})
    refused = client.post("/v1/check-log", content=escaped, headers={"content-type": "application/json"})
    assert refused.status_code == 422 and refused.json()["field"] == "log"
