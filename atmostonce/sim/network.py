"""Connections between the server and each worker: FIFO per connection, a random delay per
message, so messages of different workers interleave in any order.

A partition cuts a worker's link: messages are held, in order, and delivered when it heals,
unless a side closed the connection first (the server declared the worker lost, or restarted;
the worker's lease ran out), in which case they are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any, Protocol

from atmostonce.check.history import entries as h
from atmostonce.sim.loop import Loop
from atmostonce.spec import protocol as p

Held = tuple[int, Any, Any]
NETWORK_DELAY = (0.0005, 0.01)
"""Seconds a message takes on the wire, drawn uniformly, before any slow-link fault."""
_LOW = NETWORK_DELAY[0]
_SPAN = NETWORK_DELAY[1] - NETWORK_DELAY[0]


class Peer(Protocol):
    """The worker end of a connection, as the network sees it."""

    cut: bool
    """Its link is cut: messages either way are held."""
    extra: float
    """Seconds a slow link adds to each message, until `extra_until`."""
    extra_until: float

    def receive(self, conn: Conn, cmd: p.Command) -> None:
        """A command from the server arrived on `conn`."""
        ...

    def closed(self, conn: Conn, _b: object = None) -> None:
        """The worker learns that the server closed `conn`."""
        ...


class Conn:
    """One connection of one worker incarnation; `id` is the worker name the executor sees."""

    __slots__ = ("down_free", "held_down", "held_up", "id", "last_receipt", "server_open",
                 "up_free", "worker", "worker_open")

    def __init__(self, conn_id: str, worker: Peer, now: float) -> None:
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
    """The delivery of messages between the server and the workers, on the engine's clock."""

    __slots__ = ("feed", "loop")

    def __init__(self, loop: Loop, feed: Callable[[p.Event, bool], object]) -> None:
        """`feed`: how the server takes a worker's message, crashable."""
        self.loop = loop
        self.feed = feed

    def delay(self, conn: Conn) -> float:
        """One message's time on the wire to or from `conn`'s worker."""
        loop = self.loop
        w = conn.worker
        d = _LOW + _SPAN * loop.rnd()
        if w.extra_until > loop.now:
            d += w.extra
        return d

    def up(self, conn: Conn, cls: Any, args: tuple[Any, ...]) -> None:
        """A worker sends a message to the server."""
        if not conn.worker_open:
            return
        loop = self.loop
        seq = loop.seq + 1
        msg = (seq, cls, args)
        w = conn.worker
        if w.cut:
            loop.seq = seq
            conn.held_up.append(msg)
            return
        now = loop.now
        t = now + _LOW + _SPAN * loop.rnd()
        if w.extra_until > now:
            t += w.extra
        if t < conn.up_free:
            t = conn.up_free
        conn.up_free = t
        loop.seq = seq + 1
        heappush(loop.queue, (t, seq + 1, self._arrive_up, conn, msg))

    def _arrive_up(self, conn: Conn, msg: Any) -> None:
        if not conn.server_open:
            return
        if conn.worker.cut:
            conn.held_up.append(msg)
            return
        loop = self.loop
        now = loop.now
        conn.last_receipt = now
        _, cls, args = msg
        event = cls(now, *args)
        if cls is p.Heartbeat:
            loop.record(h.HeartbeatDelivered(now, conn.id, event.attempt))
        elif cls is p.Started:
            loop.record(h.StartDelivered(now, conn.id, event.attempt))
        elif cls is p.Finished:
            loop.record(h.ResultDelivered(now, conn.id, event.attempt, event.ok))
        self.feed(event, True)

    def down(self, conn: Conn, cmd: p.Command) -> None:
        """The server sends a command to a worker."""
        if not conn.server_open:
            return
        loop = self.loop
        seq = loop.seq + 1
        msg = (seq, cmd, None)
        w = conn.worker
        if w.cut:
            loop.seq = seq
            conn.held_down.append(msg)
            return
        now = loop.now
        t = now + _LOW + _SPAN * loop.rnd()
        if w.extra_until > now:
            t += w.extra
        if t < conn.down_free:
            t = conn.down_free
        conn.down_free = t
        loop.seq = seq + 1
        heappush(loop.queue, (t, seq + 1, self._arrive_down, conn, msg))

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
        loop = self.loop
        if conn.held_up:
            at = max(loop.now, conn.up_free)
            for msg in sorted(conn.held_up, key=lambda m: m[0]):
                loop.seq += 1
                heappush(loop.queue, (at, loop.seq, self._arrive_up, conn, msg))
            conn.held_up.clear()
            conn.up_free = at
        if conn.held_down:
            at = max(loop.now, conn.down_free)
            for msg in sorted(conn.held_down, key=lambda m: m[0]):
                loop.seq += 1
                heappush(loop.queue, (at, loop.seq, self._arrive_down, conn, msg))
            conn.held_down.clear()
            conn.down_free = at

    def server_closes(self, conn: Conn) -> None:
        """The server closed `conn`: held messages are dropped; the worker learns of it after a
        network delay, or when its link heals."""
        conn.server_open = False
        conn.drop_held()
        worker = conn.worker
        if not worker.cut:
            loop = self.loop
            loop.at(loop.now + self.delay(conn), worker.closed, conn)
