"""What the `mambasizer` subcommands share: the parser frame, the one-line error, FILE or `-`.

Standard library only: every subcommand imports it while `mambasizer --help` is built.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from mambasizer.service.cli import EXIT_INVALID

T = TypeVar("T")


def add_command(subparsers: Any, name: str, *, help: str, doc: str, epilog: str | None = None) -> argparse.ArgumentParser:
    """The subcommand's parser: `--help` shows the first paragraph of its module docstring `doc`
    as written (line breaks kept), then `epilog`."""
    return subparsers.add_parser(
        name,
        help=help,
        description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
    )


def whole_number(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse `type=`: an integer of at least `minimum`; the error says `what` it expects."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def port_number(text: str) -> int:
    """argparse type for --port (serve and worker)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {value}")
    return value


def setting_type(parse: Callable[[str, str], T], flag: str) -> Callable[[str], T]:
    """An argparse `type=` for --FLAG from a settings parser `parse(text, name)`, whose
    ValueError (naming the flag) becomes argparse's one-line usage error."""

    def convert(text: str) -> T:
        try:
            return parse(text, flag)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def add_listen_args(p: argparse.ArgumentParser, *, default_port: int, port_help: str) -> None:
    """--host / --port for the two servers (serve and worker)."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 in a container)")
    p.add_argument("--port", type=port_number, default=default_port, help=port_help)


def add_log_level(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"], help="default info")


def error(line: str) -> int:
    """Print `mambasizer: error: <line>` on stderr, white space folded to one line; the exit code."""
    print(f"mambasizer: error: {' '.join(line.split())}", file=sys.stderr)
    return EXIT_INVALID


def source_label(source: str) -> str:
    """How an input named on the command line is named in errors: `stdin` for `-`."""
    return "stdin" if source == "-" else source


def read_source(source: str, limit: int | None = None) -> bytes:
    """The bytes of file `source`, or of stdin for `-` (OSError when it cannot be read).

    With `limit`, at most limit + 1 bytes: enough to tell an input that is too large
    without reading it all."""
    size = -1 if limit is None else limit + 1
    if source == "-":
        return sys.stdin.buffer.read(size)
    with open(source, "rb") as fh:
        return fh.read(size)


class UnreadableInput(Exception):
    """An input named on the command line that cannot be read; str() is the line to print."""


def read_json_request(source: str) -> dict:
    """The JSON object in file `source` (stdin for `-`), decoded by the front door's rules (the API's). Raises
    UnreadableInput when it cannot be read, the solver's PlanInputError when it is not a JSON
    object."""
    from mambasizer.service import requests as front_door

    label = source_label(source)
    try:
        data = read_source(source)
    except OSError as exc:
        raise UnreadableInput(f"{label}: cannot read: {exc.strerror or exc}") from None
    return front_door.decode_json(data, label=label)
