"""The executable specification: pure, IO-free rules of the Tool Calls page.

Policies and their resolution (`policy`), idempotency keys (`keys`), records and how an attempt
history decides them (`records`), approval answers (`approval`), the fence option (`fence`),
the session API's shapes (`session`), reconcile's selection (`reconcile`), the properties every
layer checks (`properties`), the clause registry (`clauses`), and the protocol between an
executor and whatever drives it (`protocol`: the events in and commands out of a sans-IO
executor, which the simulator, conformance and the runtime all speak).

The bottom layer: it imports nothing of the project, and everything else may import it.
"""
