"""Engine factories for the adapter tests: one that builds no engine at all."""

from __future__ import annotations

from atmostonce.engines.adapter import EngineSetup


def not_an_engine(setup: EngineSetup) -> object:
    """Returns something without the Engine protocol's methods."""
    return object()
