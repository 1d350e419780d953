"""Checking, one sub-package per job: `host` (the one place that carries out an executor's commands
in order and judges the protocol's own rules), `history` (histories and the checkers that judge
them, and the kinds of service an effect ledger applies), `lockstep` (an executor and the model
driven together: conformance and trace replay), `probes` (fresh executors driven where the
model's schedules never go), `executors` (loading an executor under test by name, and the guard
that turns its protocol breach into a finding) and `clauses` (clause coverage, CrossHair
proofs).

Imports `spec` and `model` only; it loads the executor under test by its `module:function`
name and never imports `executor`, `runtime` or `engines`.
"""
