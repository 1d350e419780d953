"""One call's story in a history: the positions of the entries that concern the call with a
given key (its ask, approval, timers, hand-outs and what happened to those attempts and runs,
its effects, its record, the reports that name it), so a replay can print just them."""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.check.history import entries as h


def positions_of_call(entries: Sequence[h.Entry], key: str) -> list[int]:
    """The positions of `entries` that concern the call `key`, in order."""
    attempts: set[str] = set()
    runs: set[int] = set()
    found: list[int] = []
    for i, entry in enumerate(entries):
        if _concerns(entry, key, attempts, runs):
            found.append(i)
            if isinstance(entry, h.HandedOut):
                attempts.add(entry.attempt)
            elif isinstance(entry, h.RunStarted):
                runs.add(entry.run)
    return found


def _concerns(entry: h.Entry, key: str, attempts: set[str], runs: set[int]) -> bool:
    if getattr(entry, "key", None) == key:
        return True
    if isinstance(entry, (h.TimerStarted, h.TimerFired)):
        return entry.subject == key or entry.subject.startswith(f"{key}#")
    if isinstance(entry, (h.Cancelled, h.StartDelivered, h.HeartbeatDelivered,
                          h.ResultDelivered)):
        return entry.attempt in attempts
    if isinstance(entry, h.RunEnded):
        return entry.run in runs
    if isinstance(entry, h.UserMessageSent):
        return key in entry.text
    return False


def keys_in(entries: Sequence[h.Entry]) -> list[str]:
    """The keys of the calls the history asks, in order."""
    return [entry.key for entry in entries if isinstance(entry, h.CallAsked)]
