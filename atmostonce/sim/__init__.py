"""The deterministic fault simulator: any executor, driven through the protocol of
`atmostonce.spec.protocol` in simulated time, with every random choice derived from one seed.

`workload` draws what the agent, the people and the tools do; `faults` the profiles and a
seed's fault schedule; `engine` runs a scenario: its simulation holds the clock, the event
queue and the history, and drives passive parts that see it only through `loop` (`server`
hosts the executor, `network` carries messages, `workers` run tools, `agents` are the model,
the people and the reconcile job, `ledger` the services tools write to); the history is
checked online by `atmostonce.check.history.checkers`. `run` runs one seed, `campaign` many,
`shrink` minimises a failing fault schedule, `report` and `commands` are the `simulate` and `replay`
commands.

A scenario file is the user's own agent: `scenario` reads and checks it (with `tables`,
`distributions`, `mcp` for an MCP `tools/list` answer and `overrides` for settings given on the
command line), `scenario_draw` turns one of its seeds into the engine's scenario, `scenario_run`
runs its seeds and sweeps, `tool_stats` and `scenario_report` report per tool,
`scenario_sweep_report` a sweep per value, `scenario_page` both as the HTML report's page, and
`scenario_commands` is `simulate --scenario` and `replay --scenario`.

Imports `spec`, `check`, `report` and `arguments`; it loads the executor under test by name
and never imports `executor`, `runtime` or `engines`.
"""
