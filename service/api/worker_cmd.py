"""`mambasizer worker`: the standalone trial worker for a GPU node (a small HTTP app).

    mambasizer worker --host 0.0.0.0 --port 8001 --device cuda --token-file /etc/mambasizer/token

`POST /v1/trial` allocates, with torch on this node's device, what SGLang 0.5.23 allocates
for a plan's stages and returns measured against predicted bytes per pool. One trial runs
per device; up to --queue-max wait, the rest get 429. With a token (--token-file, or
MAMBASIZER_WORKER_TOKEN) every trial needs `Authorization: Bearer <token>`; bound beyond
loopback (e.g. 0.0.0.0) the worker refuses to start without one (exit 2). A CUDA worker
runs no CPU trials.
Point the API at it with MAMBASIZER_WORKER_URL=http://<host>:<port>.
"""

from __future__ import annotations

import argparse
import ipaddress
from typing import Any

from mambasizer.service.api.read_timeouts import TimeoutSettingError
from mambasizer.service.api.serve_cmd import add_read_timeouts, http_protocol
from mambasizer.service.cli import EXIT_OK
from mambasizer.service.cli.common import (
    add_command,
    add_listen_args,
    add_log_level,
    error,
    whole_number,
)


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the worker on this machine (a name other than
    localhost may resolve anywhere, so it counts as reachable)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_non_negative_int = whole_number(0, "a non-negative integer")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(subparsers, "worker", help="run the trial worker (POST /v1/trial) on a GPU node", doc=__doc__)
    add_listen_args(p, default_port=8001, port_help="port to bind (default 8001, as in the worker image)")
    p.add_argument(
        "--device", default="auto", choices=["auto", "cpu", "cuda"],
        help="where trials allocate (default auto: CUDA when torch sees a GPU, else the CPU)",
    )
    p.add_argument("--cuda-index", type=_non_negative_int, default=0, help="which GPU (default 0; or set CUDA_VISIBLE_DEVICES)")
    p.add_argument("--queue-max", type=_non_negative_int, default=4, help="trials that may wait while one runs (default 4); more get 429")
    p.add_argument("--token-file", metavar="FILE", help="file holding the bearer token trials must present (wins over MAMBASIZER_WORKER_TOKEN)")
    add_read_timeouts(p)
    add_log_level(p)
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from mambasizer.service.worker.app import create_app, read_token
    from mambasizer.service.worker.runner import RunnerConfig, TrialRunner

    try:
        token = read_token(args.token_file)
    except (OSError, ValueError) as exc:
        return error(f"--token-file: {exc}")
    try:
        protocol = http_protocol(args)
    except TimeoutSettingError as exc:
        return error(str(exc))
    if token is None and not is_loopback(args.host):
        return error(
            f"--host {args.host} is reachable beyond this machine, but no token is configured: "
            "set MAMBASIZER_WORKER_TOKEN or --token-file (or bind 127.0.0.1)"
        )
    try:
        import torch
    except ImportError:
        return error("the worker needs torch: pip install 'mambasizer[worker]' (see docs/worker.md)")
    if args.device == "cuda" and not torch.cuda.is_available():
        return error(f"--device cuda, but torch {torch.__version__} sees no CUDA device")
    import uvicorn

    runner = TrialRunner(RunnerConfig(device=args.device, queue_max=args.queue_max, cuda_index=args.cuda_index))
    app = create_app(runner, token=token, token_from_env=False)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, server_header=False, lifespan="on", http=protocol)
    return EXIT_OK
