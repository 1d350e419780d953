"""The reference runtime behind the `Engine` interface: `atmostonce.engines.reference:engine`,
the default `--engine` of `atmostonce chaos`.

`adapter` starts and hurts the runtime's processes; `server_log` reads what its server saw from
its journal and off its wire.
"""

from __future__ import annotations

from atmostonce.engines.reference.adapter import engine

__all__ = ["engine"]
