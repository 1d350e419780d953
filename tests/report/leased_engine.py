"""The reference engine saying that one property holds only through its mapping, so that a
chaos report can be checked to show `Limits.held_by_mapping` from a real run (as Temporal's
adapter says of its worker lease) without starting Temporal."""

from __future__ import annotations

import dataclasses

from atmostonce.engines.adapter import EngineSetup, Limits
from atmostonce.engines.reference.adapter import ReferenceEngine
from atmostonce.spec.properties import PropertyId

HELD = {PropertyId.A_DOUBLE_RUN_SHAPE: "only with the mapping's worker lease (a test's claim)"}


class LeasedEngine(ReferenceEngine):
    def limits(self) -> Limits:
        return dataclasses.replace(super().limits(), held_by_mapping=HELD)


def engine(setup: EngineSetup) -> LeasedEngine:
    """`--engine tests.report.leased_engine:engine`."""
    return LeasedEngine(setup)
