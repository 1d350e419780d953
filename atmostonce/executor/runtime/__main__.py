"""`python -m atmostonce.executor.runtime serve|worker|ledger|demo`: the runtime's processes,
started with `sys.executable` by `processes` so they run in any environment.

Exit status 2 with one line for bad input, like the `atmostonce` command. A child started by
`processes` with ATMOSTONCE_PARENT_PID set asks Linux to kill it when its parent goes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from atmostonce.executor.runtime.commands import register
from atmostonce.executor.runtime.processes import PARENT_ENV
from atmostonce.spec.errors import SpecError

PR_SET_PDEATHSIG = 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("atmostonce").strip()
        raise SpecError(f"{command}: {message}" if command else message)


def _die_with_parent() -> None:
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if str(os.getppid()) != parent:
        os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    _die_with_parent()
    parser = _Parser(prog="atmostonce")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    register(subparsers)
    try:
        args = parser.parse_args(argv)
        code: int = args.func(args)
        return code
    except SpecError as error:
        print(f"atmostonce: error: {error}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("atmostonce: interrupted", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
