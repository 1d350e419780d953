"""Black-box adapters of durable-execution engines, for `atmostonce chaos --engine`.

`adapter` is the interface an engine implements (start it, open sessions over its session API,
kill, pause and cut off its workers, restart its server, and say what its server saw); `proxy`
is the TCP proxy an adapter puts between a worker and its server to cut that connection; each
engine is a package of its own: `reference` runs this project's runtime. An engine is named by
`module:function`, so the harness in `atmostonce.chaos` never imports one.

May import `spec`, `check`, `executor` and `runtime`; nothing below imports it.
"""
