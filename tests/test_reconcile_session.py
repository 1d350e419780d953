"""Reconcile of a session the server does not know: the command refuses it as bad input rather
than report that every call of it is reported, while the library default (used by the chaos
harness and the demo, which reconcile sessions they opened) still returns an empty run."""

from __future__ import annotations

import asyncio

import pytest

from atmostonce.executor import reference
from atmostonce.runtime.reconcile import (
    ReconcileRun,
    as_check,
    report_unknown_outcomes,
    shows_nothing,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Ask, Executor, ExecutorConfig, OpenSession
from atmostonce.spec.session import AgentSnapshot


class ExecutorSessions:
    """The session calls reconcile needs, answered by a real executor core's snapshot."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.sent: list[str] = []

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        return self.executor.snapshot(session_id)

    async def send_user_message(self, session_id: str, text: str) -> bool:
        self.sent.append(text)
        return True


async def _never(key: str, arguments: str) -> str:
    raise AssertionError(f"nothing to ask about, yet asked about {key}")


def sessions_with_one_call() -> ExecutorSessions:
    """The reference executor holding session `known` with one call awaiting approval."""
    executor = reference(ExecutorConfig())
    executor.handle(OpenSession(0.0, "known"))
    executor.handle(Ask(0.0, "known", "t1", "c1", "lookup_order", "{}"))
    return ExecutorSessions(executor)


def run(sessions: ExecutorSessions, session_id: str, require: bool) -> ReconcileRun:
    return asyncio.run(report_unknown_outcomes(sessions, session_id, _never,
                                               require_session=require))


def test_an_unknown_session_is_bad_input_when_the_session_is_required() -> None:
    """The command's run names the session it does not find, and sends nothing."""
    sessions = sessions_with_one_call()
    with pytest.raises(SpecError, match="no session named 'nosuch'"):
        run(sessions, "nosuch", require=True)
    assert sessions.sent == []


def test_a_known_session_with_nothing_unknown_is_complete() -> None:
    """A session the server shows a call of passes the check and reports nothing."""
    done = run(sessions_with_one_call(), "known", require=True)
    assert (done.complete, done.unknown, done.reports) == (True, 0, [])


def test_the_library_default_returns_an_empty_run_for_an_unknown_session() -> None:
    """Without `require_session` an unknown session is an empty, complete run."""
    done = run(sessions_with_one_call(), "nosuch", require=False)
    assert (done.complete, done.unknown, done.reports) == (True, 0, [])


def test_the_executor_snapshot_of_an_unknown_session_shows_nothing() -> None:
    """What the check relies on: the snapshot of an unknown session holds no call and no
    message, and that of a session with a call does not look like it."""
    executor = sessions_with_one_call().executor
    assert shows_nothing(executor.snapshot("nosuch"))
    assert not shows_nothing(executor.snapshot("known"))


def test_a_check_that_cannot_take_a_key_and_arguments_is_refused_up_front() -> None:
    """`--check` names a function called with (key, tool arguments); one that cannot be is bad
    input before the job reads anything."""
    def no_arguments() -> str:
        return "found"

    def key_only(key: str) -> str:
        return key

    for wrong in (no_arguments, key_only):
        with pytest.raises(SpecError, match=r"cannot be called with \(key, tool arguments\)"):
            as_check(wrong)  # type: ignore[arg-type]

    def fits(key: str, arguments: str, *more: str) -> str:
        return f"{key} {arguments}"

    async def ask() -> str:
        return await as_check(fits)("k", "{}")

    assert asyncio.run(ask()) == "k {}"
