"""The reference executor's real runtime: real processes on loopback, a durable journal.

One job per module: `wire` (newline-delimited JSON over TCP), `codec` (the session API's shapes
as JSON), `journal` (the SQLite journal file), `durability` (group commit: nothing is shown
before it is durable, D-5), `timers` (the executor's timers on the loop), `server` (the asyncio
server that drives the sans-IO core; its docstring documents the wire protocol), `worker`
(worker processes and their self-fencing, D-12), `tools` (the demo tools), `ledger` and
`ledger_client` (the effect ledger, ground truth of what ran), `client` (the session API),
`processes` (start, kill, pause and restart the processes), `options` (shared command-line
options), `commands` (the `serve`, `worker`, `ledger` and `demo` subcommands) and `demo`.
"""
