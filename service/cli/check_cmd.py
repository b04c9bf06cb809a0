"""`mambasizer check`: would SGLang 0.5.23 start with this model, these arguments and this
memory, and does it meet the stated requirements?

Built for pipelines and the Helm preflight hook: exit 0 when it passes (one summary line on
stdout, then each of the plan's warnings on a line of its own), 1 when SGLang would not start or a stated requirement is missed, 2 for input that
cannot be sized. Every failure is ONE readable line on stderr, also written to the
container's termination log (`/dev/termination-log`, or `$MAMBASIZER_TERMINATION_LOG`) so
that `kubectl describe pod` and `helm install` show it.

    mambasizer check REQUEST.json            # a PlanRequest; `-` reads it from stdin
    mambasizer check --gpu h200 -- --model-path ID <sglang launch args...>
    mambasizer check --preset NAME --gpu h200 -- <sglang launch args...>
    mambasizer check --gpu mi355x --gpu-memory-mib 294896 --sglang-version 0.5.17 -- --model-path ID ...
    mambasizer check --preset NAME --budget-gib X -- <sglang launch args...>
    mambasizer check --gpu h200 -- <prefill node's launch args> -- <decode node's launch args>
    mambasizer check REQUEST.json --sglang-version 0.5.16 --upgrade-to 0.5.23

The launch form is the body POST /v1/plan takes (the model from --preset or the launch line's
`--model-path`, a shipped checkpoint id; both must name one checkpoint), parsed by the
`--sglang-version` release's own parser: a flag the API refuses is refused here, by name.

With `--upgrade-to VERSION` the deployment is also planned at VERSION, and the check fails
(exit 1, one line per failure) when VERSION would not start it, or would lose more than
`--max-capacity-loss` of its running requests or KV tokens, or more than `--max-slack-loss`
of the memory left outside the pools on any PP stage (service/upgrade.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from mambasizer.service.cli import EXIT_INVALID, EXIT_OK, EXIT_WOULD_NOT_START
from mambasizer.service.cli.common import add_command, whole_number
from mambasizer.service.solver import gpu_labels
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.releases.sizing import release_label
from mambasizer.service.upgrade import DEFAULT_MAX_CAPACITY_LOSS, DEFAULT_MAX_SLACK_LOSS

PROG = "mambasizer check"
DEFAULT_TERMINATION_LOG = "/dev/termination-log"
TERMINATION_LOG_ENV = "MAMBASIZER_TERMINATION_LOG"
TERMINATION_MESSAGE_MAX_BYTES = 4096  # what the kubelet keeps of a termination message


class CheckFailure(Exception):
    """A verdict or an input problem, carried to `run` as one line (or one per failure) and an exit code."""

    def __init__(self, code: int, line: str) -> None:
        super().__init__(line)
        self.code = code
        self.line = line


# --------------------------------------------------------------------------- parser


_positive_int = whole_number(1, "a positive integer")


def _finite(unit: str):
    """An argparse type: a finite number of `unit`, named in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number of {unit}, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"expected a finite number of {unit}, got {text!r}")
        return value

    return parse


def _positive(parse):
    """`parse`, refusing zero and negatives: a timeout of 0 (or below) would fail every call with
    a misleading connection error (or inside httpx) rather than name the flag."""

    def positive(text: str) -> float:
        value = parse(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
        return value

    return positive


def _share(text: str) -> float:
    """An argparse type: a share in [0, 1] (0.1 = a tenth)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1 (0.1 = a tenth), got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1 (0.1 = a tenth), got {text!r}")
    return value


_budget = _finite("GiB")
_seconds = _positive(_finite("seconds"))


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_command(
        subparsers,
        "check",
        help="exit 0 if SGLang 0.5.23 would start and meet the requirements, 1 if not, 2 for invalid input",
        doc=__doc__,
        epilog=(
            "forms:\n"
            "  mambasizer check REQUEST.json\n"
            "  mambasizer check - < REQUEST.json\n"
            "  mambasizer check --gpu h200 -- --model-path nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 --tp 4 ...\n"
            "  mambasizer check --preset NAME --gpu h200 -- --tp-size 8 --max-running-requests 64 ...\n"
            "  mambasizer check --gpu mi355x --gpu-memory-mib 294896 --sglang-version 0.5.17 -- --model-path ID ...\n"
            "  mambasizer check --preset NAME --budget-gib X -- --tp-size 8 --max-running-requests 64 ...\n"
            "  mambasizer check --gpu h200 -- --model-path ID --tp 4 -- --model-path ID --tp 4 --max-running-requests 32\n"
            "      (a 1P1D pair: the prefill node's launch line, then the decode node's)\n"
            "  mambasizer check REQUEST.json --gpu h100     (replaces the file's budget)\n"
            "  mambasizer check REQUEST.json --sglang-version 0.5.16 --upgrade-to 0.5.23 [--max-capacity-loss 0.1] [--max-slack-loss 0.5]\n"
            "exit codes: 0 pass, 1 would not start, a requirement is missed or the --upgrade-to release regresses, 2 invalid input"
        ),
    )
    p.add_argument(
        "inputs",
        nargs="*",
        metavar="REQUEST.json | SGLANG_ARG",
        help="a PlanRequest JSON file (`-` for stdin); or the SGLang launch arguments after `--` "
        "(with --model-path ID, or with --preset)",
    )
    p.add_argument(
        "--preset",
        metavar="NAME",
        help="a shipped model preset (see `mambasizer presets`); without it the launch line's --model-path names the model "
        "(a preset name or a shipped checkpoint's HF repo id); with both, they must name one checkpoint",
    )
    p.add_argument(
        "--budget-gib",
        type=_budget,
        metavar="X",
        help="GiB per GPU that SGLang hands to the mamba/KV split after weights and "
        "activations (the request's budget.rest_gib; a launch line needs it or --gpu / --gpu-memory-mib)",
    )
    p.add_argument(
        "--gpu",
        metavar="NAME",
        help="plan from the GPU alone (budget.gpu: a catalog name such as h200, b200, mi300x; GET /v1/gpus lists them "
        "with sources): SGLang's resolution on that part, weights per stage exact, residents estimated",
    )
    p.add_argument(
        "--gpu-memory-mib",
        type=_positive_int,
        metavar="N",
        help="plan from a GPU capacity alone (nvidia-smi memory.total; rocminfo Pool 1 KB / 1024 on ROCm): with --gpu, "
        "that part's rules at this capacity (needed for parts whose capacity is unconfirmed); alone, Hopper's rules",
    )
    p.add_argument(
        "--reserved-gib",
        type=_budget,
        metavar="X",
        help="with --gpu / --gpu-memory-mib: GiB resident before the weights load, replacing the calibrated estimate",
    )
    p.add_argument(
        "--gpu-labels",
        metavar="KEY=VALUE,...|@FILE",
        help="instead of --gpu: the node's GPU labels (GPU Feature Discovery: nvidia.com/gpu.product, nvidia.com/gpu.memory, "
        "nvidia.com/gpu.compute.major/.minor; AMD: amd.com/gpu.product-name), comma-separated or @FILE one per line; "
        "GET /v1/gpus lists each part's labels",
    )
    p.add_argument(
        "--host-available-mib",
        type=_positive_int,
        metavar="N",
        help="with --gpu on an integrated part (gb10, mi300a, strix-halo): the host's MemAvailable in MiB, where SGLang "
        "reads free memory (budget.host_available_mib)",
    )
    p.add_argument(
        "--sglang-version",
        metavar="RELEASE",
        help="the SGLang release whose start-up rules apply and whose parser reads the launch line (0.5.8 ... 0.5.23, "
        "post-releases included; default: the request's sglang_version, else 0.5.23)",
    )
    p.add_argument(
        "--upgrade-to",
        metavar="RELEASE",
        help="also plan the deployment at this SGLang release and fail when it would not start there, or would lose "
        "more than --max-capacity-loss of its capacity or --max-slack-loss of its slack",
    )
    p.add_argument(
        "--max-capacity-loss",
        type=_share,
        default=DEFAULT_MAX_CAPACITY_LOSS,
        metavar="SHARE",
        help=f"with --upgrade-to: the share of running requests or KV tokens the upgrade may lose (default {DEFAULT_MAX_CAPACITY_LOSS:g})",
    )
    p.add_argument(
        "--max-slack-loss",
        type=_share,
        default=DEFAULT_MAX_SLACK_LOSS,
        metavar="SHARE",
        help="with --upgrade-to: the share of the memory left outside the pools (per PP stage; known when the budget "
        f"gives free memory or a GPU) the upgrade may lose (default {DEFAULT_MAX_SLACK_LOSS:g})",
    )
    p.add_argument("--require-max-running-requests", type=_positive_int, metavar="N")
    p.add_argument("--require-max-total-tokens", type=_positive_int, metavar="N")
    p.add_argument("--require-context-length", type=_positive_int, metavar="N")
    p.add_argument(
        "--url",
        metavar="URL",
        help="ask a running mambasizer service (POST URL/v1/plan) instead of solving in-process",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="HTTP timeout for --url (default 30)",
    )
    p.set_defaults(run=run)
    return p


# --------------------------------------------------------------------------- helpers


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def termination_log_path() -> str:
    return os.environ.get(TERMINATION_LOG_ENV) or DEFAULT_TERMINATION_LOG


def write_termination_log(line: str) -> bool:
    """Write the failure line where Kubernetes reads a container's termination message.

    Kubernetes creates the file (writable by the container user even when /dev is not),
    so an existing writable file is written; otherwise the file is created only where its
    directory is writable. Never raises: the stderr line is what matters outside a pod.
    """
    path = termination_log_path()
    try:
        exists = os.path.exists(path)
        if exists:
            if not os.access(path, os.W_OK):
                return False
        elif not os.access(os.path.dirname(os.path.abspath(path)) or ".", os.W_OK):
            return False
        data = (line + "\n").encode("utf-8")
        if len(data) > TERMINATION_MESSAGE_MAX_BYTES:
            data = data[: TERMINATION_MESSAGE_MAX_BYTES - 4] + b"...\n"
            data = data.decode("utf-8", "ignore").encode("utf-8")
        with open(path, "wb") as fh:
            fh.write(data)
        return True
    except OSError:
        return False


def _fail(code: int, line: str) -> CheckFailure:
    return CheckFailure(code, _one_line(line))


def _invalid(detail: str) -> CheckFailure:
    return _fail(EXIT_INVALID, f"{PROG}: invalid input: {detail}")


def _no_answer(detail: str) -> CheckFailure:
    """--url gave no verdict (unreachable, 5xx): not a sizing answer, so exit 2, not 1."""
    return _fail(EXIT_INVALID, f"{PROG}: error: {detail}")


def _validation_line(exc: Any) -> str:
    """First error of a pydantic ValidationError as `field.path: message`."""
    try:
        errors = exc.errors(include_url=False)
    except Exception:  # pragma: no cover - not a pydantic error
        return _one_line(exc)
    if not errors:
        return _one_line(exc)
    first = errors[0]
    loc = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
    msg = first.get("msg", "invalid value")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc or 'request'}: {msg}{more}"


def _input_error_line(exc: BaseException) -> str:
    """`field: message (allowed: ...)`, the line `mambasizer plan` prints for the same input."""
    field = getattr(exc, "field", None)
    message = getattr(exc, "message", None)
    if not message:
        return _one_line(str(exc) or type(exc).__name__)
    text = f"{field}: {message}" if field and field != "request" else str(message)
    allowed = getattr(exc, "allowed", None)
    if allowed:
        text += f" (allowed: {', '.join(str(a) for a in allowed)})"
    return _one_line(text)


def _plan_input_error() -> type[Exception]:
    """The solver's input-error class (imported late: `mambasizer --help` stays fast)."""
    from mambasizer.service.solver.errors import PlanInputError

    return PlanInputError


# --------------------------------------------------------------------------- request


def _read_request(source: str) -> dict:
    """The JSON object in file `source` (stdin for `-`), decoded by the front door's rules
    (the ones `mambasizer plan` and POST /v1/plan use)."""
    from mambasizer.service.requests import decode_json

    label = "stdin" if source == "-" else source
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as fh:
                text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise _invalid(f"cannot read {label}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return decode_json(text, label=label)
    except _plan_input_error() as exc:
        raise _invalid(_input_error_line(exc)) from None


def _is_launch_line(args: argparse.Namespace) -> bool:
    """The launch form: --preset, or SGLang launch arguments after `--` (a word that is a flag)."""
    return args.preset is not None or any(str(w).startswith("--") for w in args.inputs)


def _gpu_of(args: argparse.Namespace) -> Any:
    """budget.gpu from --gpu, or the device --gpu-labels (GFD / AMD node labels) names."""
    gpu, labels = getattr(args, "gpu", None), getattr(args, "gpu_labels", None)
    if labels is None:
        return gpu
    if gpu is not None:
        raise _invalid("give --gpu or --gpu-labels, not both")
    try:
        return gpu_labels.budget_gpu(gpu_labels.parse(_read_labels(labels)))
    except PlanInputError as exc:
        raise _invalid(f"--gpu-labels: {exc.field}: {exc.message}") from None


def _read_labels(value: str) -> str:
    """--gpu-labels as given, or the file `@FILE` names."""
    if not value.startswith("@"):
        return value
    try:
        return Path(value[1:]).read_text()
    except OSError as exc:
        raise _invalid(f"--gpu-labels {value}: {exc.strerror}") from None


def _request_from_args(args: argparse.Namespace) -> dict:
    """The request body the command line gives: a PlanRequest file as written, or the launch
    form made into the body POST /v1/plan takes (service/requests/command_line.py), so the
    front door parses and refuses its flags exactly as the API does."""
    from mambasizer.service.requests import command_line

    try:
        gpu, host = _gpu_of(args), getattr(args, "host_available_mib", None)
        budget = command_line.budget_of(gpu, args.gpu_memory_mib, args.reserved_gib, args.budget_gib, host)
        if _is_launch_line(args):
            return command_line.launch_request(list(args.inputs), budget=budget, preset=args.preset, release=args.sglang_version)
    except command_line.UsageError as exc:
        raise _invalid(str(exc)) from None
    if args.budget_gib is not None:
        raise _invalid("--budget-gib is only used with --preset or a launch line (-- <sglang args>)")
    if len(args.inputs) != 1:
        if not args.inputs:
            raise _invalid(
                "give a PlanRequest file (or `-` for stdin), or a launch line: --gpu NAME (or --budget-gib X) "
                "[--preset NAME] -- <sglang args, with --model-path ID when there is no --preset>"
            )
        raise _invalid(
            f"expected one PlanRequest file, got {len(args.inputs)} arguments "
            "(SGLang launch arguments go after `--`, with --gpu or --budget-gib)"
        )
    request = _read_request(args.inputs[0])
    try:
        gpu_budget = command_line.gpu_budget(gpu, args.gpu_memory_mib, args.reserved_gib, host)
    except command_line.UsageError as exc:
        raise _invalid(str(exc)) from None
    if gpu_budget is not None:
        if _is_pair(request):  # both sides from the GPU alone
            for role in ("prefill", "decode"):
                if isinstance(request.get(role), dict):
                    request[role] = {**request[role], "budget": gpu_budget}
        else:
            request["budget"] = gpu_budget  # the file's model and arguments, planned from the GPU alone
    if args.sglang_version is not None and isinstance(request, dict):
        for side in ([request[r] for r in ("prefill", "decode") if isinstance(request.get(r), dict)] if _is_pair(request) else [request]):
            side["sglang_version"] = args.sglang_version
    return request


def _is_pair(request: Any) -> bool:
    """A disaggregated deployment: {"prefill": PlanRequest, "decode": PlanRequest}."""
    from mambasizer.service.disaggregated import is_pair

    return is_pair(request)


def _plan_pair_in_process(request: dict) -> dict:
    from pydantic import ValidationError

    from mambasizer.service.disaggregated import plan_pair

    try:
        return plan_pair(request)
    except _plan_input_error() as exc:
        raise _invalid(_input_error_line(exc)) from None
    except ValidationError as exc:
        raise _invalid(_validation_line(exc)) from None


def pair_verdict(answer: dict, args: argparse.Namespace) -> str:
    """Both sides must start; the stated requirements are the decode side's (it serves the
    running requests and holds their context); raise CheckFailure with the failing side."""
    lines = {}
    for role in ("prefill", "decode"):
        plan = answer.get(role) or {}
        try:
            lines[role] = verdict(plan, args if role == "decode" else _no_requirements(args))
        except CheckFailure as failure:
            raise _fail(failure.code, failure.line.replace(f"{PROG}: FAIL: ", f"{PROG}: FAIL: {role} side: ", 1)) from None
    pair = answer.get("pair") or {}
    summary = ", ".join(f"{k}={_shown(pair.get(k))}" for k in (
        "decode_concurrency", "prefill_in_flight_requests", "decode_kv_tokens", "prefill_kv_tokens", "binding_side"))
    body = " | ".join(f"{role}: {lines[role].removeprefix(f'{PROG}: OK: ')}" for role in ("prefill", "decode"))
    return _one_line(f"{PROG}: OK: disaggregated pair starts ({summary}); {body}")


def _no_requirements(args: argparse.Namespace) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "require_max_running_requests": None, "require_max_total_tokens": None,
                                 "require_context_length": None})


# --------------------------------------------------------------------------- plan


def _plan_in_process(request: dict) -> dict:
    from pydantic import ValidationError

    from mambasizer.service.planner import plan
    from mambasizer.service.requests import prepare

    PlanInputError = _plan_input_error()
    try:
        # Through the front door, exactly as `mambasizer plan` and POST /v1/plan take it.
        result = plan(prepare(dict(request), allow_trial=False).request)
    except PlanInputError as exc:
        if getattr(exc, "field", None) == "trial":
            raise _invalid("trial: is only run by the HTTP API; drop it, or use --url") from None
        raise _invalid(_input_error_line(exc)) from None
    except ValidationError as exc:
        raise _invalid(_validation_line(exc)) from None
    return result.model_dump(mode="json") if hasattr(result, "model_dump") else dict(result)


def _problem_line(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("title") or ""
        if isinstance(detail, list):  # FastAPI's default 422 shape
            detail = "; ".join(
                f"{'.'.join(str(p) for p in d.get('loc', ()))}: {d.get('msg', '')}" if isinstance(d, dict) else str(d)
                for d in detail[:3]
            )
        field = body.get("field") or body.get("field_path") or body.get("loc")
        if isinstance(field, list):
            field = ".".join(str(p) for p in field)
        if field and str(field) not in str(detail):
            detail = f"{field}: {detail}"
        if detail:
            return _one_line(detail)
    return _one_line(response.text[:300]) or f"HTTP {response.status_code}"


def _plan_over_http(url: str, request: dict, timeout: float) -> dict:
    import httpx

    endpoint = url.rstrip("/")
    if not endpoint.endswith("/v1/plan"):
        endpoint += "/v1/plan"
    try:
        response = httpx.post(endpoint, json=request, timeout=timeout)
    except httpx.HTTPError as exc:
        raise _no_answer(f"cannot reach {endpoint}: {type(exc).__name__}: {exc}") from None
    if 400 <= response.status_code < 500:
        raise _invalid(f"{endpoint} answered {response.status_code}: {_problem_line(response)}")
    if response.status_code != 200:
        raise _no_answer(f"{endpoint} answered {response.status_code}: {_problem_line(response)}")
    try:
        body = response.json()
    except ValueError:
        raise _no_answer(f"{endpoint} answered 200 with a body that is not JSON") from None
    if isinstance(body, dict) and _is_pair(request) and "pair" in body:
        return body
    if not isinstance(body, dict) or "feasible" not in body:
        raise _no_answer(f"{endpoint} answered 200 without a Plan (no `feasible` field)")
    return body


# --------------------------------------------------------------------------- verdict


def _shown(value: Any) -> str:
    """A plan value for the one-line verdict; a missing one reads `-`, never Python's None."""
    return "-" if value is None else str(value)


def _summary(plan: dict) -> str:
    resolved = plan.get("resolved") or {}
    parts = [
        f"max_running_requests={_shown(plan.get('max_running_requests'))}",
        f"max_total_num_tokens={_shown(plan.get('max_total_num_tokens'))}",
        f"max_mamba_cache_size={_shown(plan.get('max_mamba_cache_size'))}",
        f"context_length={_shown(resolved.get('context_length'))}",
    ]
    if plan.get("binding_limit"):
        parts.append(f"binding_limit={plan['binding_limit']}")
    if plan.get("budget_source") == "estimated":
        parts.append(f"budget=estimated (free_gib_after_load={plan.get('free_gib_after_load'):.2f}, set by pp stage {plan.get('min_free_stage')})")
    return ", ".join(parts)


def _model(plan: dict) -> str:
    return str(plan.get("model_name") or "model")


def _release(plan: dict) -> str:
    """The release whose rules the plan applied ('sglang==0.5.17' -> 'SGLang 0.5.17')."""
    return release_label(str(plan.get("reference") or "sglang==0.5.23"))


def verdict(plan: dict, args: argparse.Namespace) -> str:
    """The pass line, or raise CheckFailure with the one failure line."""
    model = _model(plan)
    if not plan.get("feasible"):
        error = plan.get("error") or {}
        message = error.get("message") or "SGLang would not start"
        kind = error.get("kind")
        remedies = [r for r in (error.get("remedies") or []) if r]
        line = f"{PROG}: FAIL: {_release(plan)} would not start {model}: {message}"
        if kind:
            line += f" [{kind}]"
        if remedies:
            line += "; fix: " + " | ".join(remedies)
        raise _fail(EXIT_WOULD_NOT_START, line)

    resolved = plan.get("resolved") or {}
    requirements = (
        ("max_running_requests", plan.get("max_running_requests"), args.require_max_running_requests),
        ("max_total_num_tokens", plan.get("max_total_num_tokens"), args.require_max_total_tokens),
        ("context_length", resolved.get("context_length"), args.require_context_length),
    )
    missed = []
    met = []
    for name, value, required in requirements:
        if required is None:
            continue
        if value is None or value < required:
            missed.append(f"{name} {_shown(value)} < required {required}")
        else:
            met.append(f"{name} {value} >= {required}")
    if missed:
        line = f"{PROG}: FAIL: {model} starts but misses requirements: " + "; ".join(missed)
        if plan.get("binding_limit"):
            line += f" (binding limit: {plan['binding_limit']})"
        raise _fail(EXIT_WOULD_NOT_START, line)
    line = f"{PROG}: OK: {model} starts under {_release(plan)} with {_summary(plan)}"
    if met:
        line += "; requirements met: " + ", ".join(met)
    return _one_line(line)


def warning_lines(plan: dict) -> list[str]:
    """Every warning of the plan (as `POST /v1/plan` answers it), one line each."""
    return [_one_line(f"{PROG}: warning: {str(w).removeprefix('mambasizer: ')}") for w in plan.get("warnings") or []]


def _planned(request: dict, args: argparse.Namespace) -> dict:
    if args.url:
        return _plan_over_http(args.url, request, args.timeout)
    return _plan_pair_in_process(request) if _is_pair(request) else _plan_in_process(request)


def _sides(request: dict) -> list[dict]:
    return [request[r] for r in ("prefill", "decode") if isinstance(request.get(r), dict)] if _is_pair(request) else [request]


def _at_release(request: dict, version: str) -> dict:
    out = json.loads(json.dumps(request))  # a deep copy: the running plan keeps its own
    for side in _sides(out):
        side["sglang_version"] = version
    return out


def upgrade_lines(request: dict, planned: dict, args: argparse.Namespace) -> list[str]:
    """`--upgrade-to`: the deployment planned again at that release; the pass line(s) on stdout,
    or raise CheckFailure with one line per failure (each side of a pair on its own)."""
    from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES
    from mambasizer.service import upgrade

    target = args.upgrade_to
    if target not in SUPPORTED_RELEASES:
        raise _invalid(f"--upgrade-to: {target!r} is not a supported SGLang release; give one of {', '.join(SUPPORTED_RELEASES)}")
    current = str(_sides(request)[0].get("sglang_version") or DEFAULT_RELEASE)
    try:
        moved = _planned(_at_release(request, target), args)
    except CheckFailure as refused:  # the upgrade refuses the model or the launch arguments
        if refused.code != EXIT_INVALID:
            raise
        why = refused.line.removeprefix(f"{PROG}: invalid input: ")
        raise _fail(EXIT_WOULD_NOT_START, f"{PROG}: FAIL: upgrade to SGLang {target}: SGLang {target} would refuse it: {why}") from None
    roles = ("prefill", "decode") if _is_pair(request) else ("",)
    failures, passes = [], []
    for role in roles:
        before, after = (planned.get(role) or {}, moved.get(role) or {}) if role else (planned, moved)
        up = upgrade.summary(before, after, current, target)
        side = f"{role} side: " if role else ""
        failures += [f"{PROG}: FAIL: upgrade to SGLang {target}: {side}{line}"
                     for line in upgrade.failures(up, args.max_capacity_loss, args.max_slack_loss)]
        passes.append(f"{PROG}: OK: upgrade to SGLang {target}: {side}starts with {upgrade.describe(up)}")
    if failures:
        raise CheckFailure(EXIT_WOULD_NOT_START, "\n".join(_one_line(f) for f in failures))
    return [_one_line(p) for p in passes]


def run(args: argparse.Namespace) -> int:
    try:
        request = _request_from_args(args)
        pair = _is_pair(request)
        plan = _planned(request, args)
        if pair:
            line = pair_verdict(plan, args)
            warnings = [w.replace(f"{PROG}: warning: ", f"{PROG}: warning: {role} side: ", 1)
                        for role in ("prefill", "decode") for w in warning_lines(plan.get(role) or {})]
            warnings += [_one_line(f"{PROG}: note: {n}") for n in (plan.get("pair") or {}).get("notes") or []]
        else:
            line = verdict(plan, args)
            warnings = warning_lines(plan)
        if getattr(args, "upgrade_to", None):
            warnings = [*upgrade_lines(request, plan, args), *warnings]
    except CheckFailure as failure:
        print(failure.line, file=sys.stderr)
        write_termination_log(failure.line)
        return failure.code
    except Exception as exc:  # an internal error must still read as one line in the pod
        line = _one_line(f"{PROG}: error: internal error ({type(exc).__name__}: {exc}); please report it")
        print(line, file=sys.stderr)
        write_termination_log(line)
        return EXIT_INVALID
    print(line)
    for warning in warnings:
        print(warning)
    return EXIT_OK


__all__ = ["CheckFailure", "add_parser", "run", "verdict", "warning_lines", "write_termination_log"]


def main(argv: list | None = None) -> int:  # pragma: no cover - convenience for `python -m`
    from mambasizer.service.cli import main as cli_main

    return cli_main(["check", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
