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
from functools import partial

from atmostonce.runtime import server
from atmostonce.runtime.__main__ import variant_main
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


def _install(variant: type[GroupCommit]) -> None:
    server.GroupCommit = variant  # type: ignore[attr-defined]


def run(argv: list[str]) -> int:
    """`VARIANT ROLE ARGS...`: the runtime's command with the variant's write pipeline."""
    return variant_main(argv, {name: partial(_install, variant)
                               for name, variant in VARIANTS.items()})


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
