"""Restate behind the `Engine` interface: `--engine atmostonce.engines.restate:engine`, the Tool
Calls page on Restate as an application team would build it from the page and Restate's
documentation.

Needs the `restate` extra (`pip install 'atmostonce[restate]'`: the Restate Python SDK and
hypercorn, which serves it) and the Restate server binary from npm (`server.binary` says where
it is looked for; `npm install --prefix .restate @restatedev/restate-server@1.7.12`).

`mapping` holds the rules (the run's attempts, records from what `ctx.run` gave back),
`services` the Restate services, `tools` what runs in a `ctx.run` closure, `worker` the service
processes, `router` the deployment's address in front of them, `client` the session API,
`server` the server's process and admin API, `server_log` what the server saw, `adapter` the
engine.
"""

from __future__ import annotations

from atmostonce.spec.errors import SpecError

try:
    import hypercorn  # noqa: F401
    import restate  # noqa: F401
except ImportError:
    raise SpecError("the Restate engine needs the 'restate' extra, which is not installed: "
                    "pip install 'atmostonce[restate]'") from None

from atmostonce.engines.restate.adapter import RestateEngine, engine

__all__ = ["RestateEngine", "engine"]
