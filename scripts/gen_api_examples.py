#!/usr/bin/env python3
"""Write docs/api-examples.md from real output: every response, metric line and CLI table in
it is produced here by the app (in process) and the CLI, never typed by hand.

    python scripts/gen_api_examples.py           # rewrite docs/api-examples.md
    python scripts/gen_api_examples.py --check   # exit 1 if the committed file has drifted

tests/api/test_api_examples_doc.py fails when the committed file differs from what this
renders, so a change to the Plan, the problems or the CLI table shows up in the docs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "api-examples.md"
DEPLOYMENTS = ROOT / "examples" / "deployments.yaml"

REQUEST = """{
  "model": {"preset": "qwen3-next-80b-a3b-instruct"},
  "server_args": {"tp_size": 4},
  "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 101.3, "gpu_memory_mib": 143771}
}"""

PP2 = """{
  "model": {"preset": "kimi-linear-48b-a3b-instruct"},
  "sglang_args": ["--model-path", "moonshotai/Kimi-Linear-48B-A3B-Instruct", "--tp-size", "2", "--pp-size", "2", "--host", "0.0.0.0"],
  "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 94.0, "gpu_memory_mib": 143771}
}"""

INVALID = '{"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"pp_size": 2}, "budget": {"rest_gib": 30}}'

METRICS_GREP = r'^mambasizer_(build_info|plan_.*deployment="qwen3-next-tp4")'
COMPARE_JQ = "{material, warnings, pin, ignored_sglang_args, deltas: (.deltas | {max_mamba_cache_size, max_running_requests, max_total_num_tokens})}"

# Measured once (see the section); not regenerated, as timings vary from run to run.
COST = """## Cost per request

Measured in-process (raw ASGI calls into `create_app()`, no socket), `POST /v1/plan` with
`request.json` above, 2,000 requests per run, best of 7 runs, on a shared 2-core VM
(two sessions, the quieter one first; measured before the solver changes in
[BENCHMARKS.md](../BENCHMARKS.md#what-a-plan-costs-and-what-was-done-about-it) roughly halved
`plan()`, which only widens the gap to the thread-pool hop):

| | run 1 | run 2 |
|---|---|---|
| decode + validate + `plan()` + encode, no HTTP | 100 µs | 149 µs |
| whole app, `plan()` called on the event loop (what ships) | 203 µs | 299 µs |
| whole app, `plan()` in the thread pool | 360 µs | 680 µs |
| same two at 32 concurrent requests | 198 vs 338 µs | 307 vs 401 µs |

`plan()` runs directly in the `async def` endpoint: the thread-pool hop costs more than the
plan. A plan SGLang would refuse also searches for remedies (about 4 ms for the
`rest_gib: 0.1` example). The app costs about 60 µs per request without a plan
(`/livez`), about 30 µs of that being the JSON access line when logging is on.
"""


def _jq(value: Any) -> str:
    """`jq .` layout: two-space indent, one item per line."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _cli(*argv: str) -> tuple[int, str]:
    from mambasizer.service.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def _captures(workdir: Path) -> dict[str, str]:
    from fastapi.testclient import TestClient

    from mambasizer.service.api.app import create_app

    request_path = workdir / "request.json"
    request_path.write_text(REQUEST + "\n")
    out: dict[str, str] = {}
    with TestClient(create_app(deployments_path=str(DEPLOYMENTS))) as client:
        plan = client.post("/v1/plan", content=REQUEST.encode())
        assert plan.status_code == 200, plan.text
        out["plan"] = _jq(plan.json())
        code, cli_json = _cli("plan", "--json", str(request_path))
        # `diff <(curl ...; echo) <(mambasizer plan --json ...)`: curl's body plus a newline
        out["identical"] = "identical" if (plan.text + "\n" == cli_json and code == 0) else "DIFFERENT"

        bad = client.post("/v1/plan", content=INVALID.encode())
        assert bad.status_code == 422, bad.text
        head = [f"HTTP/1.1 {bad.status_code} {bad.reason_phrase}"]
        head += [f"{k}: {v}" for k, v in bad.headers.items() if k.lower() != "date"]
        out["invalid"] = "\n".join(head) + "\n\n" + bad.text

        compare = client.post("/v1/plan/compare", content=PP2.encode())
        assert compare.status_code == 200, compare.text
        body = compare.json()
        picked = {
            "material": body["material"],
            "warnings": body["warnings"],
            "pin": body["pin"],
            "ignored_sglang_args": body.get("ignored_sglang_args"),
            "deltas": {k: body["deltas"][k] for k in ("max_mamba_cache_size", "max_running_requests", "max_total_num_tokens")},
        }
        out["compare"] = _jq(picked)

        metrics = client.get("/metrics")
        assert metrics.status_code == 200
        lines = [ln for ln in metrics.text.splitlines()
                 if re.match(METRICS_GREP, ln)]
        out["metrics"] = "\n".join(lines)
    code, table = _cli("plan", str(request_path))
    out["table"] = table.rstrip("\n") + f"\n(exit {code})"
    return out


def render() -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        c = _captures(Path(tmp))
    deployments = DEPLOYMENTS.read_text().rstrip("\n")
    return f"""# mambasizer HTTP API: the three most common calls

<!-- Generated by scripts/gen_api_examples.py from real output; do not edit by hand.
     tests/api/test_api_examples_doc.py fails when this file drifts from the code. -->

Real output of this repository (SGLang 0.5.23 reference), as
`mambasizer serve --port 8000 --deployments examples/deployments.yaml` answers it, with the
files below. The full contract is in `openapi.json` (every request form has an example
there; `GET /openapi.json` and `/docs` serve it from a running server).

`request.json` (Qwen3-Next-80B-A3B on H200s at TP 4, budget as SGLang's profiler measures it):

```json
{REQUEST}
```

## 1. `POST /v1/plan`: what SGLang 0.5.23 would decide at start-up

The body is parsed as JSON whatever its Content-Type, so `curl -d @file` works as is.
200 for every computed plan; `feasible: false` carries SGLang's own error and the remedies.

```console
$ curl -s localhost:8000/v1/plan -d @request.json | jq .
{c["plan"]}
```

The body is byte for byte what the CLI prints:

```console
$ diff <(curl -s localhost:8000/v1/plan -d @request.json; echo) <(mambasizer plan --json request.json) && echo identical
{c["identical"]}
```

Input that cannot be sized is a 422 `application/problem+json` (RFC 9457) naming the
failing field and, when known, the allowed values (the `date` header is left out here):

```console
$ curl -s -i localhost:8000/v1/plan -d '{INVALID}'
{c["invalid"]}
```

## 2. `POST /v1/plan/compare`: what the upgrade to SGLang 0.5.23 changes

`pp2.json` uses SGLang launch arguments in place of `server_args` (flags that do not change
sizing come back in `ignored_sglang_args`):

```json
{PP2}
```

The same request under the `whole-model` accounting (before 0.5.23) and SGLang 0.5.23's,
with per-field deltas (`sglang-0.5.23` minus `whole-model`; the full answer also has both
plans and per-stage deltas), a warning when the change matters at an unchanged
`--mem-fraction-static`, and the flags that pin the old sizing (checked by planning them):

```console
$ curl -s localhost:8000/v1/plan/compare -d @pp2.json | jq '{COMPARE_JQ}'
{c["compare"]}
```

## 3. `GET /metrics`: the plan for every deployment, beside SGLang's own gauges

[`examples/deployments.yaml`](../examples/deployments.yaml) (re-read on `kill -HUP`):

```yaml
{deployments}
```

One `mambasizer_plan_*` series per deployment and pipeline stage (`kimi-k3-pp8` has eight);
the single-stage deployment's:

```console
$ curl -s localhost:8000/metrics | grep -E '{METRICS_GREP}'
{c["metrics"]}
```

`model_name` and `pp_rank` are the labels SGLang puts on `sglang:max_total_num_tokens`;
`model_name` is SGLang's own (`--served-model-name`, else `--model-path`, from the
deployment's `sglang_args`), else the plan's (the preset name, or the architecture for an
`hf_config`), so the planned gauges join SGLang's. Also exported:
`mambasizer_http_requests_total{{route,method,status}}`,
`mambasizer_http_request_duration_seconds{{route,method}}` (route = route template),
`mambasizer_deployment_input_valid{{deployment}}`, `mambasizer_deployments_reloads_total{{result}}`,
`mambasizer_deployments_last_reload_success`, and the trial gauges
`mambasizer_trial_{{measured,predicted}}_bytes{{deployment,pp_rank,pool}}`.

## The same on the command line

```console
$ mambasizer plan request.json
{c["table"]}
```

Exit codes: 0 SGLang would start, 1 it would not (its error and the remedies are printed),
2 the request cannot be sized (one line: `mambasizer: error: <field>: <message> (allowed: ...)`).

{COST}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api-examples.md differs")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT.relative_to(ROOT)} has drifted: run python scripts/gen_api_examples.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
