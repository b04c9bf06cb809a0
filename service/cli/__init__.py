"""`mambasizer` command line: one module per subcommand, each with `add_parser` and `run`.

Exit codes are shared by every subcommand: 0 ok, 1 SGLang would not start (or a stated
requirement is missed), 2 invalid input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

EXIT_OK = 0
EXIT_WOULD_NOT_START = 1
EXIT_INVALID = 2

# subcommand -> module under service.cli; imported lazily so `plan` never pays for
# FastAPI or torch.
SUBCOMMANDS = {
    "plan": "service.cli.plan_cmd",
    "check": "service.cli.check_cmd",
    "check-log": "service.cli.checklog_cmd",
    "recommend": "service.cli.recommend_cmd",
    "serve": "service.cli.serve_cmd",
    "worker": "service.cli.worker_cmd",
    "presets": "service.cli.presets_cmd",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one readable line, exit 2
        print(f"mambasizer: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INVALID)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mambasizer", description=__doc__.splitlines()[0])
    from service import __version__

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
