#!/usr/bin/env python3
"""Rewrite README's example outputs from the code (tests/docs/test_readme_outputs.py fails
when they drift):

    python scripts/readme_outputs.py            # rewrite README.md in place
    python scripts/readme_outputs.py --check    # exit 1 if README.md differs

Covered: every `$ mambasizer plan examples/F` block (the CLI's stdout, as many lines as the
README shows), every `$ mambasizer check-log ...` block (its stdout; a `...` line in the README
stands for output lines left out, and each run of lines between them must be the real output's,
in order), every `$ mambasizer check --gpu|--preset ...; echo "exit $?"` line (the launch form: its
stdout and stderr, then the exit code), every `$ mambasizer recommend examples/F ...` block (its stdout, whole), the
`POST /v1/check-log` curl example (its jq projection), the `POST /v1/sweep` JSON example
(its jq projection, computed here) and the `POST /v1/recommend/disaggregated` examples
(`-d @examples/F`, the jq projections `.prefill, .decode | {KEYS}`, `.pair`, `-r .why`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PLAN_BLOCK = re.compile(r"\$ mambasizer plan examples/(\S+)\n```\n\n```text\n(.*?)```", re.S)
CHECKLOG_BLOCK = re.compile(r"\$ mambasizer check-log (.*?)\n```\n\n```text\n(.*?)```", re.S)
CHECKLOG_CURL = re.compile(
    r"\$ curl -s localhost:8000/v1/check-log --data-binary @(\S+) -H 'content-type: text/plain' \\\n"
    r"    \| jq -c '\.ranks\[0\]\.figures\.(\w+)'\n(.*?)\n"
)
ELIDED = "..."
# `$ mambasizer check <launch form>; echo "exit $?"`, then its output lines and `exit N`.
CHECK_LAUNCH = re.compile(r'\$ mambasizer check ((?:--gpu|--preset) [^\n]*?); echo "exit \$\?"\n(.*?)\n(?=\$ |```)', re.S)
# `$ mambasizer recommend examples/F [flags]` and its whole stdout, in one ```bash block.
RECOMMEND_BLOCK = re.compile(r"\$ mambasizer recommend (examples/[^\n]+)\n(.*?)\n```", re.S)
SWEEP_BLOCK = re.compile(
    r"\$ curl -s localhost:8000/v1/sweep -d '(\{.*?\})' \\\n    \| jq -c '\.rows\[\] \| \{([a-z_, ]+)\}'\n(.*?)\n(?=\$ |```)", re.S
)

RECPD_BLOCK = re.compile(
    r"\$ curl -s localhost:8000/v1/recommend/disaggregated -d @(\S+) \\\n    \| jq (-c|-r) '([^']*)'\n(.*?)\n(?=\$ |```)", re.S
)


def _path() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def plan_blocks(text: str) -> list[tuple[str, list[str]]]:
    return [(m.group(1), m.group(2).rstrip("\n").split("\n")) for m in PLAN_BLOCK.finditer(text)]


def plan_output(example: str) -> list[str]:
    _path()
    from mambasizer.service.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["plan", str(ROOT / "examples" / example)])
    return [line.rstrip() for line in out.getvalue().rstrip("\n").split("\n")]


def checklog_blocks(text: str) -> list[tuple[list[str], list[str]]]:
    """(argv after `mambasizer`, the lines shown) per check-log block."""
    return [
        (["check-log", *shlex.split(m.group(1).replace("\\\n", " "))], m.group(2).rstrip("\n").split("\n"))
        for m in CHECKLOG_BLOCK.finditer(text)
    ]


def cli_output(argv: list[str]) -> list[str]:
    """The stdout of `mambasizer ARGV`, run from the repository root (the paths are relative)."""
    _path()
    import os

    from mambasizer.service.cli import main

    out = io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            main(argv)
    finally:
        os.chdir(here)
    return [line.rstrip() for line in out.getvalue().rstrip("\n").split("\n")]


def check_launch_blocks(text: str) -> list[tuple[list[str], list[str]]]:
    """(argv after `mambasizer`, the lines shown) per `check` launch-form example."""
    return [(["check", *shlex.split(m.group(1))], m.group(2).split("\n")) for m in CHECK_LAUNCH.finditer(text)]


def check_output(argv: list[str]) -> list[str]:
    """What a shell shows for `mambasizer ARGV; echo "exit $?"`: stdout, stderr, `exit N`."""
    _path()
    import os
    import tempfile

    from mambasizer.service.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("MAMBASIZER_TERMINATION_LOG")
    with tempfile.TemporaryDirectory() as tmp:
        # A failing check also writes its line where a pod's termination message goes
        # (/dev/termination-log by default): keep this run's out of the machine's /dev.
        os.environ["MAMBASIZER_TERMINATION_LOG"] = os.path.join(tmp, "termination-log")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        finally:
            if saved is None:
                os.environ.pop("MAMBASIZER_TERMINATION_LOG", None)
            else:
                os.environ["MAMBASIZER_TERMINATION_LOG"] = saved
    lines = [line.rstrip() for line in (out.getvalue() + err.getvalue()).rstrip("\n").split("\n") if line]
    return [*lines, f"exit {code}"]


def recommend_blocks(text: str) -> list[tuple[list[str], list[str]]]:
    """(argv after `mambasizer`, the lines shown) per recommend block."""
    return [(["recommend", *shlex.split(m.group(1))], m.group(2).split("\n")) for m in RECOMMEND_BLOCK.finditer(text)]


def _key(line: str) -> list[str] | str:
    """What finds a shown line again in a new output: a table row by its rank and figure."""
    words = line.split()
    return words[:2] if len(words) >= 2 else line


def refresh_elided(shown: list[str], real: list[str]) -> list[str]:
    """`shown` with each run of lines between `...` lines replaced by the real output's lines
    from where the run's first line is found (after the previous run); a run that cannot be
    found is kept, so the check reports it."""
    out: list[str] = []
    runs: list[list[str]] = [[]]
    for line in shown:
        if line == ELIDED:
            runs.append([])
        else:
            runs[-1].append(line)
    at = 0
    for n, run in enumerate(runs):
        if n:
            out.append(ELIDED)
        if not run:
            continue
        start = next((i for i in range(at, len(real)) if real[i] == run[0]), None)
        if start is None:
            start = next((i for i in range(at, len(real)) if _key(real[i]) == _key(run[0])), None)
        if start is None:
            out.extend(run)
            continue
        out.extend(real[start : start + len(run)])
        at = start + len(run)
    return out


def checklog_curl(text: str) -> tuple[str, str, str] | None:
    m = CHECKLOG_CURL.search(text)
    return None if m is None else (m.group(1), m.group(2), m.group(3))


def checklog_curl_output(log_path: str, figure: str) -> str:
    _path()
    from mambasizer.service.startlog.compare import check_log

    data = check_log((ROOT / log_path).read_bytes()).data
    return json.dumps(data["ranks"][0]["figures"][figure], separators=(",", ":"))


def sweep_block(text: str) -> tuple[dict, list[str]]:
    m = SWEEP_BLOCK.search(text)
    assert m is not None, "README has no sweep example"
    return json.loads(m.group(1)) | {"_keys": [k.strip() for k in m.group(2).split(",")]}, m.group(3).split("\n")


def sweep_output(body: dict) -> list[str]:
    _path()
    from mambasizer.service.sweep import run_sweep

    keys = body["_keys"]
    rows = run_sweep({k: v for k, v in body.items() if k != "_keys"})["rows"]
    return [json.dumps({k: row[k] for k in keys}, separators=(",", ":")) for row in rows]


def recommend_disaggregated_output(example: str, flag: str, projection: str) -> list[str]:
    """What `curl ... -d @example | jq FLAG PROJECTION` prints, for the projections README uses."""
    _path()
    from mambasizer.service.recommend.disaggregated import recommend_disaggregated

    body = json.loads(recommend_disaggregated(json.loads((ROOT / example).read_text())).model_dump_json())

    def compact(v: object) -> str:
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False)

    sides = re.fullmatch(r"\.prefill, \.decode \| \{([a-z_, ]+)\}", projection)
    if sides is not None and flag == "-c":
        keys = [k.strip() for k in sides.group(1).split(",")]
        return [compact({k: body[role][k] for k in keys}) for role in ("prefill", "decode")]
    if projection == ".pair" and flag == "-c":
        return [compact(body["pair"])]
    if projection == ".why" and flag == "-r":
        return [body["why"]]
    raise ValueError(f"README's recommend/disaggregated projection {flag} {projection!r} is not one this script renders")


def recommend_disaggregated_blocks(text: str) -> list[tuple[str, str, str, list[str]]]:
    return [(m.group(1), m.group(2), m.group(3), m.group(4).split("\n")) for m in RECPD_BLOCK.finditer(text)]


def render(text: str) -> str:
    def plan(m: re.Match) -> str:
        shown = m.group(2).rstrip("\n").split("\n")
        real = plan_output(m.group(1))
        # Keep the README's cut (it may leave the warnings out), refreshed from the real output.
        new = real[: len(shown)] if len(real) >= len(shown) else real
        return m.group(0).replace(m.group(2), "\n".join(new) + "\n")

    text = PLAN_BLOCK.sub(plan, text)

    def checklog(m: re.Match) -> str:
        argv = ["check-log", *shlex.split(m.group(1).replace("\\\n", " "))]
        new = refresh_elided(m.group(2).rstrip("\n").split("\n"), cli_output(argv))
        return m.group(0).replace(m.group(2), "\n".join(new) + "\n")

    text = CHECKLOG_BLOCK.sub(checklog, text)

    def recommend(m: re.Match) -> str:
        real = cli_output(["recommend", *shlex.split(m.group(1))])
        return m.group(0)[: m.start(2) - m.start(0)] + "\n".join(real) + m.group(0)[m.end(2) - m.start(0):]

    text = RECOMMEND_BLOCK.sub(recommend, text)

    def check_launch(m: re.Match) -> str:
        real = check_output(["check", *shlex.split(m.group(1))])
        return m.group(0)[: m.start(2) - m.start(0)] + "\n".join(real) + m.group(0)[m.end(2) - m.start(0):]

    text = CHECK_LAUNCH.sub(check_launch, text)
    curl = CHECKLOG_CURL.search(text)
    if curl is not None:
        text = text[: curl.start(3)] + checklog_curl_output(curl.group(1), curl.group(2)) + text[curl.end(3):]
    m = SWEEP_BLOCK.search(text)
    if m is not None:
        body, _ = sweep_block(text)
        text = text[: m.start(3)] + "\n".join(sweep_output(body)) + text[m.end(3):]

    def recpd(m: re.Match) -> str:
        new = "\n".join(recommend_disaggregated_output(m.group(1), m.group(2), m.group(3)))
        return m.group(0)[: m.start(4) - m.start(0)] + new + m.group(0)[m.end(4) - m.start(0):]

    return RECPD_BLOCK.sub(recpd, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print("README.md outputs drifted: run scripts/readme_outputs.py", file=sys.stderr)
            return 1
        print("README.md outputs are current")
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"wrote {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
