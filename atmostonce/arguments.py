"""The command line's shared parts: value types, each turning one argument into a number or a
path or saying, in one line, what it expected; comma-separated lists of known names; the parser
that makes bad arguments bad input; and the run that turns bad input into one line and exit 2.
Both entry points use them: `atmostonce` and the runtime's `python -m
atmostonce.runtime`."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
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

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        """A flag's single value written `--flag=--` is judged by the flag's type, where
        Python 3.11's argparse drops the `--` and stores an empty list."""
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            return self._get_value(action, "--")
        return super()._get_values(action, arg_strings)


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


@dataclass(frozen=True)
class CountUpTo:
    """The type of a count that must also be at most `maximum`."""

    maximum: int

    def __call__(self, text: str) -> int:
        value = count(text)
        if value > self.maximum:
            raise argparse.ArgumentTypeError(f"expected at most {self.maximum:,}, got {text!r}")
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


def items(text: str, flag: str, known: Sequence[str]) -> list[str]:
    """The items of a comma-separated list, stripped; SpecError naming `flag` and the `known`
    values for a list that is empty, white space only, or has an empty item (`a,,b`)."""
    choices = ", ".join(known)
    if not text.strip():
        raise SpecError(f"{flag} {text!r} is an empty list (known: {choices})")
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise SpecError(f"{flag} {text!r} has an empty item (known: {choices})")
    return parts


def names(text: str, flag: str, what: str, known: Sequence[str]) -> tuple[str, ...]:
    """A comma-separated list of names out of `known`, in the order given, each once;
    SpecError naming `flag` and the known names for an empty list or item, or an unknown
    name."""
    chosen: list[str] = []
    for name in items(text, flag, known):
        if name not in known:
            raise SpecError(f"{flag}: unknown {what} {name!r} (known: {', '.join(known)})")
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def read_text(path: Path, shown: str, noun: str = "file") -> str:
    """The UTF-8 text of an input file the user named; SpecError, one line naming it as
    `shown`, when it is missing, a directory or unreadable. `noun` says what it should be."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{shown}: no such {noun}") from None
    except IsADirectoryError:
        raise SpecError(f"{shown}: is a directory, not a {noun}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"{shown}: cannot read it: {error}") from None


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a path, got {text!r}")
    return Path(text)


def _writable_directory(directory: Path, path: Path) -> None:
    if not directory.is_dir():
        problem = "does not exist" if not directory.exists() else "is not a directory"
        raise argparse.ArgumentTypeError(f"{path}: the directory {directory} {problem}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: the directory {directory} is not writable")


def output_file(text: str) -> Path:
    """A file a command creates or replaces: its directory must exist and be writable, and the
    path must not be a directory (checked before any work starts, not when the file is
    written)."""
    path = _path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory, not a file")
    _writable_directory(path.parent, path)
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{path} is not writable")
    return path


def output_directory(text: str) -> Path:
    """A directory a command writes into, created with its parents when missing: it, or the
    nearest of its parents that exists, must be a writable directory."""
    path = _path(text)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing != path and not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: {existing} is a file, not a directory")
    if existing == path and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: the directory {existing} is not writable")
    return path
