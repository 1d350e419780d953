"""The explicit finite-state model of the Tool Calls page and its exhaustive explorer."""
