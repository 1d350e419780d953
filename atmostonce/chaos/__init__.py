"""Chaos on the real runtime: agent sessions over the session API while a seeded nemesis kills,
pauses and cuts off worker processes, restarts the server from its journal and, when asked,
fails the server's disk for a while; the history of
what happened is checked by the same checkers as the simulator's (`atmostonce chaos`).

One job per module: `workload` (what is asked), `agents` (the sessions, policy changes and the
watcher that ask it), `people` (who answers approvals), `reconcile` (the reconcile job),
`observations` (what the clients saw), `nemesis` (the faults), `build` (one history out of it
all), `lost` (acknowledgements seen and then lost), `options` (what a run is asked to do),
`run` (one run, start to clean-up), `result` (what it found), `report` and `commands`. The
engines it drives, through their adapter interface only, are in `atmostonce.engines`.

Imports `engines.adapter` only of the engines (it loads an engine by name, never imports one),
`runtime` (the effect ledger, processes, tokens, libfiu's disk faults), `sim` (the workload's
people, statistics), `check` and `spec`.
"""
