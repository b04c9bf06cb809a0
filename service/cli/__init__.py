"""`mambasizer` command line: one module per subcommand, each with `add_parser` and `run`.

Exit codes are shared by every subcommand: 0 ok, 1 SGLang would not start (or a stated
requirement is missed), 2 invalid input.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

EXIT_OK = 0
EXIT_WOULD_NOT_START = 1
EXIT_INVALID = 2
# A reader that closed the pipe early (`mambasizer plan ... | head`): the shell's code for
# SIGPIPE (128 + 13), never 1, which means "SGLang would not start".
EXIT_BROKEN_PIPE = 141

DESCRIPTION = (
    "Size SGLang 0.5.23's mamba state pool and KV cache for a hybrid LLM before it boots: "
    "plan a deployment, check it in a pipeline, compare a real start-up log, search the "
    "launch flags, or serve the same answers over HTTP."
)
EPILOG = (
    "examples:\n"
    "  mambasizer plan examples/qwen3-next-h200-tp4-gpu.json\n"
    "  mambasizer check --preset qwen3-next-80b-a3b-instruct --gpu h200 -- --tp-size 4\n"
    "  mambasizer check-log server.log\n"
    "  mambasizer serve\n"
    "exit codes: 0 ok, 1 SGLang would not start (or a requirement is missed, or a log differs), 2 invalid input"
)

# subcommand -> the module that adds and runs it; imported lazily so `plan` never pays for
# FastAPI or torch. `serve` and `worker` start HTTP servers with the API's server plumbing
# (read timeouts, the timed h11 protocol, the app factory), so their modules live in
# service/api/ and are named here by string: nothing outside service/api/ imports it (the
# layering tests/structure/test_api_imports.py holds), and an install without the API
# simply has no `serve` (build_parser skips a module that is not there). A string in this
# table rather than an entry point: one table, one lazy import, no packaging metadata to
# keep in step.
SUBCOMMANDS = {
    "plan": "mambasizer.service.cli.plan_cmd",
    "check": "mambasizer.service.cli.check_cmd",
    "check-log": "mambasizer.service.cli.checklog_cmd",
    "recommend": "mambasizer.service.cli.recommend_cmd",
    "serve": "mambasizer.service.api.serve_cmd",
    "worker": "mambasizer.service.api.worker_cmd",
    "presets": "mambasizer.service.cli.presets_cmd",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one readable line, exit 2
        print(f"mambasizer: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INVALID)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mambasizer", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from mambasizer.service import __version__

    parser.add_argument("--version", action="version", version=f"mambasizer {__version__} (reference sglang==0.5.23)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS.values():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue  # subcommand not built into this install
            raise
        mod.add_parser(sub)
    return parser


def _quiet_broken_pipe() -> int:
    """stdout's reader went away: point stdout at /dev/null so the interpreter's final
    flush cannot raise again (Python's documented recipe), and exit without a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (captured in tests)
        pass
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here when the output fit in the buffer
    except BrokenPipeError:
        return _quiet_broken_pipe()
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
