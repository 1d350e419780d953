"""The simulation's engine as its parts see it: the clock, the one event queue, the
environment's random stream and the history being recorded.

The network, the server, the workers and the agents are passive: the engine
(`engine.Simulation`) builds them, hands each this interface and drives them by running the
events they schedule. None of them sees the engine itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from atmostonce.check.history import entries as h
from atmostonce.spec.session import ToolCallStatus

Handler = Callable[[Any, Any], None]
"""What an event runs, called with the event's two arguments."""
Queued = tuple[float, int, Handler, Any, Any]
"""An event on the queue: when it runs, its sequence number (events at one instant run in the
order they were scheduled), its handler and the handler's two arguments."""


class Loop(Protocol):
    """The clock, the event queue, the environment's random stream and the history."""

    now: float
    """The simulated time of the event running."""
    seq: int
    """The sequence number of the last event scheduled, or of the last message sent."""
    queue: list[Queued]
    """The event heap. `at` pushes onto it; the network and the server, whose every message
    and timer is an event, push onto it themselves, numbering each push with the next `seq`
    as `at` does, to save a call."""
    rnd: Callable[[], float]
    """The environment's random stream: network delays, poll and reconcile jitter."""
    record: Callable[[h.Entry], object]
    """Record an entry of the history (the checkers judge it as it comes)."""

    def at(self, when: float, fn: Handler, a: Any = None, b: Any = None) -> None:
        """Run `fn(a, b)` at simulated time `when`."""
        ...

    def published(self, key: str, status: ToolCallStatus) -> None:
        """The server published the record of the call `key`: it reaches the agent's model."""
        ...
