"""The lockstep: an executor under test and the model driven together, the model's
schedules replayed on it (conformance), and traces replayed step by step."""
