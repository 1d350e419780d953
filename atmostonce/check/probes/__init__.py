"""The probes: fresh executors driven where the model's schedules never go, each pinning
the clauses it names."""
