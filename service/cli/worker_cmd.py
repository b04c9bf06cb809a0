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
import sys
from typing import Any

from service.api.read_timeouts import TimeoutSettingError
from service.cli import EXIT_INVALID, EXIT_OK, port_number
from service.cli.serve_cmd import add_read_timeouts, http_protocol


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the worker on this machine (a name other than
    localhost may resolve anywhere, so it counts as reachable)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "worker",
        help="run the trial worker (POST /v1/trial) on a GPU node",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 in a container)")
    p.add_argument("--port", type=port_number, default=8001, help="port to bind (default 8001, as in the worker image)")
    p.add_argument(
        "--device", default="auto", choices=["auto", "cpu", "cuda"],
        help="where trials allocate (default auto: CUDA when torch sees a GPU, else the CPU)",
    )
    p.add_argument("--cuda-index", type=_non_negative_int, default=0, help="which GPU (default 0; or set CUDA_VISIBLE_DEVICES)")
    p.add_argument("--queue-max", type=_non_negative_int, default=4, help="trials that may wait while one runs (default 4); more get 429")
    p.add_argument("--token-file", metavar="FILE", help="file holding the bearer token trials must present (wins over MAMBASIZER_WORKER_TOKEN)")
    add_read_timeouts(p)
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="default info")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from service.worker.app import create_app, read_token
    from service.worker.runner import RunnerConfig, TrialRunner

    try:
        token = read_token(args.token_file)
    except (OSError, ValueError) as exc:
        print(f"mambasizer: error: --token-file: {exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        protocol = http_protocol(args)
    except TimeoutSettingError as exc:
        print(f"mambasizer: error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if token is None and not is_loopback(args.host):
        print(
            f"mambasizer: error: --host {args.host} is reachable beyond this machine, but no token is configured: "
            "set MAMBASIZER_WORKER_TOKEN or --token-file (or bind 127.0.0.1)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    try:
        import torch
    except ImportError:
        print("mambasizer: error: the worker needs torch: pip install 'mambasizer[worker]' (see docs/worker.md)", file=sys.stderr)
        return EXIT_INVALID
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"mambasizer: error: --device cuda, but torch {torch.__version__} sees no CUDA device", file=sys.stderr)
        return EXIT_INVALID
    import uvicorn

    runner = TrialRunner(RunnerConfig(device=args.device, queue_max=args.queue_max, cuda_index=args.cuda_index))
    app = create_app(runner, token=token, token_from_env=False)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, server_header=False, lifespan="on", http=protocol)
    return EXIT_OK
