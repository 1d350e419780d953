"""The executable specification: pure, IO-free rules of the Tool Calls page.

Policies and their resolution (`policy`), idempotency keys (`keys`), records and how an attempt
history decides them (`records`), approval answers (`approval`), the fence option (`fence`),
the session API's shapes (`session`), reconcile's selection (`reconcile`), the properties every
layer checks (`properties`) and the clause registry (`clauses`).
"""
