"""`python -m atmostonce.runtime serve|worker|ledger|demo`: the runtime's processes,
started with `sys.executable` by `processes` so they run in any environment.

Exit status 2 with one line for bad input, like the `atmostonce` command. A child started by
`processes` with ATMOSTONCE_PARENT_PID set asks Linux to kill it when its parent goes.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

from atmostonce.arguments import Parser, run
from atmostonce.runtime.commands import register
from atmostonce.runtime.processes import PARENT_ENV

PR_SET_PDEATHSIG = 1


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
    parser = Parser(prog="atmostonce")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    subparsers.required = True
    register(subparsers)
    return run(parser, argv)

if __name__ == "__main__":
    sys.exit(main())
