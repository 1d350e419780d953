"""The executor's timers on the event loop's clock.

`StartTimer` of a running timer restarts it; a heartbeat timeout restarts on every message a
worker sends, so a restart only moves the timer's deadline and the loop handle is rescheduled
when it comes due early. A fired timer calls `fire(timer)` once, unless stopped first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

_EARLY = 1e-4
"""asyncio may run a handle a hair before its time; a timer that close is due."""


class LoopTimers:
    def __init__(self, loop: asyncio.AbstractEventLoop, fire: Callable[[str], None]) -> None:
        self.loop = loop
        self.fire = fire
        self._deadline: dict[str, float] = {}
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def start(self, timer: str, delay: float) -> None:
        deadline = self.loop.time() + max(0.0, delay)
        self._deadline[timer] = deadline
        handle = self._handles.get(timer)
        if handle is None or handle.when() > deadline:
            if handle is not None:
                handle.cancel()
            self._handles[timer] = self.loop.call_at(deadline, self._due, timer)

    def stop(self, timer: str) -> None:
        self._deadline.pop(timer, None)
        handle = self._handles.pop(timer, None)
        if handle is not None:
            handle.cancel()

    def stop_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
        self._deadline.clear()

    def __len__(self) -> int:
        return len(self._deadline)

    def _due(self, timer: str) -> None:
        self._handles.pop(timer, None)
        deadline = self._deadline.get(timer)
        if deadline is None:
            return
        if self.loop.time() + _EARLY < deadline:
            self._handles[timer] = self.loop.call_at(deadline, self._due, timer)
            return
        del self._deadline[timer]
        self.fire(timer)
