"""The runtime server: an executor's sans-IO core driven by asyncio, a durable journal and real
connections. The executor is the reference one unless `serve` gets another factory (any
`atmostonce.spec.protocol.Executor`, such as a mutant under test: `atmostonce serve --executor
MODULE:FACTORY`); the server relies on the protocol alone.

Each message from a worker or a client becomes a protocol event stamped with the loop's
monotonic clock (offset so that times recovered from the journal never run backwards), the core
handles it, and the server carries out the commands in order: `Persist` goes to the journal by
group commit, and every command with an outside effect (`GoAhead`, `Cancel`, `Publish`, `Reply`,
`DropWorker`, and the answers to client requests) waits until every entry persisted before it
is durable (D-5, TC-REC-1); `StartTimer`/`StopTimer` are loop timers. On start the server reads
its journal and calls `recover` (D-8); connections never survive a restart, so attempts that
were out at a worker are handled as lost to it.

The executor runs inside `atmostonce.check.guard`: one that raises, or answers outside the
protocol's types, may have changed half its state, so the server answers the request that led
there with an error saying the executor failed, logs the failure (and its traceback), shows
nothing the failed event led to, and stops with status 1; a restart recovers from what was
durable. A SpecError the executor raises refuses its input and goes back to the sender.

Wire format: newline-delimited JSON objects over TCP, one port for workers and clients. The
first message says who is speaking::

    {"type": "hello", "wire": "atmostonce-wire/2", "role": "worker", "token": T,
     "worker": NAME, "incarnation": SECRET, "running": [ATTEMPT, ...], "n": N}
                            -> {"type": "welcome", "service": "atmostonce-server", "n": N}
    {"type": "hello", "wire": "atmostonce-wire/2", "role": "client", "token": T}
                            -> {"type": "welcome", "service": "atmostonce-server",
                                "approver": BOOL}

A worker presents the deployment's token and the incarnation its process drew at start (a
name already welcomed with another incarnation is refused); a client presents the deployment's
token, or the approver's, which alone may send `answer`. A hello without the right token, or
anything else first, gets {"type": "error", "service": "atmostonce-server", "error": ONE_LINE}
and a closed connection, is logged, and changes nothing.

A worker then sends (`n` counts the worker's messages on this connection)::

    {"type": "poll", "n": N}                       -> {"type": "go_ahead", "n": N, "attempt",
                                                       "key", "tool", "arguments", "lease"}
                                                      or {"type": "no_work", "n": N}
    {"type": "started", "attempt": A, "n": N}      -> {"type": "ack", "n": N}
    {"type": "heartbeat", "attempt": A, "n": N}    -> {"type": "ack", "n": N}
    {"type": "finished", "attempt": A, "ok": BOOL, "output": TEXT}

and may receive {"type": "cancel", "attempt": A} at any time. A poll with no work is held for
at most a quarter of the lease (long polling) and answered as soon as an attempt is queued. The
connection is closed when the executor declares the worker lost (`DropWorker`). An `ack` (and a
go-ahead or no-work, for the poll it answers) tells the worker the server had heard the message
numbered `n`; the worker's lease runs from the moment it sent the latest such message (D-12).

A client sends requests, each with its own `id`, and gets exactly one reply each::

    {"id": I, "op": "set_policy", "tool": T, "policy": {"effect", "requires_approval"} | null,
     "hints": {"read_only", "idempotent", "destructive"} | null}
    {"id": I, "op": "open_session", "session_id": S, "default_effect": E | null}
    {"id": I, "op": "ask", "session_id", "turn_id", "tool_call_id", "tool", "arguments": TEXT}
                                      -> result {"key": K}
    {"id": I, "op": "answer", "key": K, "approve": BOOL}
                                      -> result {"accepted": BOOL, "text": TEXT}
    {"id": I, "op": "user_message", "session_id": S, "text": TEXT}
                                      -> result {"accepted": BOOL, "text": TEXT}
    {"id": I, "op": "snapshot", "session_id": S}     -> result {"snapshot": {...}}
    {"id": I, "op": "subscribe", "session_id": S, "sub": SUB, "past": BOOL}
    {"id": I, "op": "unsubscribe", "sub": SUB}
    {"id": I, "op": "stats"}          -> result {"entries", "commits", "workers",
                                                 "parked_polls", "subscriptions", ...}

    replies: {"type": "reply", "id": I, "ok": true, "result": {...}}
             {"type": "reply", "id": I, "ok": false, "error": ONE_LINE}
    events:  {"type": "event", "sub": SUB, "event": {"kind": "tool_call_finished", ...}}

A reply is sent only once everything the executor persisted before the request is durable, so a
client never sees a record or an acknowledged ask that a crash could take back. A subscription
with `past` first delivers the finished events of the calls already recorded, then every later
one, with no gap and no repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from atmostonce.check import guard
from atmostonce.check.guard import ProtocolBreach
from atmostonce.executor import reference
from atmostonce.executor.keys import call_key
from atmostonce.runtime import codec
from atmostonce.runtime.durability import GroupCommit
from atmostonce.runtime.journal import Entry, open_journal
from atmostonce.runtime.timers import LoopTimers
from atmostonce.runtime.tokens import ServerTokens, check_token, ensure_token, matches
from atmostonce.runtime.wire import (
    SERVER,
    WIRE_VERSION,
    LineProtocol,
    Message,
    bind,
    listen,
    peer,
    ready_line,
    refusal,
    welcome,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import component_problem
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Cancel,
    Command,
    Connected,
    DropWorker,
    Event,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    Heartbeat,
    NoWork,
    OpenSession,
    Persist,
    Poll,
    Publish,
    Reply,
    SetPolicy,
    Started,
    StartTimer,
    StopTimer,
    TimerFired,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot

log = logging.getLogger("atmostonce.server")

MAX_POLL_WAIT = 1.0


class ExecutorFailed(Exception):
    """The executor raised or broke the protocol; the server stops without showing anything
    the failed event led to."""


class WorkerLink:
    """A worker's connection: the poll it last sent, and whether that poll is held."""

    __slots__ = ("conn", "name", "park", "poll_n")

    def __init__(self, conn: LineProtocol, name: str) -> None:
        self.conn = conn
        self.name = name
        self.poll_n = 0
        self.park: asyncio.TimerHandle | None = None

    def answered(self) -> None:
        if self.park is not None:
            self.park.cancel()
            self.park = None


class ClientLink:
    """A client's connection: its id (which makes request ids unique), whether it holds the
    approver token, and its subscriptions."""

    __slots__ = ("approver", "conn", "id", "subs")

    def __init__(self, conn: LineProtocol, link_id: int, approver: bool) -> None:
        self.conn = conn
        self.id = link_id
        self.approver = approver
        self.subs: dict[str, str] = {}
        """Subscription id -> session id."""


def last_time(entries: Sequence[Entry]) -> float:
    """The latest `at` in the journal, so a restarted clock can continue from it."""
    latest = 0.0
    for entry in entries:
        at = entry.get("at")
        if isinstance(at, int | float) and not isinstance(at, bool) and at > latest:
            latest = float(at)
    return latest


class Server:
    """Carries events into the executor and its commands out (D-5, D-8, D-12)."""

    def __init__(self, executor: Executor, config: ExecutorConfig, commit: GroupCommit,
                 offset: float, on_fatal: Callable[[BaseException], None],
                 tokens: ServerTokens) -> None:
        self.executor = executor
        self.tokens = tokens
        self.on_fatal = on_fatal
        self.failure: str | None = None
        self.config = config
        self.commit = commit
        self.offset = offset
        self.loop = asyncio.get_running_loop()
        self.timers = LoopTimers(self.loop, self._timer_fired)
        self.poll_wait = min(MAX_POLL_WAIT, config.lease / 4)
        self.workers: dict[str, WorkerLink] = {}
        self.incarnations: dict[str, str] = {}
        """Each worker name this server has welcomed, and the incarnation it came with."""
        self.links: dict[LineProtocol, WorkerLink | ClientLink] = {}
        self.parked: dict[WorkerLink, None] = {}
        self.subscribers: dict[str, dict[tuple[ClientLink, str], None]] = {}
        self.requests: dict[str, tuple[ClientLink, object]] = {}
        self._ids = itertools.count(1)
        self._work_maybe = False
        self._carry: dict[type[Command], Callable[[Any], None]] = {
            Persist: self._persist,
            StartTimer: self._start_timer,
            StopTimer: self._stop_timer,
            GoAhead: self._go_ahead,
            NoWork: self._no_work,
            Cancel: self._cancel,
            DropWorker: self._drop_worker,
            Publish: self._publish,
            Reply: self._reply,
        }
        self._worker_ops: dict[str, Callable[[WorkerLink, Message], None]] = {
            "poll": self._on_poll,
            "started": self._on_started,
            "heartbeat": self._on_heartbeat,
            "finished": self._on_finished,
        }
        self._client_ops: dict[str, Callable[[ClientLink, object, Message], None]] = {
            "set_policy": self._op_set_policy,
            "open_session": self._op_open_session,
            "ask": self._op_ask,
            "answer": self._op_answer,
            "user_message": self._op_user_message,
            "snapshot": self._op_snapshot,
            "subscribe": self._op_subscribe,
            "unsubscribe": self._op_unsubscribe,
            "stats": self._op_stats,
        }

    def clock(self) -> float:
        return self.loop.time() + self.offset

    # -- the executor ----------------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        """Hand one event to the executor and carry out its commands. A SpecError is bad input
        and goes back to the sender. An executor that raises, or answers with something that is
        not a list of protocol commands, may have changed half its state, so the server stops
        (a restart recovers from the journal) and `ExecutorFailed` tells the sender so; nothing
        the failed event led to is shown to anyone."""
        if self.failure is not None:
            raise ExecutorFailed(f"{self.failure}; the server is stopping")
        try:
            commands = self.executor.handle(event)
        except ProtocolBreach as breach:
            _refused_input(breach)
            self._fail(f"the executor failed: {breach}", breach.__cause__)
        try:
            self.carry_out(commands)
        except Exception as error:
            self._fail(f"the executor's commands for {type(event).__name__} cannot be carried "
                       f"out: {type(error).__name__}: {error}", error)
        if self._work_maybe:
            self._repoll()

    def _fail(self, line: str, error: BaseException | None = None) -> NoReturn:
        """Stop the server for a failure of the executor: logged (with the traceback of the
        exception behind it, if any), reported to whoever sent the event."""
        log.error("%s", line, exc_info=error)
        self.failure = line
        self.on_fatal(ExecutorFailed(line))
        raise ExecutorFailed(f"{line}; the server is stopping")

    def carry_out(self, commands: Sequence[Command]) -> None:
        carry = self._carry
        for command in commands:
            action = carry.get(type(command))
            if action is None:
                raise TypeError(f"{command!r:.200} is not a protocol command")
            action(command)

    def _persist(self, command: Persist) -> None:
        self.commit.persist(command.entry)

    def _start_timer(self, command: StartTimer) -> None:
        if command.kind is TimerKind.QUEUE_TIMEOUT:
            self._work_maybe = True
        self.timers.start(command.timer, command.delay)

    def _stop_timer(self, command: StopTimer) -> None:
        self.timers.stop(command.timer)

    def _timer_fired(self, timer: str) -> None:
        with contextlib.suppress(ExecutorFailed):
            self.feed(TimerFired(self.clock(), timer))

    def _go_ahead(self, command: GoAhead) -> None:
        link = self.workers.get(command.worker)
        if link is None:
            return
        self._unpark(link)
        message = {"type": "go_ahead", "n": link.poll_n, "attempt": command.attempt,
                   "key": command.key, "tool": command.tool, "arguments": command.arguments,
                   "lease": command.lease}
        self.commit.then(lambda: _send(link.conn, message))

    def _no_work(self, command: NoWork) -> None:
        link = self.workers.get(command.worker)
        if link is None:
            return
        if self.poll_wait <= 0:
            link.conn.send({"type": "no_work", "n": link.poll_n})
            return
        self.parked[link] = None
        if link.park is None:
            link.park = self.loop.call_later(self.poll_wait, self._park_over, link)

    def _unpark(self, link: WorkerLink) -> None:
        """The worker's poll is answered, or the worker is gone: its poll is held no more."""
        link.answered()
        self.parked.pop(link, None)

    def _park_over(self, link: WorkerLink) -> None:
        link.park = None
        if self.parked.pop(link, False) is None:
            link.conn.send({"type": "no_work", "n": link.poll_n})

    def _repoll(self) -> None:
        """Attempts were queued: hand them to the workers whose polls are held, oldest first."""
        while self.parked:
            link = next(iter(self.parked))
            del self.parked[link]
            self._work_maybe = False
            try:
                self.feed(Poll(self.clock(), link.name))
            except ExecutorFailed:
                break
            if link in self.parked:
                break
        self._work_maybe = False

    def _cancel(self, command: Cancel) -> None:
        link = self.workers.get(command.worker)
        if link is None:
            return
        message = {"type": "cancel", "attempt": command.attempt}
        self.commit.then(lambda: _send(link.conn, message))

    def _drop_worker(self, command: DropWorker) -> None:
        log.info("worker %s declared lost", command.worker)
        link = self.workers.pop(command.worker, None)
        if link is None:
            return
        self._unpark(link)
        self.commit.then(lambda: link.conn.close("declared lost"))

    def _publish(self, command: Publish) -> None:
        event = codec.finished_json(command.event)
        session_id = command.event.session_id
        self.commit.then(lambda: self._fan_out(session_id, event))

    def _fan_out(self, session_id: str, event: dict[str, Any]) -> None:
        for link, sub in self.subscribers.get(session_id, {}):
            link.conn.send({"type": "event", "sub": sub, "event": event})

    def _reply(self, command: Reply) -> None:
        waiting = self.requests.pop(command.request, None)
        if waiting is None:
            return
        link, request_id = waiting
        result = {"accepted": command.ok, "text": command.text}
        self.commit.then(lambda: self._send_result(link, request_id, result))

    # -- connections -----------------------------------------------------------------------------

    def connection(self) -> LineProtocol:
        return LineProtocol(self._on_message, self._on_close)

    def _on_message(self, conn: LineProtocol, message: Message) -> None:
        link = self.links.get(conn)
        try:
            if isinstance(link, WorkerLink):
                if self.workers.get(link.name) is link:
                    handler = self._worker_ops.get(message.get("type", ""))
                    if handler is not None:
                        handler(link, message)
            elif isinstance(link, ClientLink):
                self._on_request(link, message)
            else:
                self._on_hello(conn, message)
        except (SpecError, ExecutorFailed) as error:
            if isinstance(link, ClientLink):
                self._send_error(link, message.get("id"), str(error))
            else:
                conn.part(refusal(SERVER, str(error)), str(error))

    def _on_hello(self, conn: LineProtocol, message: Message) -> None:
        """The first message of a connection: a hello in this wire version with a token that
        gives its role. Anything else is refused with a one-line reason, logged, and changes
        nothing."""
        if message.get("type") != "hello" or message.get("wire") != WIRE_VERSION:
            self._refuse(conn, f"expected a hello speaking {WIRE_VERSION}, got "
                         f"{str(message)[:200]}")
            return
        role = message.get("role")
        token = message.get("token")
        if role == "client":
            approver = matches(token, self.tokens.approver)
            if not approver and not matches(token, self.tokens.deployment):
                self._refuse(conn, "a client hello without the right token")
                return
            self.links[conn] = ClientLink(conn, next(self._ids), approver)
            conn.send(welcome(SERVER, approver=approver))
        elif role == "worker":
            if not matches(token, self.tokens.deployment):
                self._refuse(conn, "a worker hello without the right token")
                return
            self._on_worker_hello(conn, message)
        else:
            self._refuse(conn, f"hello role must be 'worker' or 'client', got {role!r:.100}")

    def _refuse(self, conn: LineProtocol, reason: str) -> None:
        log.warning("refused a connection from %s: %s", peer(conn), reason)
        conn.part(refusal(SERVER, f"refused: {reason}"), reason)

    def _on_worker_hello(self, conn: LineProtocol, message: Message) -> None:
        """A worker connects, or connects again: the same name must come with the same
        incarnation (a secret each worker process draws at its start), so no other process
        can take over a worker's name and, with it, its attempts."""
        name = codec.text(message, "worker", empty=False)
        running = codec.texts(message, "running")
        incarnation = codec.text(message, "incarnation", empty=False)
        known = self.incarnations.setdefault(name, incarnation)
        if not matches(incarnation, known):
            self._refuse(conn, f"worker name {name[:100]!r} belongs to another worker process")
            return
        old = self.workers.get(name)
        if old is not None:
            self._unpark(old)
            old.conn.close("the worker connected again")
        link = WorkerLink(conn, name)
        self.links[conn] = link
        self.workers[name] = link
        self.feed(Connected(self.clock(), name, running))
        answer = welcome(SERVER, n=message.get("n", 0))
        self.commit.then(lambda: _send(conn, answer))

    def _on_close(self, conn: LineProtocol) -> None:
        link = self.links.pop(conn, None)
        if isinstance(link, WorkerLink):
            self._unpark(link)
            if self.workers.get(link.name) is link:
                del self.workers[link.name]
        elif isinstance(link, ClientLink):
            for sub, session_id in link.subs.items():
                self.subscribers.get(session_id, {}).pop((link, sub), None)
            link.subs.clear()

    # -- worker messages -------------------------------------------------------------------------

    def _on_poll(self, link: WorkerLink, message: Message) -> None:
        self._unpark(link)
        link.poll_n = message.get("n", 0)
        self.feed(Poll(self.clock(), link.name))

    def _on_started(self, link: WorkerLink, message: Message) -> None:
        self.feed(Started(self.clock(), link.name, codec.text(message, "attempt")))
        link.conn.send({"type": "ack", "n": message.get("n", 0)})

    def _on_heartbeat(self, link: WorkerLink, message: Message) -> None:
        self.feed(Heartbeat(self.clock(), link.name, codec.text(message, "attempt")))
        link.conn.send({"type": "ack", "n": message.get("n", 0)})

    def _on_finished(self, link: WorkerLink, message: Message) -> None:
        self.feed(Finished(self.clock(), link.name, codec.text(message, "attempt"),
                           codec.flag(message, "ok"), codec.text(message, "output")))

    # -- client requests -------------------------------------------------------------------------

    def _on_request(self, link: ClientLink, message: Message) -> None:
        op = message.get("op")
        handler = self._client_ops.get(op) if isinstance(op, str) else None
        if handler is None:
            raise SpecError(f"unknown op {op!r} (known: {', '.join(self._client_ops)})")
        handler(link, message.get("id"), message)

    def _send_result(self, link: ClientLink, request_id: object, result: dict[str, Any]) -> None:
        link.conn.send({"type": "reply", "id": request_id, "ok": True, "result": result})

    def _send_error(self, link: ClientLink, request_id: object, error: str) -> None:
        link.conn.send({"type": "reply", "id": request_id, "ok": False, "error": error})

    def _when_durable(self, link: ClientLink, request_id: object,
                      result: dict[str, Any]) -> None:
        self.commit.then(lambda: self._send_result(link, request_id, result))

    def _op_set_policy(self, link: ClientLink, request_id: object, message: Message) -> None:
        event = SetPolicy(self.clock(), codec.text(message, "tool", empty=False),
                          codec.policy_of(message.get("policy")),
                          codec.hints_of(message.get("hints")))
        self.feed(event)
        self._when_durable(link, request_id, {})

    def _op_open_session(self, link: ClientLink, request_id: object, message: Message) -> None:
        session_id = codec.text(message, "session_id")
        problem = component_problem(session_id)
        if problem is not None:
            raise SpecError(f"session id {session_id!r} {problem}; it is the first part of "
                            "every idempotency key")
        self.feed(OpenSession(self.clock(), session_id, codec.effect(message,
                                                                      "default_effect")))
        self._when_durable(link, request_id, {})

    def _op_ask(self, link: ClientLink, request_id: object, message: Message) -> None:
        session_id = codec.text(message, "session_id")
        turn_id = codec.text(message, "turn_id")
        call_id = codec.text(message, "tool_call_id")
        key = call_key(session_id, turn_id, call_id)
        self.feed(Ask(self.clock(), session_id, turn_id, call_id,
                      codec.text(message, "tool", empty=False),
                      codec.text(message, "arguments")))
        self._when_durable(link, request_id, {"key": key})

    def _waiting(self, link: ClientLink, request_id: object) -> str:
        request = f"{link.id}:{request_id}"
        if request in self.requests:
            raise SpecError(f"request id {request_id!r} is already waiting for its reply")
        self.requests[request] = (link, request_id)
        return request

    def _op_answer(self, link: ClientLink, request_id: object, message: Message) -> None:
        if not link.approver:
            log.warning("refused an answer from client %s at %s: no approver token", link.id,
                        peer(link.conn))
            raise SpecError("approving or rejecting a call needs the approver token; this "
                            "connection holds the deployment token")
        key = codec.text(message, "key")
        approve = codec.flag(message, "approve")
        self.feed(Answer(self.clock(), self._waiting(link, request_id), key, approve))

    def _op_user_message(self, link: ClientLink, request_id: object, message: Message) -> None:
        session_id = codec.text(message, "session_id")
        text = codec.text(message, "text")
        self.feed(UserMessage(self.clock(), self._waiting(link, request_id), session_id, text))

    def _snapshot(self, session_id: str) -> tuple[AgentSnapshot, dict[str, Any]]:
        """The executor's snapshot of a session and its JSON; one the executor cannot give, or
        gives in the wrong shape, is its failure."""
        try:
            snapshot = self.executor.snapshot(session_id)
        except ProtocolBreach as breach:
            _refused_input(breach)
            self._fail(f"the executor failed: {breach}", breach.__cause__)
        return snapshot, codec.snapshot_json(snapshot)

    def _op_snapshot(self, link: ClientLink, request_id: object, message: Message) -> None:
        _, encoded = self._snapshot(codec.text(message, "session_id"))
        self._when_durable(link, request_id, {"snapshot": encoded})

    def _op_subscribe(self, link: ClientLink, request_id: object, message: Message) -> None:
        session_id = codec.text(message, "session_id")
        sub = codec.text(message, "sub", empty=False)
        if sub in link.subs:
            raise SpecError(f"subscription {sub!r} already exists on this connection")
        past = codec.flag(message, "past", False)
        replay = codec.recorded_events(self._snapshot(session_id)[0]) if past else []

        def start() -> None:
            if link.conn.closed:
                return
            self._send_result(link, request_id, {})
            for event in replay:
                link.conn.send({"type": "event", "sub": sub,
                                "event": codec.finished_json(event)})
            link.subs[sub] = session_id
            self.subscribers.setdefault(session_id, {})[(link, sub)] = None

        self.commit.then(start)

    def _op_unsubscribe(self, link: ClientLink, request_id: object, message: Message) -> None:
        sub = codec.text(message, "sub")
        session_id = link.subs.pop(sub, None)
        if session_id is not None:
            self.subscribers.get(session_id, {}).pop((link, sub), None)
        self._send_result(link, request_id, {})

    def _op_stats(self, link: ClientLink, request_id: object, message: Message) -> None:
        self._send_result(link, request_id, {
            "entries": self.commit.durable, "commits": self.commit.commits,
            "committed_entries": self.commit.committed_entries,
            "workers": sorted(self.workers), "timers": len(self.timers),
            "parked_polls": len(self.parked),
            "subscriptions": sum(len(subs) for subs in self.subscribers.values())})

    # -- shutdown --------------------------------------------------------------------------------

    async def close(self) -> None:
        """Make every persisted entry durable, then close every connection."""
        await self.commit.drain()
        self.timers.stop_all()
        for link in list(self.links.values()):
            link.conn.close("the server is stopping")
        for link in list(self.parked):
            link.answered()
        self.parked.clear()


async def serve(journal: Path, host: str, port: int, config: ExecutorConfig,
                stop: asyncio.Event, announce: Callable[[str], None] | None = None,
                factory: ExecutorFactory = reference,
                tokens: tuple[Path, Path] | None = None) -> int:
    """Take the port, recover from the journal, and serve until `stop` is set, running the
    executor `factory` builds; 0 on a clean stop, 1 when the journal could not be written or
    the executor failed (logged with its traceback). SpecError for a bad journal, bad options
    or a port that cannot be had, which leaves the journal as it was (or absent). `tokens`
    names the deployment's and the approver's token files (default: beside the journal, each
    made when missing)."""
    loop = asyncio.get_running_loop()
    executor = guard.build(factory, config, json_entries=True)
    deployment_file, approver_file = tokens or token_files(journal)
    sock = bind(host, port)
    try:
        check_token(deployment_file)
        check_token(approver_file)
    except BaseException:
        sock.close()
        raise

    def recover(entries: list[Entry]) -> tuple[float, int, list[Command]]:
        offset = max(0.0, last_time(entries) - loop.time())
        try:
            commands = executor.recover(entries, loop.time() + offset)
        except ProtocolBreach as breach:
            _refused_input(breach)
            raise ExecutorFailed(f"the executor failed: {breach}") from breach.__cause__
        return offset, len(entries), commands

    try:
        journal_file, (offset, recovered, commands) = open_journal(journal, recover)
    except ExecutorFailed as error:
        sock.close()
        log.error("stopping: %s", error, exc_info=error.__cause__)
        return 1
    except BaseException:
        sock.close()
        raise
    try:
        accepted = ServerTokens(ensure_token(deployment_file), ensure_token(approver_file))
    except BaseException:
        sock.close()
        journal_file.close()
        raise
    failed: list[BaseException] = []

    def fatal(error: BaseException) -> None:
        log.error("stopping: %s", error)
        failed.append(error)
        stop.set()

    commit = GroupCommit(journal_file, fatal)
    server = Server(executor, config, commit, offset, fatal, accepted)
    try:
        server.carry_out(commands)
    except Exception as error:
        log.error("stopping: the executor's commands after recovery cannot be carried out: "
                  "%s: %s", type(error).__name__, error, exc_info=error)
        failed.append(error)
        stop.set()
    await commit.drain()
    listener, bound_host, bound_port = await listen(server.connection, sock)
    log.info("listening on %s:%s, journal %s (%d entries recovered)", bound_host, bound_port,
             journal, recovered)
    if announce is not None and not failed:
        announce(ready_line("server", host=bound_host, port=bound_port, journal=str(journal),
                            pid=os.getpid(), recovered=recovered,
                            token_file=str(deployment_file),
                            approver_token_file=str(approver_file)))
    try:
        await stop.wait()
    finally:
        listener.close()
        await server.close()
        await listener.wait_closed()
        commit.close()
    return 1 if failed else 0


def token_files(journal: Path) -> tuple[Path, Path]:
    """Where a server on `journal` keeps its token files unless told otherwise: beside it."""
    return (journal.with_name(journal.name + ".token"),
            journal.with_name(journal.name + ".approver-token"))


def _refused_input(breach: ProtocolBreach) -> None:
    """An executor that raises a SpecError refuses its input as bad (a malformed request, a
    journal it cannot recover from): that goes back to the sender, not a failure."""
    if isinstance(breach.__cause__, SpecError):
        raise breach.__cause__


def _send(conn: LineProtocol, message: Message) -> None:
    conn.send(message)

