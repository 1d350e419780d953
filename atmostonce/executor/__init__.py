"""The reference executor: a sans-IO core that runs an agent's tool calls by the spec's rules.

`reference(config)` is the factory `atmostonce verify --executor atmostonce.executor:reference`
loads. The core is split by job: `state` (the tables), `journal` (the persisted entries),
`facts` and `reader` (what each entry states, and reading entries back into facts), `recovery`
(the fold that rebuilds the tables from them), `views` (the session API's shapes), `timers`
(timer ids), `keys` (a call's idempotency key), `members` (enum members the rules test, as
module names), and the rules, one small method each, one concern to a module: `policies`
(policies and sessions), `attempts` (attempts and records), `approvals` (asking and approval),
`workers` and `restart`, all of them joined in `core`; `mutants` holds its deliberately broken
variants (`atmostonce.executor.mutants:NAME`).

It imports `atmostonce.spec` only (the protocol it speaks is `atmostonce.spec.protocol`), never
the model it is checked against; `runtime` and `engines` above it may import it.
"""

from __future__ import annotations

from atmostonce.executor.core import ReferenceExecutor
from atmostonce.spec.protocol import Executor, ExecutorConfig


def reference(config: ExecutorConfig) -> Executor:
    """A fresh reference executor with the given options (D-5, D-6, D-8, D-12)."""
    return ReferenceExecutor(config)


__all__ = ["ReferenceExecutor", "reference"]
