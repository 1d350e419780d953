"""An agent process: `python -m atmostonce.engines.langgraph.worker --variant NAME ...`, the
worker of a LangGraph variant. It runs the variant's graph (`graphs.build`) on the shared SQLite
checkpoints for every thread it owns, and is what the chaos harness kills and pauses; a thread
whose process was killed is resumed by whichever process takes it next, as a team's own job
runner would hand it on (LangGraph has none).

For each thread it owns, one task repeats, reading the thread's state first:

- interrupted (an approval): answer every interrupt whose calls the approval inbox has decided,
  rejecting first, for their deadline, the calls still waiting past it (LangGraph has no
  deadline), and resume with `Command(resume=...)`; otherwise wait for an answer or the
  earliest deadline;
- stopped mid-run (its process was killed): resume with `invoke(None)`. A step whose every
  task had written its result but whose checkpoint was not written yet has tasks but no
  `next` node, so the state's tasks decide, not `next`;
- idle: once the script holds a turn the thread's messages do not (`model.next_turn`), or a
  user message the graph does not hold yet, run the graph with those messages as input.

Threads come from the store: each poll takes at most one thread nobody runs, and a thread's
version says when to look at it again. Readiness: one `atmostonce-ready` line once the ledger
is reached and the checkpoints are set up. SIGTERM ends the process within a second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.types import Command, Interrupt

from atmostonce.engines.guards import journal_guard
from atmostonce.engines.langgraph import graphs
from atmostonce.engines.langgraph.checkpoints import open_saver
from atmostonce.engines.langgraph.kits import KITS
from atmostonce.engines.langgraph.mapping import VARIANTS, Variant
from atmostonce.engines.langgraph.model import QUIET, ScriptedChatModel, asked_ids, next_turn
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.engines.langgraph.tools import RunContext, ToolKit
from atmostonce.engines.notes import Notes
from atmostonce.engines.worker_main import add_process_arguments, worker_main
from atmostonce.runtime.ledger_client import worker_ledger
from atmostonce.runtime.options import add_config_arguments, config_from_args
from atmostonce.runtime.processes import leave
from atmostonce.runtime.tokens import read_token
from atmostonce.runtime.tools import behaviours
from atmostonce.runtime.wire import ready_line
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.protocol import ExecutorConfig

log = logging.getLogger("atmostonce.langgraph.worker")

POLL = 0.05
"""Seconds between two looks at the store for threads to take and threads changed."""
LOOK_AGAIN = 5.0
"""Seconds a thread's task waits at most before it reads its state again unasked: a change in
the store wakes it at once, a deadline or a turn's quiet time ends its wait when due."""
GIVE_UP = 5
"""Runs of a thread that may fail in a row before its task stops (and says so in the log)."""
CONNECT_FOR = 30.0


class Agent:
    """The graph of one variant, run for every thread this process owns."""

    def __init__(self, name: str, variant: Variant, graph: Any, kit: ToolKit,
                 store: ThreadedStore) -> None:
        self.name = name
        self.variant = variant
        self.graph = graph
        self.kit = kit
        self.store = store
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.wakes: dict[str, asyncio.Event] = {}
        self.versions: dict[str, int] = {}

    async def serve(self, stop: asyncio.Event) -> None:
        """Take threads and wake their tasks until `stop`."""
        while not stop.is_set():
            await asyncio.to_thread(self.store.claim, self.name)
            versions = await asyncio.to_thread(self.store.versions, self.name)
            for thread, version in versions.items():
                if thread not in self.tasks:
                    self.wakes[thread] = asyncio.Event()
                    self.tasks[thread] = asyncio.create_task(self.thread(thread))
                    self.tasks[thread].add_done_callback(self._ended)
                if self.versions.get(thread) != version:
                    self.wakes[thread].set()
            self.versions = versions
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: a thread's task stopped: %r", self.name, task.exception())

    async def thread(self, thread: str) -> None:
        """Serve one thread (see the module docstring) until too many steps fail in a row."""
        config: Any = {"configurable": {"thread_id": thread}}
        wake = self.wakes[thread]
        failures = 0
        while failures < GIVE_UP:
            try:
                ran = await self._step(config, thread, wake)
            except Exception as error:  # a run or a read stopped on an error: look again
                failures += 1
                log.warning("%s: thread %s failed (%d in a row): %s: %s", self.name, thread,
                            failures, type(error).__name__, error)
                await asyncio.sleep(0.1 * 2 ** failures)
            else:
                failures = 0 if ran else failures
        log.error("%s: gave up on thread %s after %d failures in a row", self.name, thread,
                  GIVE_UP)

    async def _step(self, config: Any, thread: str, wake: asyncio.Event) -> bool:
        """Read the thread's state and run the graph once, or wait; whether it ran."""
        wake.clear()
        state = await self.graph.aget_state(config)
        given: Any
        if state.interrupts:
            given, wait = await self._answers(thread, state.interrupts)
        elif state.tasks:
            given, wait = None, 0.0
        else:
            given, wait = await self._inputs(thread, state.values.get("messages", []))
        if wait > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), min(wait, LOOK_AGAIN))
            return False
        await self.graph.ainvoke(given, config, durability=self.variant.durability.value)
        return True

    async def _answers(self, thread: str, interrupts: Sequence[Interrupt]
                       ) -> tuple[Command[Any] | None, float]:
        """The resume command for the interrupts the inbox has answers for, or how long to
        wait for one (see the module docstring)."""
        keys = [key for i in interrupts for key in self.kit.approval.keys(i.value)]
        inbox = await asyncio.to_thread(self.kit.inbox.approvals, thread)
        now = time.monotonic()
        due = [k for k in keys if k in inbox and inbox[k].deadline <= now]
        if due and await asyncio.to_thread(self.kit.inbox.expire, due):
            inbox = await asyncio.to_thread(self.kit.inbox.approvals, thread)
        answers = {}
        for i in interrupts:
            value = self.kit.approval.resume(i.value, inbox)
            if value is not None:
                answers[i.id] = value
        if answers:
            return Command(resume=answers), 0.0
        waiting = [inbox[k].deadline for k in keys
                   if k in inbox and inbox[k].state is ApprovalState.WAITING]
        return None, max(0.01, min(waiting, default=now + LOOK_AGAIN) - now)

    async def _inputs(self, thread: str, messages: list[BaseMessage]
                      ) -> tuple[dict[str, list[BaseMessage]] | None, float]:
        """The next run's input messages, or how long to wait for a turn to be complete or a
        user message."""
        held = {m.id for m in messages}
        user: list[BaseMessage] = [
            HumanMessage(text, id=mid)
            for mid, text in await asyncio.to_thread(self.store.user_messages, thread)
            if mid not in held]
        calls = await asyncio.to_thread(self.store.calls, thread)
        asked = asked_ids(messages)
        now = time.monotonic()
        if user or next_turn(calls, asked, now):
            return {"messages": user}, 0.0
        pending = [c.asked for c in calls if c.call_id not in asked]
        if pending:
            return None, max(0.01, max(pending) + QUIET - now)
        return None, LOOK_AGAIN



async def run(args: argparse.Namespace, variant: Variant, config: ExecutorConfig) -> NoReturn:
    name = f"{args.name}-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    store = ThreadedStore(Path(args.store))
    notes = Notes(Path(args.events), name)
    ledger = await worker_ledger(args.ledger, read_token(Path(args.token_file)), name,
                                  CONNECT_FOR)
    saver = await open_saver(Path(args.checkpoints), notes)
    guard = journal_guard(Path(args.guard_journal), config) if args.guard_journal else None
    ctx = RunContext(name, store, ledger, notes, behaviours(), guard=guard)
    kit = KITS[variant.kit](ctx)
    graph = graphs.build(variant, ScriptedChatModel(store=store), kit, store, saver, config)
    agent = Agent(name, variant, graph, kit, store)
    print(ready_line("worker", names=[name], pid=os.getpid()), flush=True)
    await agent.serve(stop)
    leave(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m atmostonce.engines.langgraph.worker")
    parser.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    parser.add_argument("--store", required=True, metavar="PATH")
    parser.add_argument("--checkpoints", required=True, metavar="PATH")
    add_process_arguments(parser)
    parser.add_argument("--guard-journal", metavar="PATH",
                        help="the guard's journal, shared by every agent process (guarded)")
    add_config_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> NoReturn:
    worker_main("langgraph worker", _parser(), _work, argv)


def _work(args: argparse.Namespace) -> Coroutine[Any, Any, object]:
    return run(args, VARIANTS[args.variant], config_from_args(args))


if __name__ == "__main__":
    main()
