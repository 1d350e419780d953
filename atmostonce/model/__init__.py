"""The explicit finite-state model of the Tool Calls page and its exhaustive explorer.

`machines` holds the component machines as `transitions` definitions and `tables` compiles them
to the integer tables the explorer steps; `system` composes them (its state encoding in
`layout`, the modelled executor's decisions in `choices`, calls interned in `interning`,
symmetry reduction in `symmetry`, one call's steps in `call_steps`, worker-level events in
`worker_events`); `properties` evaluates the spec's properties on its states; `explorer` is the
breadth-first search, `check` one check as a user runs it, `trace` its counterexamples and
witnesses, `findings` what it establishes about the page's exception, `mutants` broken models,
`naive` the slow obvious stepper the tables are tested against, `diagrams` the pictures and
`config` the bounds.

Imports `spec` only: the executor is written without it, and `check` compares the two.
"""
