"""Checking: the adapter protocol for executors under test, history checkers, mutants, and the
checks of the project itself (clause coverage, CrossHair proofs)."""
