"""Executors under test: loaded by name, and guarded so that a step outside the protocol
becomes a finding."""
