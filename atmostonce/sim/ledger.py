"""The services tools write to: the effect ledger, ground truth of what really took effect.

A read writes nothing; a keyed service drops a write whose idempotency key it already holds
(TC-EFF-IDEM, TC-KEY-3); a plain service applies every write, so a repeat repeats the effect
(TC-EFF-NONIDEM).
"""

from __future__ import annotations

from collections.abc import Mapping

from atmostonce.check.history.services import Service
from atmostonce.sim.members import KEYED, NO_SERVICE, PLAIN


class Ledger:
    """Every write each service received, by idempotency key."""

    __slots__ = ("applied", "dropped", "keys", "runs", "services")

    def __init__(self, services: Mapping[str, Service]) -> None:
        self.services = dict(services)
        self.keys: set[tuple[str, str]] = set()
        self.applied: dict[str, int] = {}
        self.dropped = 0
        self.runs = 0

    def next_run(self) -> int:
        self.runs += 1
        return self.runs

    def writes(self, tool: str) -> bool:
        return self.services.get(tool, PLAIN) is not NO_SERVICE

    def write(self, tool: str, key: str) -> bool:
        """A run of `tool` writes with `key`; whether the service applied it."""
        if self.services.get(tool, PLAIN) is KEYED:
            mark = (tool, key)
            if mark in self.keys:
                self.dropped += 1
                return False
            self.keys.add(mark)
        self.applied[key] = self.applied.get(key, 0) + 1
        return True

    def finding(self, key: str) -> str:
        """What the service says about `key`, as reconcile asks it (TC-RCN-ASK)."""
        count = self.applied.get(key, 0)
        if count == 0:
            return "the service holds no operation with this key, so the call had no effect"
        if count == 1:
            return "the service holds one operation with this key: the call took effect"
        return f"the service holds {count} operations with this key: the call took effect"
