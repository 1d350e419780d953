"""`python -m atmostonce.runtime serve|worker|ledger|demo`: the runtime's processes,
started with `sys.executable` by `processes` so they run in any environment.

Exit status 2 with one line for bad input, like the `atmostonce` command. A child started by
`processes` with ATMOSTONCE_PARENT_PID set asks Linux to kill it when its parent goes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence

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


def variant_main(argv: Sequence[str], variants: Mapping[str, Callable[[], None]]) -> int:
    """`VARIANT ROLE ARGS...`: put the named broken variant in place, then run the runtime's
    command (the positive controls of the chaos harness start their processes so)."""
    if not argv or argv[0] not in variants:
        print(f"atmostonce: error: expected a variant ({', '.join(variants)}) first",
              file=sys.stderr)
        return 2
    variants[argv[0]]()
    return main(argv[1:])
