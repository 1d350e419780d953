"""The server's side of the wire protocol: the hello that says who is speaking, the workers'
messages and the clients' requests, each turned into an event for `driver`, and the server's
shutdown.

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

    {"id": I, "op": "set_policy", "tool": T,
     "policy": {"effect", "requires_approval", "approval_deadline"} | null,
     "hints": {"read_only", "idempotent", "destructive"} | null}
    {"id": I, "op": "open_session", "session_id": S, "default_effect": E | null,
     "hints_may_lower"?: bool (D-22, default true)}
    {"id": I, "op": "ask", "session_id", "turn_id", "tool_call_id", "tool", "arguments": TEXT,
     "approval_deadline": SECONDS | null}
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

import itertools
import logging
from collections.abc import Callable
from typing import Any

from atmostonce.check.executors.guard import ProtocolBreach
from atmostonce.executor.keys import call_key
from atmostonce.runtime import codec
from atmostonce.runtime.driver import (
    ClientLink,
    Driver,
    ExecutorFailed,
    WorkerLink,
    refused_input,
    send,
)
from atmostonce.runtime.durability import GroupCommit
from atmostonce.runtime.liveness_log import LivenessLog
from atmostonce.runtime.tokens import ServerTokens, matches
from atmostonce.runtime.wire import (
    SERVER,
    WIRE_VERSION,
    LineProtocol,
    Message,
    peer,
    refusal,
    welcome,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import component_problem
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Connected,
    Executor,
    ExecutorConfig,
    Finished,
    Heartbeat,
    OpenSession,
    Poll,
    SetPolicy,
    Started,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot

log = logging.getLogger("atmostonce.server")


class Server(Driver):
    """The driver with its connections: the hellos, the workers' messages, the clients'
    requests (D-5, D-8, D-12)."""

    def __init__(self, executor: Executor, config: ExecutorConfig, commit: GroupCommit,
                 offset: float, on_fatal: Callable[[BaseException], None],
                 tokens: ServerTokens) -> None:
        super().__init__(executor, config, commit, offset, on_fatal)
        self.tokens = tokens
        self.incarnations: dict[str, str] = {}
        """Each worker name this server has welcomed, and the incarnation it came with."""
        self.links: dict[LineProtocol, WorkerLink | ClientLink] = {}
        self._ids = itertools.count(1)
        self.liveness: LivenessLog | None = None
        """Where each hello and heartbeat the executor takes is noted, if anywhere."""
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
        at = self.clock()
        if self.liveness is not None:
            self.liveness.connected(at, name)
        self.feed(Connected(at, name, running))
        answer = welcome(SERVER, n=message.get("n", 0))
        self.commit.then(lambda: send(conn, answer))

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
        at = self.clock()
        attempt = codec.text(message, "attempt")
        if self.liveness is not None:
            self.liveness.heartbeat(at, link.name, attempt)
        self.feed(Heartbeat(at, link.name, attempt))
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
        lowers = codec.optional_flag(message, "hints_may_lower")
        self.feed(OpenSession(self.clock(), session_id, codec.effect(message, "default_effect"),
                              lowers is not False))
        self._when_durable(link, request_id, {})

    def _op_ask(self, link: ClientLink, request_id: object, message: Message) -> None:
        session_id = codec.text(message, "session_id")
        turn_id = codec.text(message, "turn_id")
        call_id = codec.text(message, "tool_call_id")
        key = call_key(session_id, turn_id, call_id)
        self.feed(Ask(self.clock(), session_id, turn_id, call_id,
                      codec.text(message, "tool", empty=False),
                      codec.text(message, "arguments"),
                      codec.deadline(message, "approval_deadline")))
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
            refused_input(breach)
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
