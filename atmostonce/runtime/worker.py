"""A worker process: runs tool calls for the server, one at a time per slot, only on a go-ahead.

Each slot is one worker to the executor, named `{name}-{pid}` (`{name}-{pid}-{i}` with several
slots), so two processes never share a name; `slot` holds what one slot does, from its
connection to the delivery of a run's result.

Every connection opens with a hello carrying the deployment's token and this process's
incarnation, and counts only once the server's welcome names it (wire.check_welcome): a wrong
peer (the ledger, something that does not speak this wire, a refusal) is bad input, exit 2. A
peer out of reach gets one log line per attempt, with back-off, until `give_up_after` seconds,
then exit 1. Every wait is bounded, and SIGTERM/SIGINT stop the process within a second in any
state: idle slots at once, a run in hand when it ends or after STOP_GRACE, when the ledger hears
that it was stopped. The run's start is on record at the ledger before the tool body starts.

Self-fencing (D-12): a slot's lease runs from the moment it sent the latest message the server
acknowledged. When a run is going and the lease has run out, the process exits at once with
`os._exit(FENCED_EXIT)`, after telling the ledger its runs stopped; the lease is shorter than the
server's heartbeat timeout, so a cut-off worker never runs on after the server declares it
lost. The ledger also refuses a write sent after the lease deadline, which closes the gap of a
process paused between its check and its write.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from typing import NoReturn

from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.registry import Registry
from atmostonce.runtime.retry import Backoff, GaveUp, wait_to_retry
from atmostonce.runtime.slot import Slot
from atmostonce.runtime.tools import Behaviour, demo_registry
from atmostonce.runtime.wire import WrongPeer, flush_all, ready_line
from atmostonce.spec.errors import SpecError

FENCED_EXIT = 3
"""The exit status of a worker that stopped its runs because its lease ran out (D-12)."""
STOP_GRACE = 0.6
"""Seconds a run in hand gets to end after SIGTERM/SIGINT before the worker stops it."""


class WorkerProcess:
    """The slots of one process, its ledger connection and its lease watchdog."""

    def __init__(self, server: tuple[str, int], ledger: tuple[str, int], name: str,
                 slots: int = 1, behaviours: Mapping[str, Behaviour] | None = None,
                 heartbeat_interval: float | None = None, *, token: str, ledger_token: str,
                 give_up_after: float = 60.0, tools: Registry | None = None) -> None:
        if slots < 1:
            raise SpecError(f"a worker needs at least one slot, got {slots}")
        if not name or any(c.isspace() for c in name):
            raise SpecError(f"worker name {name!r} must be non-empty, without white space")
        if not give_up_after > 0:
            raise SpecError(f"the give-up bound must be a positive number of seconds, got "
                            f"{give_up_after!r}")
        self.server = server
        self.server_address = f"{server[0]}:{server[1]}"
        self.token = token
        self.incarnation = secrets.token_urlsafe(16)
        """Drawn once per process: the server takes this process's worker names only with it."""
        self.tools: Registry = dict(tools) if tools else demo_registry(behaviours)
        """The tools this process runs: a user's registry (`--tools`) or the demo tools."""
        self.heartbeat_interval = heartbeat_interval
        self.give_up_after = give_up_after
        pid = os.getpid()
        names = [f"{name}-{pid}"] if slots == 1 else [f"{name}-{pid}-{i}" for i in range(slots)]
        self.names = names
        self.ledger = AsyncLedger(*ledger, token=ledger_token, workers=tuple(names),
                                  incarnation=self.incarnation)
        self.slots: list[Slot] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.stopping = False

    def fence(self, reason: str) -> NoReturn:
        """Stop every run now by ending the process (D-12); the ledger hears it first."""
        for slot in self.slots:
            run = slot.run
            if run is not None and run.going:
                self.ledger.send({"op": "run_ended", "worker": slot.name,
                                  "attempt": run.attempt, "end": "stopped",
                                  "output": f"stopped by its worker: {reason}"})
        flush_all()
        print(f"atmostonce worker {' '.join(self.names)}: fenced: {reason}", file=sys.stderr,
              flush=True)
        os._exit(FENCED_EXIT)

    def _watch(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            run = slot.run
            if run is not None and run.going and now > slot.lease_deadline():
                self.fence(f"no word from the server for the lease ({slot.lease:g} s) while "
                           f"running {run.attempt}")
        asyncio.get_running_loop().call_later(self._watch_every(), self._watch)

    def _watch_every(self) -> float:
        leases = [s.lease for s in self.slots if s.lease > 0]
        return max(0.005, min(leases) / 20) if leases else 0.02

    async def run(self, stop: asyncio.Event,
                  announce: Callable[[str], None] | None = None) -> int:
        """Work until `stop` is set, then stop within STOP_GRACE plus a little: idle slots at
        once, runs in hand when they end or, at the latest, when the grace is over (the ledger
        hears that they were stopped). 0 after a stop, 1 after giving up on a peer; WrongPeer
        (bad input) when the server or the ledger is not what answers."""
        work = asyncio.create_task(self._work(announce))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([work, stopped], return_when=asyncio.FIRST_COMPLETED)
        if work.done():
            stopped.cancel()
            try:
                return work.result()
            except GaveUp as error:
                print(f"atmostonce worker {' '.join(self.names)}: gave up: {error}",
                      file=sys.stderr, flush=True)
                return 1
            finally:
                self.ledger.close()
        await self._stop(work)
        return 0

    async def _work(self, announce: Callable[[str], None] | None) -> int:
        retry = Backoff()
        while True:
            try:
                await self.ledger.connect()
                break
            except WrongPeer:
                raise
            except SpecError as error:
                await wait_to_retry(' '.join(self.names), "the effect ledger",
                                    self.ledger.address, error, retry, self.give_up_after)
        self.slots = [Slot(self, n) for n in self.names]
        asyncio.get_running_loop().call_later(0.02, self._watch)
        self._tasks = [asyncio.create_task(s.main()) for s in self.slots]
        welcomed = asyncio.create_task(_all_set([s.welcomed for s in self.slots]))
        pending: set[asyncio.Future[None]] = {welcomed, *self._tasks}
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is welcomed:
                    if announce is not None:
                        announce(ready_line("worker", names=self.names, pid=os.getpid()))
                elif (failure := task.exception()) is not None:
                    for other in pending:
                        other.cancel()
                    raise failure
        return 0

    async def _stop(self, work: asyncio.Task[int]) -> None:
        self.stopping = True
        tasks = dict(zip(self.slots, self._tasks, strict=False))
        for slot, task in tasks.items():
            if slot.run is None:
                task.cancel()
        busy = [task for task in tasks.values() if not task.done()]
        if busy:
            await asyncio.wait(busy, timeout=STOP_GRACE)
        notices = []
        for slot in self.slots:
            run = slot.run
            if run is not None and run.going:
                if run.task is not None:
                    run.task.cancel()
                notices.append(self.ledger.request({
                    "op": "run_ended", "worker": slot.name, "attempt": run.attempt,
                    "end": "stopped", "output": "stopped by its worker: the worker was told "
                    "to stop"}))
        if notices:
            await asyncio.wait([asyncio.ensure_future(n) for n in notices], timeout=0.2)
        work.cancel()
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(work, *tasks.values(), return_exceptions=True)
        self.ledger.close()


async def _all_set(events: list[asyncio.Event]) -> None:
    for event in events:
        await event.wait()
