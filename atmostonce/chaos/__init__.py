"""Chaos on the real runtime: agent sessions over the session API while a seeded nemesis kills,
pauses and cuts off worker processes and restarts the server from its journal; the history of
what happened is checked by the same checkers as the simulator's (`atmostonce chaos`).

One job per module: `engine` (the black-box adapter an engine implements, documented for third
parties), `reference` (the adapter of the project's own runtime) with `proxy` (the TCP proxy
that holds or drops a worker's traffic) and `server_log` (what its server alone saw),
`workload` (what is asked) and `agents` (the sessions, people, policy changes and the
reconcile job that ask it), `observations` (what the clients saw), `nemesis` (the faults),
`build` (one history out of it all), `lost` (records seen and then lost), `run` (one run,
start to clean-up), `report` and `commands`.
"""
