"""The command line's shared parts: value types, each turning one argument into a number or
saying, in one line, what it expected; the parser that makes bad arguments bad input; and the
run that turns bad input into one line and exit 2. Both entry points use them: `atmostonce`
and the runtime's `python -m atmostonce.executor.runtime`."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import NoReturn

from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class Parser(argparse.ArgumentParser):
    """argparse, but bad arguments exit 2 with one line, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("atmostonce").strip()
        raise SpecError(f"{command}: {message}" if command else message)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse `argv` and run the chosen command's `func`; bad input (a SpecError) is one line on
    stderr and exit 2, a closed stdout is a clean exit, an interrupt exits 130."""
    try:
        args = parser.parse_args(argv)
        code: int = args.func(args)
        return code
    except SpecError as error:
        print(f"atmostonce: error: {error}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("atmostonce: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


def whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def count(text: str) -> int:
    """A whole number of at least 1."""
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {text!r}")
    return value


def seed(text: str) -> int:
    value = whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a seed >= 0, got {text!r}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive(text: str) -> float:
    """A finite number above 0 (seconds, or a rate)."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A finite number of seconds, 0 included."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value
