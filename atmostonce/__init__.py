"""atmostonce: the formally tested specification of how a durable-execution engine runs an
AI agent's tool calls, with a model checker, a fault simulator and a reference executor.

The library face: what an application developer needs to run tool calls on a server (`Client`,
`AsyncClient`, `ToolPolicy`, `EffectClass`, the record and status types, the errors to catch,
the reconcile job) and what an engine builder needs to write an executor (`Executor`,
`ExecutorConfig`, `ExecutorFactory`; the events and commands are in `atmostonce.spec.protocol`).
Each name is imported on first use (PEP 562), so `import atmostonce` loads nothing else and the
asyncio runtime is loaded only by the names that need it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from atmostonce.runtime.client import AnswerReply, AsyncClient, Client, ServerUnavailable
    from atmostonce.runtime.reconcile import (
        ReconcileRun,
        Report,
        as_check,
        ledger_check,
        report_unknown_outcomes,
    )
    from atmostonce.runtime.tokens import read_token
    from atmostonce.spec.errors import SpecError
    from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
    from atmostonce.spec.protocol import (
        Command,
        Event,
        Executor,
        ExecutorConfig,
        ExecutorFactory,
    )
    from atmostonce.spec.records import AttemptEnd, AttemptProgress, Record
    from atmostonce.spec.session import (
        AgentSnapshot,
        AttemptView,
        Message,
        MessageRole,
        ToolCallFinished,
        ToolCallStatus,
        ToolCallView,
    )

__version__ = "0.1.0"

_HOME: dict[str, str] = {
    # the session API of a running server
    "Client": "atmostonce.runtime.client",
    "AsyncClient": "atmostonce.runtime.client",
    "AnswerReply": "atmostonce.runtime.client",
    "ServerUnavailable": "atmostonce.runtime.client",
    "read_token": "atmostonce.runtime.tokens",
    # policies
    "ToolPolicy": "atmostonce.spec.policy",
    "ToolHints": "atmostonce.spec.policy",
    "EffectClass": "atmostonce.spec.policy",
    # records, statuses and what get_agent_snapshot returns
    "Record": "atmostonce.spec.records",
    "AttemptEnd": "atmostonce.spec.records",
    "AttemptProgress": "atmostonce.spec.records",
    "ToolCallStatus": "atmostonce.spec.session",
    "AgentSnapshot": "atmostonce.spec.session",
    "ToolCallView": "atmostonce.spec.session",
    "AttemptView": "atmostonce.spec.session",
    "Message": "atmostonce.spec.session",
    "MessageRole": "atmostonce.spec.session",
    "ToolCallFinished": "atmostonce.spec.session",
    # bad input, everywhere
    "SpecError": "atmostonce.spec.errors",
    # the reconcile job
    "report_unknown_outcomes": "atmostonce.runtime.reconcile",
    "ReconcileRun": "atmostonce.runtime.reconcile",
    "Report": "atmostonce.runtime.reconcile",
    "ledger_check": "atmostonce.runtime.reconcile",
    "as_check": "atmostonce.runtime.reconcile",
    # the executor protocol, for engine builders
    "Executor": "atmostonce.spec.protocol",
    "ExecutorConfig": "atmostonce.spec.protocol",
    "ExecutorFactory": "atmostonce.spec.protocol",
    "Event": "atmostonce.spec.protocol",
    "Command": "atmostonce.spec.protocol",
}
"""Each exported name and the module it lives in."""

__all__ = [
    "AgentSnapshot",
    "AnswerReply",
    "AsyncClient",
    "AttemptEnd",
    "AttemptProgress",
    "AttemptView",
    "Client",
    "Command",
    "EffectClass",
    "Event",
    "Executor",
    "ExecutorConfig",
    "ExecutorFactory",
    "Message",
    "MessageRole",
    "ReconcileRun",
    "Record",
    "Report",
    "ServerUnavailable",
    "SpecError",
    "ToolCallFinished",
    "ToolCallStatus",
    "ToolCallView",
    "ToolHints",
    "ToolPolicy",
    "__version__",
    "as_check",
    "ledger_check",
    "read_token",
    "report_unknown_outcomes",
]
"""Everything `atmostonce` exports: `__version__` and each name of `_HOME`."""


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the real names above, so that a misspelt name is
    # an error for mypy too instead of an Any.

    def __getattr__(name: str) -> Any:
        """Import an exported name from its module on first use, and keep it."""
        home = _HOME.get(name)
        if home is None:
            raise AttributeError(f"module 'atmostonce' has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """What the package offers, the names of `__all__`, not the helpers this module imports
    for itself."""
    return sorted(__all__)
