"""Reaching a peer again: the back-off between attempts to reach the server or the ledger, one
log line for each failed attempt, and giving up once the peer stays out of reach too long.
"""

from __future__ import annotations

import asyncio
import logging
import time

from atmostonce.runtime.wire import WrongPeer, reason

log = logging.getLogger("atmostonce.worker")

RETRY_FIRST = 0.05
RETRY_MAX = 0.5


class GaveUp(Exception):
    """A peer stayed out of reach for longer than the process's give-up bound."""


class Backoff:
    """The delays between attempts to reach a peer: doubling from RETRY_FIRST up to RETRY_MAX,
    and how long the peer has been out of reach."""

    def __init__(self) -> None:
        self.delay = RETRY_FIRST
        self.since = time.monotonic()

    def next(self) -> float:
        delay = self.delay
        self.delay = min(RETRY_MAX, self.delay * 2)
        return delay


async def wait_to_retry(who: str, what: str, address: str, error: BaseException,
                        retry: Backoff, give_up_after: float) -> None:
    """One line for a failed attempt to reach `what`, then the back-off delay; GaveUp once it
    has been out of reach for `give_up_after` seconds, WrongPeer when it is not `what`."""
    if isinstance(error, WrongPeer):
        raise error
    why = reason(error)
    out_for = time.monotonic() - retry.since
    if out_for >= give_up_after:
        raise GaveUp(f"cannot reach {what} at {address} for {out_for:.1f} s: {why}")
    delay = min(retry.next(), give_up_after - out_for)
    log.warning("%s: cannot reach %s at %s: %s; trying again in %.2f s (giving up after "
                "%g s)", who, what, address, why, delay, give_up_after)
    await asyncio.sleep(delay)
