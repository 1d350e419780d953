"""Connections between the server and each worker: FIFO per connection, a random delay per
message, so messages of different workers interleave in any order.

A partition cuts a worker's link: messages are held, in order, and delivered when it heals,
unless a side closed the connection first (the server declared the worker lost, or restarted;
the worker's lease ran out), in which case they are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import TYPE_CHECKING, Any

from atmostonce.check import history as h
from atmostonce.spec import protocol as p

if TYPE_CHECKING:
    from atmostonce.sim.workers import Worker

Held = tuple[int, Any, Any]
NETWORK_DELAY = (0.0005, 0.01)
"""Seconds a message takes on the wire, drawn uniformly, before any slow-link fault."""
_LOW = NETWORK_DELAY[0]
_SPAN = NETWORK_DELAY[1] - NETWORK_DELAY[0]
_STARTED = p.Started
_FINISHED = p.Finished


class Conn:
    """One connection of one worker incarnation; `id` is the worker name the executor sees."""

    __slots__ = ("down_free", "held_down", "held_up", "id", "last_receipt", "server_open",
                 "up_free", "worker", "worker_open")

    def __init__(self, conn_id: str, worker: Worker, now: float) -> None:
        self.id = conn_id
        self.worker = worker
        self.server_open = True
        self.worker_open = True
        self.up_free = now
        self.down_free = now
        self.last_receipt = now
        """When the server last received a message on it: the worker's lease runs from it."""
        self.held_up: list[Held] = []
        self.held_down: list[Held] = []

    def drop_held(self) -> None:
        self.held_up.clear()
        self.held_down.clear()


class Network:
    """The simulation's delivery of messages between the server and the workers."""

    now: float
    seq: int
    queue: list[tuple[float, int, Callable[[Any, Any], None], Any, Any]]
    rnd: Callable[[], float]
    record: Callable[[h.Entry], object]
    executor: p.Executor
    carry_out: Callable[[list[p.Command], bool], None]
    at: Callable[..., None]

    def delay(self, conn: Conn) -> float:
        """One message's time on the wire to or from `conn`'s worker."""
        w = conn.worker
        d = _LOW + _SPAN * self.rnd()
        if w.extra_until > self.now:
            d += w.extra
        return d

    def up(self, conn: Conn, cls: Any, args: tuple[Any, ...]) -> None:
        """A worker sends a message to the server."""
        if not conn.worker_open:
            return
        seq = self.seq + 1
        msg = (seq, cls, args)
        w = conn.worker
        if w.cut:
            self.seq = seq
            conn.held_up.append(msg)
            return
        now = self.now
        t = now + _LOW + _SPAN * self.rnd()
        if w.extra_until > now:
            t += w.extra
        if t < conn.up_free:
            t = conn.up_free
        conn.up_free = t
        self.seq = seq + 1
        heappush(self.queue, (t, seq + 1, self._arrive_up, conn, msg))

    def _arrive_up(self, conn: Conn, msg: Any) -> None:
        if not conn.server_open:
            return
        if conn.worker.cut:
            conn.held_up.append(msg)
            return
        now = self.now
        conn.last_receipt = now
        _, cls, args = msg
        event = cls(now, *args)
        if cls is _STARTED:
            self.record(h.StartDelivered(now, conn.id, event.attempt))
        elif cls is _FINISHED:
            self.record(h.ResultDelivered(now, conn.id, event.attempt, event.ok))
        commands = self.executor.handle(event)
        if commands:
            self.carry_out(commands, True)

    def down(self, conn: Conn, cmd: p.Command) -> None:
        """The server sends a command to a worker."""
        if not conn.server_open:
            return
        seq = self.seq + 1
        msg = (seq, cmd, None)
        w = conn.worker
        if w.cut:
            self.seq = seq
            conn.held_down.append(msg)
            return
        now = self.now
        t = now + _LOW + _SPAN * self.rnd()
        if w.extra_until > now:
            t += w.extra
        if t < conn.down_free:
            t = conn.down_free
        conn.down_free = t
        self.seq = seq + 1
        heappush(self.queue, (t, seq + 1, self._arrive_down, conn, msg))

    def _arrive_down(self, conn: Conn, msg: Any) -> None:
        if not conn.server_open or not conn.worker_open:
            return
        if conn.worker.cut:
            conn.held_down.append(msg)
            return
        conn.worker.receive(conn, msg[1])

    def flush(self, conn: Conn) -> None:
        """The link healed: held messages go out in the order they were sent, behind any
        message still on the wire, so the connection stays FIFO."""
        if conn.held_up:
            at = max(self.now, conn.up_free)
            for msg in sorted(conn.held_up, key=lambda m: m[0]):
                self.seq += 1
                heappush(self.queue, (at, self.seq, self._arrive_up, conn, msg))
            conn.held_up.clear()
            conn.up_free = at
        if conn.held_down:
            at = max(self.now, conn.down_free)
            for msg in sorted(conn.held_down, key=lambda m: m[0]):
                self.seq += 1
                heappush(self.queue, (at, self.seq, self._arrive_down, conn, msg))
            conn.held_down.clear()
            conn.down_free = at

    def server_closes(self, conn: Conn) -> None:
        """The server closed `conn`: held messages are dropped; the worker learns of it after a
        network delay, or when its link heals."""
        conn.server_open = False
        conn.drop_held()
        worker = conn.worker
        if not worker.cut:
            self.at(self.now + self.delay(conn), worker.closed, conn)
