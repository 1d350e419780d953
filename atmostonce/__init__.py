"""atmostonce: the formally tested specification of how a durable-execution engine runs an
AI agent's tool calls, with a model checker, a fault simulator and a reference executor."""

__version__ = "0.1.0"
