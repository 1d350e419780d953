"""How strong `atmostonce verify` is, measured: every first-order mutant a mutation-testing
tool (cosmic-ray) makes of an executor's source, each run through verify's executor layers from
the cheapest check to the most expensive, stopping at the first that catches it.

Imports: `verify` (its layers), `sim` and `check` (the cheap versions of those layers), `spec`;
cosmic-ray only to make the mutants. Nothing below imports this package.
"""
