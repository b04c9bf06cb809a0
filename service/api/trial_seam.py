"""The seam between the HTTP API and the trial worker (issue 4).

`POST /v1/plan` with a `trial` object, once mambasizer.service.api.trials lets it through (trials
enabled, the client's credential accepted), calls `run_trial(plan, request, trial_options,
memory_budget_bytes=...)` after the plan is computed, and puts what it returns under `trial` in the response:

* a dict: the trial result, returned as is (JSON-serialisable; `status` is one of
  `ok`, `oom`, `unavailable`, `rejected`);
* None: no trial could run; the API answers `trial: {"status": "unavailable"}`.

The API never fails a plan because of a trial: an exception raised here is logged and
answered as `{"status": "unavailable", "reason": ...}` with the plan, status 200. The
call is cancelled (CancelledError) when the client disconnects.

`create_app(worker=...)` takes the same hook (an async callable `(plan, request, trial_options)`,
or an object with a `run_trial` method of it, and optionally `aclose()`, called at
shutdown). Without one, the API calls this module's `run_trial`, looked up at call time,
so the worker integration can replace this function.

The worker integration (`mambasizer.service.worker.client`): with `MAMBASIZER_WORKER_URL` set, the
trial goes to that worker over HTTP (bearer token from `MAMBASIZER_WORKER_TOKEN`, a
timeout; a worker that is down, slow or busy gives `status: "unavailable"`); without it,
the worker embedded in this process runs it (CUDA when the process sees a GPU, else the
CPU). torch is imported only when an embedded trial actually runs.
"""

from __future__ import annotations

from mambasizer.schemas import Plan, PlanRequest


async def run_trial(plan: Plan, request: PlanRequest, trial_options: dict, *,
                    memory_budget_bytes: int | None = None) -> dict | None:
    from mambasizer.service.worker import client

    return await client.run_trial(plan, request, trial_options, memory_budget_bytes=memory_budget_bytes)
