"""How the explorer remembers the states it has seen: `exact` keeps every canonical state, so
a state is never mistaken for another; `fingerprint` keeps a 64-bit hash of each and drops the
state once expanded, about a third of the memory, at a small, printed chance of a missed state
(as TLC does); `auto` is exact until `AUTO_EXACT_LIMIT` states, fingerprints beyond.

A fingerprint is Python's hash of the canonical state, a tuple of ints: 64 bits here, and the
same in every process (hash randomisation does not apply to ints)."""

from __future__ import annotations

from typing import Final

MODES: Final = ("exact", "fingerprint", "auto")
AUTO_EXACT_LIMIT: Final = 2_000_000
"""Distinct states `auto` keeps exactly; the default bound (465,946) stays exact."""
FINGERPRINT_BITS: Final = 64


def missed_probability(states: int) -> float:
    """The chance that two of `states` distinct states share a fingerprint, so that one of
    them went unexplored: n^2 / 2^65 for n states under a uniform 64-bit hash, TLC's
    optimistic estimate."""
    return min(1.0, states * states / 2.0 ** (FINGERPRINT_BITS + 1))


def describe(mode: str, states: int) -> str:
    """One line for the report: how the states were stored, and the chance of a miss."""
    if mode == "exact":
        return "visited set: exact (every state kept)"
    return (f"visited set: 64-bit fingerprints; probability a state was missed by a "
            f"fingerprint collision: {missed_probability(states):.1e}")
