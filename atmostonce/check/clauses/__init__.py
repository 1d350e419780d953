"""The checks of the project itself: which code and tests carry each clause, and the
CrossHair proofs of the spec's contracts."""
