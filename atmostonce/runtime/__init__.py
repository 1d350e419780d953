"""The reference executor's real runtime: real processes on loopback, a durable journal.

One job per module: `wire` (newline-delimited JSON over TCP), `codec` (the session API's shapes
as JSON), `journal` (the SQLite journal file), `durability` (group commit: nothing is shown
before it is durable, D-5), `timers` (the executor's timers on the loop), `server` (the server
process: recovery from the journal, serving until stopped), `driver` (hands events to the
sans-IO core and carries out its commands), `server_wire` (the server's side of the wire
protocol, which its docstring documents), `worker` (worker processes and their self-fencing,
D-12), `slot` (one worker of a worker process: its connection, its runs and its lease), `retry`
(back-off and giving up on a peer out of reach), `registry` (tool registries: your own tool
functions with their policies, `worker --tools`), `tools` (the demo tools, one registry),
`ledger` (the effect ledger service, ground truth of what ran), `ledger_store` (its SQLite file
and the services' rules) and `ledger_client` (talking to the ledger), `client` (the session
API), `processes` (start, kill, pause and restart the processes), `loop` (an event loop on a
thread of its own, for callers that are not asyncio), `sqlite_file` (opening, checking and
locking a SQLite file), `tokens` (the deployment's secret tokens), `options` (shared
command-line options), `commands` (the `serve`, `worker`, `ledger` and `demo` subcommands),
`reconcile` (the reconcile job against a session and the ledger) and `demo`.

Imports `spec`, `check` (guard, loading, service kinds), `executor` and `arguments`; `engines`,
`chaos` and the command above it may import it, `sim` and the layers below never do.
"""
