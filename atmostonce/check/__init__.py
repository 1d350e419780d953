"""Checking: histories and the checkers that judge them, model-generated conformance, the guard
that turns an executor's protocol breach into a finding, executor loading by name, the kinds of
service an effect ledger applies, and the checks of the project itself (clause coverage,
CrossHair proofs).

Imports `spec` and `model` only; it loads the executor under test by its `module:function`
name and never imports `executor`, `runtime` or `engines`.
"""
