#!/usr/bin/env python3
"""`mambasizer serve` with other server settings, for the benchmark's "does another setting
lift both endpoints" question. Same app, same JSON logging, same uvicorn options as
service/api/serve_cmd.py; only the flags below differ.

    python bench/run.py --skip-inprocess \\
        --server-cmd "{python} bench/serve_variant.py --host {host} --port {port} --workers 2"

--http httptools / --loop uvloop need those packages (`pip install httptools uvloop`,
uvicorn's "standard" extra); the project does not depend on them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

LOG_LEVEL = os.environ.get("MAMBASIZER_BENCH_LOG_LEVEL", "info")
MEMO_SOLVER = os.environ.get("MAMBASIZER_BENCH_MEMO_SOLVER") == "1"


def _memoize_solver() -> None:
    """EXPERIMENT ONLY: answer a request seen before with its stored Plan, so the solver's
    cost drops out and what remains is the API and the stack (what /v1/plan would cost with
    a free solver). Never a setting of the service."""
    import mambasizer.service.api.plan as api_plan

    solve = api_plan.plan
    memo: dict = {}

    def memo_plan(request):
        key = request.model_dump_json()
        found = memo.get(key)
        if found is None:
            found = memo[key] = solve(request)
        return found

    api_plan.plan = memo_plan


def app_factory():
    """What each worker process builds (uvicorn imports this by name when workers > 1)."""
    from mambasizer.service.api import logs
    from mambasizer.service.api.app import create_app

    logs.configure(LOG_LEVEL)
    if MEMO_SOLVER:
        _memoize_solver()
    return create_app()


def main(argv=None) -> int:
    global LOG_LEVEL, MEMO_SOLVER
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--http", default="h11", choices=("h11", "httptools"))
    ap.add_argument("--loop", default="asyncio", choices=("asyncio", "uvloop"))
    ap.add_argument("--log-level", default="info", choices=("info", "warning"), help="warning: no access lines")
    ap.add_argument("--memoize-solver", action="store_true", help="experiment: take the solver's cost out (see _memoize_solver)")
    args = ap.parse_args(argv)
    LOG_LEVEL = args.log_level
    if args.memoize_solver:
        MEMO_SOLVER = True
        os.environ["MAMBASIZER_BENCH_MEMO_SOLVER"] = "1"
    import uvicorn

    opts = dict(
        host=args.host, port=args.port, http=args.http, loop=args.loop, log_config=None,
        log_level=args.log_level, access_log=False, server_header=False, lifespan="on",
    )
    if args.workers > 1:
        os.environ["MAMBASIZER_BENCH_LOG_LEVEL"] = args.log_level
        os.environ["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
        from mambasizer.service.api import logs

        logs.configure(args.log_level)
        uvicorn.run("bench.serve_variant:app_factory", factory=True, workers=args.workers, **opts)
    else:
        uvicorn.run(app_factory(), **opts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
