"""How the API gets a trial: a remote worker when `MAMBASIZER_WORKER_URL` is set, else the
worker embedded in this process (CUDA when the process sees a GPU, else the CPU).

`run_trial(plan, request, trial_options) -> dict` always returns a TrialResult as a dict:
a worker that is down, slow, busy or refuses the token gives
`{"status": "unavailable", "reason": ...}`, never an exception, so the plan still comes
back. Environment:

* `MAMBASIZER_WORKER_URL`: e.g. `http://gpu-node-7:8090` (the worker's base URL);
* `MAMBASIZER_WORKER_TOKEN` / `MAMBASIZER_WORKER_TOKEN_FILE`: the bearer token it requires;
* `MAMBASIZER_WORKER_TIMEOUT_S`: the HTTP timeout (default: the trial's `timeout_s` + 10 s,
  so the worker's own timeout answers first);
* `MAMBASIZER_WORKER_QUEUE_MAX`: the embedded worker's queue (default 4).

torch is imported only when the embedded worker actually runs a trial.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from pydantic import ValidationError

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import PlanRequest
from mambasizer.schemas.trial import TrialOptions, TrialResult

log = logging.getLogger("mambasizer.worker")

URL_ENV = "MAMBASIZER_WORKER_URL"
TOKEN_ENV = "MAMBASIZER_WORKER_TOKEN"
TOKEN_FILE_ENV = "MAMBASIZER_WORKER_TOKEN_FILE"
TIMEOUT_ENV = "MAMBASIZER_WORKER_TIMEOUT_S"
QUEUE_ENV = "MAMBASIZER_WORKER_QUEUE_MAX"
HTTP_GRACE_S = 10.0

_EMBEDDED = None
_EMBEDDED_LOCK = threading.Lock()


def unavailable(reason: str) -> dict:
    return TrialResult(status="unavailable", reason=reason).model_dump(mode="json")


def rejected(reason: str) -> dict:
    return TrialResult(status="rejected", reason=reason).model_dump(mode="json")


async def run_trial(plan: Plan | None, request: PlanRequest, trial_options: dict | TrialOptions | None, *,
                    memory_budget_bytes: int | None = None) -> dict:
    """`memory_budget_bytes`: the most host memory an embedded CPU trial may allocate (the
    API's --trial-memory-gib); a remote worker applies its own limits."""
    try:
        options = trial_options if isinstance(trial_options, TrialOptions) else TrialOptions.model_validate(trial_options or {})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "trial"
        return rejected(f"invalid trial options: trial.{where}: {err['msg']}")
    url = os.environ.get(URL_ENV, "").strip()
    if url:
        return await remote_trial(url, request, options)
    return await embedded_trial(plan, request, options, memory_budget_bytes=memory_budget_bytes)


# --------------------------------------------------------------------------- remote


def _token() -> str | None:
    path = os.environ.get(TOKEN_FILE_ENV, "").strip()
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().strip() or None
        except OSError as exc:
            log.error("cannot read the worker token file", extra={"fields": {"event": "worker_token_unreadable", "error": str(exc)}})
            return None
    return os.environ.get(TOKEN_ENV, "").strip() or None


def _http_timeout(options: TrialOptions) -> float:
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if raw:
        try:
            value = float(raw)
            if value > 0:
                return value
        except ValueError:
            pass
    return options.timeout_s + HTTP_GRACE_S


async def remote_trial(url: str, request: PlanRequest, options: TrialOptions, *, transport: Any = None) -> dict:
    import httpx

    body = {"request": request.model_dump(mode="json", exclude_unset=True), "trial": options.model_dump(mode="json")}
    headers = {"Accept": "application/json"}
    token = _token()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    timeout = _http_timeout(options)
    endpoint = url.rstrip("/") + "/v1/trial"
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(5.0, timeout)), transport=transport) as client:
            resp = await client.post(endpoint, json=body, headers=headers)
    except httpx.TimeoutException:
        _log_remote("worker_timeout", url, timeout_s=timeout)
        return unavailable(f"the trial worker did not answer within {timeout:g} s")
    except httpx.HTTPError as exc:
        _log_remote("worker_unreachable", url, error=type(exc).__name__)
        return unavailable("the trial worker is unreachable")
    # The worker's URL, its token and its own words stay in this server's log: what the
    # client reads is said in its terms (only a 422's detail is about the client's input).
    if resp.status_code == 200:
        try:
            return TrialResult.model_validate_json(resp.content).model_dump(mode="json")
        except ValidationError:
            _log_remote("worker_bad_answer", url, status=200)
            return unavailable("the trial worker gave an answer this server could not read")
    _log_remote("worker_refused", url, status=resp.status_code, detail=_problem_detail(resp))
    if resp.status_code == 429:
        return unavailable("the trial worker is busy (its queue is full); try again later")
    if resp.status_code in (401, 403):
        return unavailable("the trial worker did not accept this server's credential; an operator must fix the worker token")
    if resp.status_code == 422:
        return rejected(f"the trial worker could not size the request{_problem_detail(resp)}")
    return unavailable(f"the trial worker answered HTTP {resp.status_code}")


def _log_remote(event: str, url: str, **fields: Any) -> None:
    log.warning("remote trial did not complete", extra={"fields": {"event": event, "worker_url": url, **fields}})


def _problem_detail(resp) -> str:
    try:
        d = resp.json().get("detail")
    except Exception:  # any non-problem body
        return ""
    return f": {d[:500]}" if isinstance(d, str) and d else ""


# --------------------------------------------------------------------------- embedded


def embedded_runner():
    """The process's own runner, created on first use (one per process: one queue per device)."""
    global _EMBEDDED
    with _EMBEDDED_LOCK:
        if _EMBEDDED is None:
            from mambasizer.service.worker.runner import (
                DEFAULT_QUEUE_MAX,
                RunnerConfig,
                TrialRunner,
            )

            try:
                queue_max = int(os.environ.get(QUEUE_ENV, DEFAULT_QUEUE_MAX))
            except ValueError:
                queue_max = DEFAULT_QUEUE_MAX
            _EMBEDDED = TrialRunner(RunnerConfig(queue_max=max(0, queue_max)))
        return _EMBEDDED


def set_embedded_runner(runner) -> None:
    """Replace the embedded runner (tests, or an app that builds its own)."""
    global _EMBEDDED
    with _EMBEDDED_LOCK:
        _EMBEDDED = runner


async def embedded_trial(plan: Plan | None, request: PlanRequest, options: TrialOptions, *,
                         memory_budget_bytes: int | None = None) -> dict:
    from mambasizer.service.solver.errors import PlanInputError
    from mambasizer.service.worker.runner import QueueFull, TorchMissing

    runner = embedded_runner()
    try:
        result = await runner.submit(request, options, plan=plan, memory_budget_bytes=memory_budget_bytes)
    except QueueFull:
        return unavailable("the trial worker is busy (one trial runs at a time and the queue is full); try again later")
    except TorchMissing:
        log.error("embedded trial: torch is not installed", extra={"fields": {"event": "torch_missing"}})
        return unavailable("this server cannot run trials (its trial worker is not installed)")
    except PlanInputError as exc:
        return rejected(f"{exc.field}: {exc.message}")
    return result.model_dump(mode="json")
