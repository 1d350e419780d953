"""The reconcile job of a chaos run (`atmostonce.runtime.reconcile`), over the support
connection: an outcome_unknown record schedules it for its session, and it sometimes dies right
after a send, before the reply, and is then just run again later (TC-RCN-ONCE). Every snapshot it
reads and every message it sends is observed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine
from typing import Any

from atmostonce.chaos.observations import Observations, SendSeen, SnapshotSeen, now
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import UNAVAILABLE, SessionAPI
from atmostonce.runtime.reconcile import OutcomeCheck, ReconcileRun, report_unknown_outcomes
from atmostonce.spec.session import AgentSnapshot

RECONCILE_CRASH = 0.2
"""How likely a reconcile run during the faults dies right after a send."""
REPORT_SOURCE = "the effect ledger"

Spawn = Callable[[Coroutine[Any, Any, Any]], None]


class ReconcileCrashed(Exception):
    """The reconcile job died after a send, before its reply."""


class _Observed:
    """The session API as the reconcile job uses it, with every snapshot and send observed; with
    `crash`, the first send goes out and the job dies before its reply."""

    def __init__(self, api: SessionAPI, obs: Observations, crash: bool) -> None:
        self.api = api
        self.obs = obs
        self.crash = crash

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        self.obs.count("snapshot")
        sent = now()
        snapshot = await self.api.get_agent_snapshot(session_id)
        self.obs.snapshots.append(SnapshotSeen(sent, now(), session_id, snapshot.tool_calls,
                                               h.tool_results(session_id, snapshot)))
        return snapshot

    async def send_user_message(self, session_id: str, text: str) -> bool:
        self.obs.count("send_user_message")
        sent = now()
        if self.crash:
            task = asyncio.ensure_future(self.api.send_user_message(session_id, text))
            await asyncio.sleep(0)
            task.cancel()
            self.obs.sends.append(SendSeen(sent, None, session_id, text, None))
            raise ReconcileCrashed("the job died after the send, before its reply")
        try:
            accepted = await self.api.send_user_message(session_id, text)
        except UNAVAILABLE:
            self.obs.sends.append(SendSeen(sent, None, session_id, text, None))
            raise
        self.obs.sends.append(SendSeen(sent, now(), session_id, text, accepted))
        return accepted


class ReconcileJob:
    """The job for any session of the run; `spawn` starts a later run as one of the agents'
    helpers, and none is scheduled once `stopping` is set."""

    def __init__(self, support: SessionAPI, obs: Observations, check: OutcomeCheck, seed: int,
                 stopping: asyncio.Event, spawn: Spawn) -> None:
        self.support = support
        self.obs = obs
        self.check = check
        self.stopping = stopping
        self.spawn = spawn
        self.due: set[str] = set()
        self.locks: dict[str, asyncio.Lock] = {}
        self.rng = random.Random(f"atmostonce-chaos:{seed}:agents")

    def soon(self, session_id: str) -> None:
        """Run the job for the session a while from now, unless a run is due already or
        the run is stopping."""
        if session_id in self.due or self.stopping.is_set():
            return
        self.due.add(session_id)
        self.spawn(self._later(session_id))

    async def _later(self, session_id: str) -> None:
        await asyncio.sleep(self.rng.uniform(0.3, 2.0))
        self.due.discard(session_id)
        run = await self.run(session_id, crash=self.rng.random() < RECONCILE_CRASH)
        if run is None or not run.complete:
            self.soon(session_id)

    async def run(self, session_id: str, crash: bool = False) -> ReconcileRun | None:
        """One run of the job for the session; None when it could not read the history. Runs
        for one session never overlap."""
        lock = self.locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            messenger = _Observed(self.support, self.obs, crash)
            try:
                run = await report_unknown_outcomes(messenger, session_id, self.check,
                                                    REPORT_SOURCE)
            except UNAVAILABLE:
                self.obs.unavailable += 1
                return None
            crashed = not run.complete
            self.obs.entries.append(h.ReconcileRan(now(), session_id,
                                                   len(run.reports) + crashed, crashed))
            return run
