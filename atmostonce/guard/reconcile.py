"""Reconcile over the guard's journal: the two session calls the page's reconcile job needs
(`get_agent_snapshot`, `send_user_message`), answered from the journal, so
`atmostonce.runtime.reconcile.report_unknown_outcomes` (or a team's own copy of the page's
job) finds every call the guard recorded outcome_unknown and reports each once.

The snapshot's history holds each finished call's tool result as the model read it, and, as
user messages, the reports sent before: that is how a rerun of the job sends nothing new. A
report goes to the framework first (`deliver`, such as a message added to the agent's thread)
and is kept in the journal once delivered, so a crash in between repeats a report rather than
losing one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from atmostonce.guard.guard import Guard, result_text
from atmostonce.guard.journal import Attempt
from atmostonce.spec.session import (
    AgentSnapshot,
    AttemptView,
    Message,
    MessageRole,
    ToolCallStatus,
    ToolCallView,
)

Deliver = Callable[[str, str], Awaitable[bool]]
"""Hands a report to the framework: (session id, text) -> whether it took it."""


def _attempt_view(attempt: Attempt) -> AttemptView:
    """Every attempt the journal holds had its intent written before its tool could start: it
    reached the tool (D-5)."""
    return AttemptView(attempt.number, attempt.started, attempt.label, attempt.started,
                       attempt.started, attempt.ended, attempt.end)


class JournalSessions:
    """The session calls of reconcile over `guard`'s journal (see the module docstring)."""

    def __init__(self, guard: Guard, deliver: Deliver) -> None:
        self.guard = guard
        self.deliver = deliver

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        return await asyncio.to_thread(self._snapshot, session_id)

    def _snapshot(self, session_id: str) -> AgentSnapshot:
        with self.guard.journal.reading() as tx:
            calls = tx.calls(session_id)
            results = {r.key: r for r in tx.results(session_id)}
            attempts = tx.attempts()
            reports = tx.reports(session_id)
        views = []
        history = []
        for call in calls:
            parts = call.parts
            result = results.get(call.key)
            status = (ToolCallStatus.of_record(result.outcome.record) if result is not None
                      else ToolCallStatus.RUNNING)
            own = tuple(_attempt_view(a) for a in attempts if a.key == call.key)
            views.append(ToolCallView(parts.turn_id, parts.tool_call_id, call.tool, status,
                                      result.outcome.error if result else "", call.key,
                                      call.policy.effect, call.policy.requires_approval,
                                      attempts=own, history=True))
            if result is not None:
                history.append(Message(MessageRole.TOOL, "", parts.turn_id, parts.tool_call_id,
                                       result_text(result), call.arguments))
        history += [Message(MessageRole.USER, text) for text in reports]
        return AgentSnapshot(session_id, tuple(views), tuple(history))

    async def send_user_message(self, session_id: str, text: str) -> bool:
        if not await self.deliver(session_id, text):
            return False
        await asyncio.to_thread(self._keep, session_id, text)
        return True

    def _keep(self, session_id: str, text: str) -> None:
        with self.guard.journal.transaction() as tx:
            tx.add_report(session_id, text, self.guard.clock())
