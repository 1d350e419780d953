"""Two servers that break durability when the disk fails, the positive controls of the `disk`
nemesis (`atmostonce.engines.reference:swallows_disk_errors` and `:acks_before_commit`).

Each runs the real `atmostonce serve` with one part of its write pipeline changed:

- `swallow`: a commit that fails is logged and passed over as if it had succeeded; the server
  keeps serving and answers what the lost batch held.
- `ack-first`: every outside effect (a reply, a go-ahead, a published record) goes out at once,
  before the entries it depends on are committed.

    python -m atmostonce.engines.reference.disk_mutants swallow serve --journal ...
"""

from __future__ import annotations

import asyncio
import logging
import sys

from atmostonce.runtime import server
from atmostonce.runtime.__main__ import main
from atmostonce.runtime.durability import Action, GroupCommit

log = logging.getLogger("atmostonce.server")


class SwallowsErrors(GroupCommit):
    """Treats a failed commit as a durable one."""

    def _committed(self, done: asyncio.Future[None], count: int) -> None:
        error = done.exception()
        if error is None:
            super()._committed(done, count)
            return
        log.warning("a commit failed and is passed over: %s", error)
        passed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        passed.set_result(None)
        super()._committed(passed, count)


class AcksFirst(GroupCommit):
    """Lets every outside effect out before what it depends on is committed."""

    def then(self, action: Action) -> None:
        action()


VARIANTS: dict[str, type[GroupCommit]] = {"swallow": SwallowsErrors, "ack-first": AcksFirst}


def run(argv: list[str]) -> int:
    """`VARIANT ROLE ARGS...`: the runtime's command with the variant's write pipeline."""
    if not argv or argv[0] not in VARIANTS:
        print(f"atmostonce: error: expected a variant ({', '.join(VARIANTS)}) first",
              file=sys.stderr)
        return 2
    server.GroupCommit = VARIANTS[argv[0]]  # type: ignore[attr-defined]
    return main(argv[1:])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
