"""`python -m atmostonce.runtime serve|worker|ledger|demo`: the runtime's processes,
started with `sys.executable` by `processes` so they run in any environment.

Exit status 2 with one line for bad input, like the `atmostonce` command. A child started by
`processes` with ATMOSTONCE_PARENT_PID set asks Linux to kill it when its parent goes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from atmostonce.arguments import Parser, run
from atmostonce.runtime.commands import register
from atmostonce.runtime.processes import exit_with_parent


def main(argv: Sequence[str] | None = None) -> int:
    exit_with_parent()
    parser = Parser(prog="atmostonce")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    subparsers.required = True
    register(subparsers)
    return run(parser, argv)

if __name__ == "__main__":
    sys.exit(main())
