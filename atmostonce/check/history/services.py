"""How the service a tool writes to treats a repeated write: the one rule both effect ledgers,
the simulator's and the real runtime's, apply as ground truth (TC-EFF-*, TC-KEY-3)."""

from __future__ import annotations

import enum


class Service(enum.Enum):
    """How the service a tool writes to treats a repeat (TC-EFF-*, TC-KEY-3)."""

    NONE = "none"
    """A read: it writes nothing."""
    KEYED = "keyed"
    """Drops a write whose idempotency key it already holds."""
    PLAIN = "plain"
    """Applies every write."""
