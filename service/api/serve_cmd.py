"""`mambasizer serve`: the HTTP API (uvicorn), on one laptop or in front of every rollout.

    mambasizer serve --host 0.0.0.0 --port 8000 --deployments deployments.yaml

Logs are JSON lines on stderr (one access line per request). Trials (`trial` on
POST /v1/plan) run only with --enable-trials; see docs/worker.md. SIGHUP re-reads the
deployments file; SIGTERM / SIGINT stop accepting connections, let in-flight requests
finish (up to --graceful-timeout seconds) and run the app's shutdown.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mambasizer.service.api import pool_settings as workpool
from mambasizer.service.api.read_timeouts import (
    BODY_TIMEOUT_ENV,
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    HEADER_TIMEOUT_ENV,
    TimeoutSettingError,
    parse_timeout,
    resolve,
)
from mambasizer.service.api.trials import DEFAULT_MEMORY_GIB, TrialSettingsError, parse_memory_gib
from mambasizer.service.cli import EXIT_OK
from mambasizer.service.cli.common import (
    add_command,
    add_listen_args,
    add_log_level,
    error,
    setting_type,
)


def add_read_timeouts(p: argparse.ArgumentParser) -> None:
    """--header-timeout / --body-timeout (serve and worker): slow clients are closed."""
    p.add_argument(
        "--header-timeout", type=setting_type(parse_timeout, "--header-timeout"), metavar="SECONDS",
        help=f"close a connection whose request headers are not complete within this time: 408 "
        f"(env {HEADER_TIMEOUT_ENV}, default {DEFAULT_HEADER_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--body-timeout", type=setting_type(parse_timeout, "--body-timeout"), metavar="SECONDS",
        help=f"close a connection whose request body is not complete within this time after its headers "
        f"(env {BODY_TIMEOUT_ENV}, default {DEFAULT_BODY_TIMEOUT_S:g})",
    )


def http_protocol(args: argparse.Namespace):
    """uvicorn's `http=`: h11 with the read deadlines (TimeoutSettingError for a bad env var)."""
    from mambasizer.service.api.timed_h11 import timed_h11

    return timed_h11(
        resolve(args.header_timeout, HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT_S),
        resolve(args.body_timeout, BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT_S),
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(subparsers, "serve", help="run the HTTP API (POST /v1/plan, /metrics, ...)", doc=__doc__)
    add_listen_args(p, default_port=8000, port_help="port to bind (default 8000)")
    p.add_argument(
        "--deployments",
        metavar="FILE",
        help="YAML file: deployment name -> PlanRequest, exported as mambasizer_plan_* gauges; re-read on SIGHUP",
    )
    add_read_timeouts(p)
    models = p.add_argument_group("checkpoints", "where a --model-path (in sglang_args) may be read; shipped checkpoints need neither")
    models.add_argument(
        "--model-root", action="append", metavar="DIR",
        help="a folder whose subdirectories are model checkpoints the API may read (config.json, hf_quant_config.json, "
        "safetensors index and headers); repeatable; nothing outside a root is read, symlinks and '..' resolved "
        "(env MAMBASIZER_MODEL_ROOTS, os.pathsep-separated; default: none)",
    )
    models.add_argument(
        "--hub", action="store_true", default=None,
        help="let the API read repo ids from the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN; the HF cache with it); "
        "off by default (env MAMBASIZER_HUB=1)",
    )
    trials = p.add_argument_group(
        "trials",
        "`trial` on POST /v1/plan allocates memory; off unless enabled. Each flag wins over its environment variable.",
    )
    trials.add_argument(
        "--enable-trials", action="store_true", default=None,
        help="run trials (env MAMBASIZER_TRIALS_ENABLED=true/1/yes); otherwise a trial is answered status 'rejected' with the plan",
    )
    trials.add_argument(
        "--trial-token-file", metavar="FILE",
        help="file holding the bearer token clients must send to run a trial (env MAMBASIZER_TRIAL_TOKEN_FILE, "
        "or the token itself in MAMBASIZER_TRIAL_TOKEN); not the worker's token",
    )
    trials.add_argument(
        "--trial-memory-gib", type=setting_type(parse_memory_gib, "--trial-memory-gib"), metavar="GIB",
        help=f"most host memory one embedded CPU trial may allocate (env MAMBASIZER_TRIAL_MEMORY_GIB, default {DEFAULT_MEMORY_GIB:g})",
    )
    heavy = p.add_argument_group(
        "heavy requests",
        "recommend, sweep, compare and large plans run in worker processes, never on the event loop "
        "(docs: README 'Heavy requests'). Each flag wins over its environment variable.",
    )
    heavy.add_argument(
        "--heavy-workers", type=setting_type(workpool.parse_workers, "--heavy-workers"), metavar="N",
        help=f"worker processes (env {workpool.ENV_WORKERS}, default {workpool.DEFAULT_WORKERS})",
    )
    heavy.add_argument(
        "--heavy-queue", type=setting_type(workpool.parse_queue, "--heavy-queue"), metavar="N",
        help=f"heavy requests that may wait for a process; the next is answered 429 with Retry-After "
        f"(env {workpool.ENV_QUEUE}, default {workpool.DEFAULT_QUEUE})",
    )
    heavy.add_argument(
        "--request-deadline", type=setting_type(workpool.parse_deadline, "--request-deadline"), metavar="SECONDS",
        help=f"a heavy request's deadline from admission, queue wait included; past it its process is killed "
        f"and the answer is 503 (env {workpool.ENV_DEADLINE}, default {workpool.DEFAULT_DEADLINE_S:g})",
    )
    heavy.add_argument(
        "--heavy-worker-memory", type=setting_type(workpool.parse_memory_mib, "--heavy-worker-memory"), metavar="MIB",
        help=f"address-space ceiling of each worker process; a request that needs more is answered 503 "
        f"(env {workpool.ENV_MEMORY}, default {workpool.DEFAULT_MEMORY_MIB})",
    )
    heavy.add_argument(
        "--heavy-per-client", type=setting_type(workpool.parse_per_client, "--heavy-per-client"), metavar="N",
        help=f"heavy requests one client may have admitted at once; its next is answered 429 with Retry-After "
        f"(env {workpool.ENV_PER_CLIENT}, default {workpool.DEFAULT_PER_CLIENT})",
    )
    heavy.add_argument(
        "--heavy-client-header", type=setting_type(workpool.parse_client_header, "--heavy-client-header"), metavar="NAME",
        help=f"count heavy requests per the last value of this header (e.g. X-Forwarded-For) instead of the peer "
        f"address; only behind a proxy that sets it (env {workpool.ENV_CLIENT_HEADER}, default: the peer address)",
    )
    add_log_level(p)
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

    from mambasizer.service.api import logs
    from mambasizer.service.api.app import DeploymentsFileError, create_app
    from mambasizer.service.api.trials import TrialSettings

    logs.configure(args.log_level)
    from mambasizer.service.api.deployment_trials import concurrency_from_env

    try:
        trials = TrialSettings.from_env(enabled=args.enable_trials, token_file=args.trial_token_file, memory_gib=args.trial_memory_gib)
        concurrency_from_env()  # checked here so a bad value is one line, not a traceback from create_app
        protocol = http_protocol(args)
        pool = workpool.PoolSettings.resolve(args.heavy_workers, args.heavy_queue, args.request_deadline, args.heavy_worker_memory,
                                             per_client=args.heavy_per_client, client_header=args.heavy_client_header)
    except (TrialSettingsError, TimeoutSettingError, workpool.PoolSettingError) as exc:
        return error(str(exc))
    try:
        from mambasizer.service.checkpoints.policy import serve_policy

        checkpoints = serve_policy(args.model_root, args.hub)
        for root in checkpoints.roots or ():
            if not os.path.isdir(root):
                return error(f"--model-root {root}: no such directory; give a folder that holds model checkpoints")
        app = create_app(deployments_path=args.deployments, trials=trials, pool=pool, checkpoints=checkpoints)
    except DeploymentsFileError as exc:
        return error(f"--deployments {args.deployments}: {exc}")
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_config=None,  # keep the JSON handler installed above
        log_level=args.log_level,
        access_log=False,  # the app writes its own structured access line
        server_header=False,
        timeout_graceful_shutdown=args.graceful_timeout,
        http=protocol,  # h11 with header / body read deadlines (slow clients are closed)
        lifespan="on",
    )
    return EXIT_OK
