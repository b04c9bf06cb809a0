"""`mambasizer serve`: the HTTP API (uvicorn), on one laptop or in front of every rollout.

    mambasizer serve --host 0.0.0.0 --port 8000 --deployments deployments.yaml

Logs are JSON lines on stderr (one access line per request). SIGHUP re-reads the
deployments file; SIGTERM / SIGINT stop accepting connections, let in-flight requests
finish (up to --graceful-timeout seconds) and run the app's shutdown.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from service.cli import EXIT_INVALID, EXIT_OK, port_number


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "serve",
        help="run the HTTP API (POST /v1/plan, /metrics, ...)",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 in a container)")
    p.add_argument("--port", type=port_number, default=8000, help="port to bind (default 8000)")
    p.add_argument(
        "--deployments",
        metavar="FILE",
        help="YAML file: deployment name -> PlanRequest, exported as mambasizer_plan_* gauges; re-read on SIGHUP",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="default info")
    p.add_argument(
        "--graceful-timeout",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="how long in-flight requests may finish after SIGTERM (default 20, under Kubernetes' 30)",
    )
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from service.api import logs
    from service.api.app import DeploymentsFileError, create_app

    logs.configure(args.log_level)
    try:
        app = create_app(deployments_path=args.deployments)
    except DeploymentsFileError as exc:
        print(f"mambasizer: error: --deployments {args.deployments}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_config=None,  # keep the JSON handler installed above
        log_level=args.log_level,
        access_log=False,  # the app writes its own structured access line
        server_header=False,
        timeout_graceful_shutdown=args.graceful_timeout,
        lifespan="on",
    )
    return EXIT_OK
