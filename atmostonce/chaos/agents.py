"""The agents of a chaos run, on the harness's event loop: the model running sessions turn by
turn, the tool owner changing policies and a watcher reading snapshots, with the people
answering approvals (`people`) and the reconcile job (`reconcile`).

Each session asks the calls of a turn, waits until each has a record (from the AgentEvents
stream, or from a snapshot when no event comes), and may ask a tool again after a failed or
unknown record (TC-REC-2, TC-AMO-4). Asks and policy changes never overlap (one lock), so the
order the harness saw is the order the server applied them in: the checkers resolve each
call's policy from that order (TC-SNAP-1). A call whose answer is lost to a server restart is
simply asked again: asks are idempotent by their ids. An outcome_unknown record schedules the
reconcile job for its session; at the end it runs twice more for every session, and a rerun
must send nothing new (TC-RCN-ONCE).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from atmostonce.chaos import workload as wl
from atmostonce.chaos.observations import AskSeen, EventSeen, Observations, SnapshotSeen, now
from atmostonce.chaos.people import People
from atmostonce.chaos.reconcile import ReconcileJob
from atmostonce.check.history import entries as h
from atmostonce.check.history.policies import PolicyBook
from atmostonce.engines.adapter import UNAVAILABLE, SessionAPI
from atmostonce.runtime.reconcile import OutcomeCheck
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import ToolHints, ToolPolicy, choose_deadline
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus

T = TypeVar("T")

WATCHDOG = 5.0
"""Seconds a turn waits for its records before the model reads the snapshot."""
_ASK_AGAIN = (ToolCallStatus.FAILED, ToolCallStatus.OUTCOME_UNKNOWN)


@dataclass
class Call:
    key: str
    session_id: str
    tool: str
    depth: int
    status: ToolCallStatus | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Session:
    session_id: str
    rng: random.Random
    open: bool = True


class ChaosAgents:
    """Every agent of one run; `run()` until `stop()`, then `settle()` and `finish()`."""

    def __init__(self, api: SessionAPI, support: SessionAPI, obs: Observations,
                 config: ExecutorConfig, seed: int, check: OutcomeCheck,
                 sessions: int) -> None:
        self.api = api
        self.support = support
        self.obs = obs
        self.config = config
        self.seed = seed
        self.check = check
        self.concurrency = sessions
        self.lock = asyncio.Lock()
        self.stopping = asyncio.Event()
        self.abandon = asyncio.Event()
        self.policies = PolicyBook()
        self.calls: dict[str, Call] = {}
        self.sessions: dict[str, Session] = {}
        self.numbers = itertools.count(1)
        self.session_numbers = itertools.count(1)
        self.runners: list[asyncio.Task[None]] = []
        self.helpers: set[asyncio.Task[Any]] = set()
        self.people = People(api, obs, config, self.abandon)
        self.registered, self.late = wl.registrations(self._random("registrations"))
        """The tools registered at the start, and the one registered late, if any; the
        others are never registered."""
        self.own_deadlines = _takes(api.ask, "approval_deadline")
        self.floors = _takes(api.open_session, "hints_may_lower")
        """Whether the engine's client lets an ask set its own approval deadline (D-32) and a
        session keep its default as a floor (D-22); an engine without them never meets
        those shapes, and the coverage line says so."""
        self.awaiting: set[str] = set()
        """Calls that wait for approval and nobody answered yet, as the people see them."""
        self.reconciling = ReconcileJob(support, obs, check, seed, self.stopping, self._spawn)

    def _random(self, purpose: str) -> random.Random:
        return random.Random(f"atmostonce-chaos:{self.seed}:{purpose}")

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Register the tools, then run sessions until `stop()`."""
        for tool, (policy, hints) in self.registered.items():
            await self._set_policy(tool, policy, hints)
        self.runners = [asyncio.create_task(self._sessions()) for _ in range(self.concurrency)]
        self._spawn(self._change_policies())
        self._spawn(self._watch())
        for outcome in await asyncio.gather(*self.runners, return_exceptions=True):
            self._failed(outcome)

    def stop(self) -> None:
        """Ask no new turns; the turns going on still wait for their records."""
        self.stopping.set()

    def in_flight(self) -> list[str]:
        return [key for key, call in self.calls.items() if call.status is None]

    async def settle(self, timeout: float) -> bool:
        """Wait until every session and person is done (True), or give up after `timeout`."""
        self.stopping.set()
        deadline = now() + timeout
        while now() < deadline:
            waiting = [t for t in (*self.runners, *self.helpers) if not t.done()]
            if not waiting:
                return True
            await asyncio.wait(waiting, timeout=max(0.0, deadline - now()))
        self.abandon.set()
        return False

    async def finish(self) -> None:
        """Reconcile every session twice (the rerun must send nothing new, TC-RCN-ONCE), then
        read every session's final snapshot."""
        for _ in range(2):
            for session_id in list(self.sessions):
                run = await self.reconciling.run(session_id)
                if run is not None and not run.complete:
                    await self.reconciling.run(session_id)
        for session_id in list(self.sessions):
            snapshot = await self._snapshot(session_id)
            if snapshot is not None:
                self.obs.final[session_id] = snapshot

    async def close(self) -> None:
        await self.api.close()
        await self.support.close()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self.helpers.add(task)
        task.add_done_callback(self._helper_done)

    def _helper_done(self, task: asyncio.Task[Any]) -> None:
        self.helpers.discard(task)
        if not task.cancelled():
            self._failed(task.exception())

    def _failed(self, outcome: object) -> None:
        """Note an agent that stopped on an error no client call allows (an error reply to a
        valid request): a finding about the engine."""
        if isinstance(outcome, Exception) and not isinstance(outcome, UNAVAILABLE):
            self.obs.errors.append(f"{type(outcome).__name__}: {outcome}")

    async def _retry(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        """Call `op` until it answers; a call whose answer never came is asked again."""
        while True:
            self.obs.count(what)
            try:
                return await op()
            except UNAVAILABLE:
                self.obs.unavailable += 1
                if self.abandon.is_set():
                    raise
                await asyncio.sleep(wl.RETRY_PAUSE)

    async def _sleep(self, seconds: float) -> bool:
        """Sleep, or stop early when the run stops; True when the run goes on."""
        try:
            await asyncio.wait_for(self.stopping.wait(), seconds)
        except TimeoutError:
            return True
        return False

    # -- the tool owner ------------------------------------------------------------------------

    async def _set_policy(self, tool: str, policy: ToolPolicy | None,
                          hints: ToolHints | None) -> None:
        async with self.lock:
            self.obs.entries.append(h.PolicySet(now(), tool, policy, hints))
            self.policies.set_policy(tool, policy, hints)
            await self._retry("set_policy", lambda: self.api.set_policy(tool, policy, hints))

    async def _change_policies(self) -> None:
        rng = self._random("policies")
        tools = list(self.registered)
        while await self._sleep(rng.uniform(2.0, 8.0)):
            if self.late is not None:
                tool, (policy, hints) = self.late, wl.INITIAL[self.late]
                tools.append(self.late)
                self.late = None
            else:
                tool, (policy, hints) = wl.policy_change(rng, tools)
            await self._set_policy(tool, policy, hints)

    # -- the model -----------------------------------------------------------------------------

    async def _sessions(self) -> None:
        while not self.stopping.is_set() and not self.abandon.is_set():
            await self._session()

    async def _session(self) -> None:
        number = next(self.session_numbers)
        session_id = f"s{number}"
        rng = self._random(f"session:{number}")
        default, lowers = wl.session_default(rng)
        lowers = lowers or not self.floors
        extra: dict[str, Any] = {} if lowers else {"hints_may_lower": False}
        async with self.lock:
            self.obs.entries.append(h.SessionOpened(now(), session_id, default,
                                                    None if lowers else False))
            self.policies.set_default(session_id, default, lowers)
            await self._retry("open_session", lambda: cast(Any, self.api).open_session(
                session_id, default, **extra))
        session = Session(session_id, rng)
        self.sessions[session_id] = session
        listener = asyncio.create_task(self._listen(session))
        try:
            await self._turns(session, rng)
        finally:
            session.open = False
            listener.cancel()
            for outcome in await asyncio.gather(listener, return_exceptions=True):
                self._failed(outcome)

    async def _turns(self, session: Session, rng: random.Random) -> None:
        turns = rng.randint(2, 5)
        again: list[tuple[str, int]] = []
        turn = 0
        while not self.stopping.is_set() and (turn < turns or again):
            turn += 1
            taken = {tool for tool, _ in again}
            picks = again + [(t, 0) for t in wl.turn_tools(rng) if t not in taken]
            again = []
            calls = [await self._ask(session, f"t{turn}", tool, depth) for tool, depth in picks]
            await self._await_records(session, calls)
            for call in calls:
                if call.status in _ASK_AGAIN and call.depth < wl.MAX_DEPTH and \
                        rng.random() < wl.REASK:
                    again.append((call.tool, call.depth + 1))
            await self._sleep(rng.uniform(0.05, 0.4))

    async def _ask(self, session: Session, turn_id: str, tool: str, depth: int) -> Call:
        number = next(self.numbers)
        call_id = f"c{number}"
        session_id = session.session_id
        key = build_key(session_id, turn_id, call_id)
        arguments = json.dumps(wl.arguments(session.rng, number, self.config), sort_keys=True)
        own = wl.own_deadline(session.rng, self.config) if self.own_deadlines else None
        extra: dict[str, Any] = {} if own is None else {"approval_deadline": own}
        call = Call(key, session_id, tool, depth)
        self.calls[key] = call
        async with self.lock:
            effective = self.policies.now(tool, session_id)
            deadline = choose_deadline(own, self.policies.deadline(tool),
                                       self.config.approval_deadline)
            self.obs.entries.append(h.CallAsked(now(), key, session_id, turn_id, call_id, tool,
                                                arguments, own))
            await self._retry("ask", lambda: cast(Any, self.api).ask(
                session_id, turn_id, call_id, tool, arguments, **extra))
            self.obs.acked.append(AskSeen(key, session_id, now()))
        rng = self._random(f"person:{key}")
        if effective.requires_approval:
            self.awaiting.add(key)
            self._spawn(self.people.person(call.key, rng, deadline, self.awaiting))
        elif rng.random() < 0.03:
            self._spawn(self.people.answer_later(call.key, True, rng.uniform(0.05, 1.0)))
        return call

    async def _await_records(self, session: Session, calls: list[Call]) -> None:
        while not self.abandon.is_set():
            pending = [c for c in calls if c.status is None]
            if not pending:
                return
            waits = [asyncio.ensure_future(c.done.wait()) for c in pending]
            _, late = await asyncio.wait(waits, timeout=WATCHDOG)
            for wait in late:
                wait.cancel()
            if late:
                await self._snapshot(session.session_id)

    def _recorded(self, key: str, status: ToolCallStatus) -> None:
        call = self.calls.get(key)
        if call is None or call.status is not None:
            return
        call.status = status
        self.awaiting.discard(key)
        call.done.set()
        if status is ToolCallStatus.OUTCOME_UNKNOWN:
            self.reconciling.soon(call.session_id)

    async def _listen(self, session: Session) -> None:
        """The session's AgentEvents stream, subscribed again (with past events) after a lost
        connection."""
        for generation in itertools.count(1):
            subscribed = now()
            self.obs.count("subscribe")
            try:
                async for event in self.api.events(session.session_id, past=True):
                    key = build_key(event.session_id, event.turn_id, event.tool_call_id)
                    self.obs.events.append(EventSeen(now(), key, event.status, event.error,
                                                     (session.session_id, generation),
                                                     subscribed))
                    self._recorded(key, event.status)
            except UNAVAILABLE:
                self.obs.unavailable += 1
                await asyncio.sleep(wl.RETRY_PAUSE / 2)

    async def _snapshot(self, session_id: str) -> AgentSnapshot | None:
        while True:
            self.obs.count("snapshot")
            sent = now()
            try:
                snapshot = await self.api.get_agent_snapshot(session_id)
            except UNAVAILABLE:
                self.obs.unavailable += 1
                if self.abandon.is_set():
                    return None
                await asyncio.sleep(wl.RETRY_PAUSE)
                continue
            self.obs.snapshots.append(SnapshotSeen(sent, now(), session_id,
                                                   snapshot.tool_calls,
                                                   h.tool_results(session_id, snapshot)))
            for view in snapshot.tool_calls:
                if view.status.final:
                    self._recorded(build_key(session_id, view.turn_id, view.tool_call_id),
                                   view.status)
            return snapshot

    async def _watch(self) -> None:
        """Read the snapshot of a session still running, now and then, so calls are also seen
        waiting for approval and running."""
        rng = self._random("watcher")
        while await self._sleep(rng.uniform(0.3, 1.0)):
            open_sessions = [s for s in self.sessions.values() if s.open]
            if open_sessions:
                await self._snapshot(rng.choice(open_sessions).session_id)


def _takes(method: Callable[..., object], name: str) -> bool:
    """Whether `method` takes a keyword argument called `name`."""
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
