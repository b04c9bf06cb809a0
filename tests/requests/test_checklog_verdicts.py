"""A start-up log is one more arrival form of the request front door (issue 25 item 1): the
launch a log records gets the verdict `POST /v1/plan` gives the same launch line.

Each row is a launch line (accepted and refused flags, release-specific ones with their
release). The log is built from it as that release's server prints it: a `server_args` record
holding each flag's field (the release parser's dest) with its value, on a synthetic boot of a
shipped preset whose figures come from a real plan (synth_log). A flag the release's parser
does not know can be in no record that release prints; it reaches check-log as its launch
arguments (`--` ARGS / JSON `sglang_args`), which every row also takes. Both must answer what
`POST /v1/plan` answers for the same line, model path and measured budget: refused (422)
naming the same field with the same message, or accepted with the same plan.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from checklog.synth_log import synth_log
from mambasizer.service import sglang_args as sa
from mambasizer.service.api.app import create_app
from mambasizer.service.solver import PlanInputError
from mambasizer.service.startlog.compare import check_log

MODEL_PATH = "Qwen/Qwen3.5-35B-A3B"
BASE: dict[str, Any] = {
    "model": {"preset": "qwen3.5-35b-a3b"},
    "server_args": {"tp_size": 2, "mem_fraction_static": 0.85},
    "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0},
}
BASE_LINE = ["--model-path", MODEL_PATH, "--tp-size", "2", "--mem-fraction-static", "0.85"]

# (release, launch words, refused?) The expected verdict is checked against the API's too.
ROWS: list[tuple[str, list[str], bool]] = [
    ("0.5.23", [], False),
    ("0.5.23", ["--max-running-requests", "48"], False),
    ("0.5.23", ["--page-size", "64"], False),
    ("0.5.23", ["--log-level", "debug"], False),  # size-neutral
    ("0.5.23", ["--enable-dp-lm-head"], True),
    ("0.5.23", ["--speculative-algorithm", "UNO"], True),  # DFLASH is modelled since; UNO is not
    ("0.5.23", ["--attention-backend", "aiter"], True),
    ("0.5.23", ["--device", "xpu"], True),
    ("0.5.23", ["--cpu-offload-gb", "20"], False),  # weight-moving: noted in a measured budget
    ("0.5.23", ["--quantization", "fp8"], False),
    ("0.5.23", ["--mamba-radix-cache-strategy", "no_buffer"], False),
    ("0.5.13", ["--mamba-scheduler-strategy", "no_buffer"], False),  # 0.5.13's spelling
    ("0.5.13", ["--mamba-radix-cache-strategy", "no_buffer"], True),  # not a 0.5.13 flag
    ("0.5.13", ["--attention-context-parallel-size", "2"], True),
]


def _typed(flag: Any, words: list[str]) -> Any:
    """The field's value as the release's ServerArgs record prints it."""
    if flag.nargs == 0:
        return True
    value = words[1]
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def log_from_line(release: str, words: list[str]) -> str | None:
    """The start-up log whose record holds the line's flag, or None when `release`'s parser
    does not know the flag (no record that release prints can hold it)."""
    text, _ = synth_log(BASE, MODEL_PATH)
    if not words:
        return text
    by_option, _ = sa._flags(sa.base_release(release))
    flag = by_option.get(words[0])
    if flag is None:
        return None
    field = f"'{flag.dest}': {_typed(flag, words)!r}, 'mem_fraction_static'"
    return text.replace("'mem_fraction_static'", field, 1)


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def api_plan(client, release: str, words: list[str]) -> tuple[int, dict]:
    body = {
        "sglang_args": [*BASE_LINE, *words],
        "budget": {**BASE["budget"], "gpu": "h200"},  # the synthetic log's device line is an H200
        "sglang_version": release,
    }
    resp = client.post("/v1/plan", json=body)
    return resp.status_code, resp.json()


def _check_log_verdict(client, text: str, release: str, sglang_args: list[str] | None) -> tuple[int, dict, Any]:
    """(API status, API body, the library's result or PlanInputError) for one check-log call."""
    payload: dict = {"log": text, "sglang_version": release}
    if sglang_args is not None:
        payload["sglang_args"] = sglang_args
    resp = client.post("/v1/check-log", json=payload)
    try:
        result: Any = check_log(text, sglang_args=sglang_args, sglang_version=release)
    except PlanInputError as exc:
        result = exc
    return resp.status_code, resp.json(), result


def _same_verdict(api_status: int, api_body: dict, status: int, body: dict, result: Any) -> None:
    if api_status == 422:
        assert status == 422, body
        assert (body["field"], body["detail"]) == (api_body["field"], api_body["detail"])
        assert isinstance(result, PlanInputError)
        assert (result.field, result.message) == (api_body["field"], api_body["detail"])
    else:
        assert api_status == 200 and status == 200, (api_body, body)
        assert not isinstance(result, PlanInputError)
        assert result.plan is not None
        assert result.plan.max_total_num_tokens == api_body["max_total_num_tokens"]
        assert result.plan.max_mamba_cache_size == api_body["max_mamba_cache_size"]
        assert result.plan.max_running_requests == api_body["max_running_requests"]


@pytest.mark.parametrize("release, words, refused", ROWS, ids=[f"{r}:{' '.join(w) or 'defaults'}" for r, w, _ in ROWS])
def test_a_logs_launch_gets_the_apis_verdict(client, release, words, refused):
    api_status, api_body = api_plan(client, release, words)
    assert api_status == (422 if refused else 200), api_body
    if refused:
        # The API names the launch line and the flag itself.
        assert api_body["field"] == "sglang_args" and words[0] in api_body["detail"], api_body

    # The log built from the line: its record holds the flag.
    text = log_from_line(release, words)
    if text is not None:
        status, body, result = _check_log_verdict(client, text, release, None)
        _same_verdict(api_status, api_body, status, body, result)
    else:
        assert refused and release != "0.5.23"  # only an unknown flag has no field to print

    # The same line given as check-log's launch arguments, over a log without the flag.
    base_text = log_from_line(release, [])
    assert base_text is not None
    status, body, result = _check_log_verdict(client, base_text, release, [*BASE_LINE, *words])
    _same_verdict(api_status, api_body, status, body, result)


def test_the_table_holds_each_kind_of_row():
    """Accepted and refused rows, on the default release and an older one whose parser differs."""
    kinds = {(release == "0.5.23", refused) for release, _, refused in ROWS}
    assert kinds == {(True, True), (True, False), (False, True), (False, False)}
