"""The reference runtime behind the `Engine` interface: `atmostonce.engines.reference:engine`,
the default `--engine` of `atmostonce chaos`; `swallows_disk_errors` and `acks_before_commit`
are its positive controls for the `disk` nemesis (`disk_mutants`).

`adapter` starts and hurts the runtime's processes; `server_log` reads what its server saw from
its journal and off its wire.
"""

from __future__ import annotations

from atmostonce.engines.reference.adapter import acks_before_commit, engine, swallows_disk_errors

__all__ = ["acks_before_commit", "engine", "swallows_disk_errors"]
