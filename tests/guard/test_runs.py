"""The guard's runs: a policy kept at ask time, an attempt's intent on disk before its tool
starts, a finished call given back without a run, outcome_unknown instead of a second run after
a kill between intent and result, and retries with the same key counted across processes. Real
SQLite files; where a crash matters, real processes and a real SIGKILL."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from atmostonce.guard import (
    Attempt,
    Finished,
    Guard,
    GuardSettings,
    Statement,
    ToolFailed,
    UnknownCall,
    result_text,
)
from atmostonce.guard.guard import Tool
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, PolicySource, ToolHints, ToolPolicy
from atmostonce.spec.records import (
    OUTCOME_UNKNOWN_ERROR,
    AttemptEnd,
    FailureKind,
    Record,
    failure_text,
    unknown_detail,
)
from atmostonce.spec.session import OUTCOME_UNKNOWN_TOOL_RESULT
from tests.guard.conftest import Children, effects

LOST = f"{OUTCOME_UNKNOWN_ERROR}: {unknown_detail(AttemptEnd.WORKER_LOST)}"
"""The error of a call whose attempt began in a process that died: the failure in it."""

KEY = "s/t1/c1"
FAST = GuardSettings(retry_backoff=0.0)


def policy(effect: EffectClass) -> Statement:
    return Statement(ToolPolicy(effect, requires_approval=False))


def finished(result: object) -> Finished:
    assert isinstance(result, Finished), result
    return result


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2", "D-1")
def test_the_policy_resolved_at_the_first_ask_is_the_one_kept(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    kept = guard.ask(KEY, "lookup", "{}", Statement(hints=ToolHints(read_only=True)))
    assert (kept.policy.effect, kept.policy.source) == (EffectClass.READ,
                                                        PolicySource.FRAMEWORK_METADATA)
    again = guard.ask(KEY, "lookup", "{}", policy(EffectClass.NON_IDEMPOTENT_WRITE))
    assert again == kept
    assert Guard(tmp_path / "guard.db").call(KEY) == kept
    bare = guard.ask("s/t1/c2", "mystery")
    assert (bare.policy.effect, bare.policy.requires_approval) == (EffectClass.UNCLASSIFIED,
                                                                   True)


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    with pytest.raises(SpecError, match="malformed idempotency key"):
        guard.ask("s/c1", "tool")
    with pytest.raises(SpecError, match="max_attempts"):
        GuardSettings(max_attempts=0)
    with pytest.raises(SpecError, match="cannot be used"):
        Guard(tmp_path / "missing" / "guard.db")
    with pytest.raises(UnknownCall):
        asyncio.run(guard.run("s/t9/c9", _returns("x")))


def _returns(output: str) -> Tool:
    async def tool(attempt: Attempt) -> str:
        return output
    return tool


def test_the_journal_commits_to_disk_before_returning(tmp_path: Path) -> None:
    """WAL with synchronous=FULL: a commit that returned is on disk, fsynced."""
    guard = Guard(tmp_path / "guard.db")
    db = guard.journal._db
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2


@pytest.mark.clause("TC-AMO-2", "D-5")
def test_the_intent_is_committed_before_the_tool_starts(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    guard.ask(KEY, "cancel_order", "{}", policy(EffectClass.NON_IDEMPOTENT_WRITE))
    seen: list[tuple[object, ...]] = []

    async def tool(attempt: Attempt) -> str:
        with sqlite3.connect(tmp_path / "guard.db") as other:
            seen.extend(other.execute("SELECT key, number, label, ended FROM attempts"))
        return "cancelled"

    result = finished(asyncio.run(guard.run(KEY, tool)))
    assert seen == [(KEY, 1, f"{KEY}#1", None)]
    assert (result.outcome.record, result.output, result.attempt) == (Record.SUCCEEDED,
                                                                      "cancelled", f"{KEY}#1")


@pytest.mark.clause("TC-AMO-2", "TC-REC-1")
def test_a_finished_call_gives_its_result_back_without_running(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    guard.ask(KEY, "cancel_order", "{}", policy(EffectClass.NON_IDEMPOTENT_WRITE))
    runs: list[str] = []

    async def tool(attempt: Attempt) -> str:
        runs.append(attempt.key)
        return "cancelled"

    first = finished(asyncio.run(guard.run(KEY, tool)))
    again = finished(asyncio.run(Guard(tmp_path / "guard.db").run(KEY, tool)))
    assert runs == [KEY]
    assert again == first
    assert result_text(again) == "cancelled"


@pytest.mark.clause("TC-AMO-2", "TC-REC-LOST", "TC-RCN-1")
@pytest.mark.parametrize("effect", ["non_idempotent_write", "unclassified"])
def test_a_kill_between_intent_and_result_is_outcome_unknown_never_a_second_run(
        tmp_path: Path, children: Children, effect: str) -> None:
    journal, ran = tmp_path / "guard.db", tmp_path / "effects"
    children.run_killed(journal, KEY, effect, ran)
    guard = Guard(journal)
    result = finished(asyncio.run(guard.run(KEY, _returns("ran again"))))
    assert effects(ran) == [f"{KEY}#1"]
    assert (result.outcome.record, result.outcome.error) == (Record.OUTCOME_UNKNOWN, LOST)
    assert result_text(result).startswith(OUTCOME_UNKNOWN_TOOL_RESULT)
    assert [a.end for a in guard.attempts(KEY)] == [AttemptEnd.WORKER_LOST]
    after = children.start(journal, KEY, effect, ran, "return")
    out, _ = after.communicate(timeout=60)
    assert json.loads(out)["result"] == result_text(result)
    assert effects(ran) == [f"{KEY}#1"]


@pytest.mark.clause("TC-REC-RETRY", "TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "TC-KEY-1")
@pytest.mark.parametrize(("effect", "record", "error"), [
    ("read", Record.FAILED, failure_text(FailureKind.MAY_HAVE_RUN)),
    ("idempotent_write", Record.OUTCOME_UNKNOWN, LOST)])
def test_attempts_are_counted_across_processes_up_to_max_attempts(
        tmp_path: Path, children: Children, effect: str, record: Record, error: str) -> None:
    """Three processes each killed mid-tool: three attempts with the same key, then the record
    for a call whose attempts ran out, and no fourth run."""
    journal, ran = tmp_path / "guard.db", tmp_path / "effects"
    for _ in range(3):
        children.run_killed(journal, KEY, effect, ran)
    result = finished(asyncio.run(Guard(journal).run(KEY, _returns("ran a fourth time"))))
    assert effects(ran) == [f"{KEY}#1", f"{KEY}#2", f"{KEY}#3"]
    assert (result.outcome.record, result.outcome.error) == (record, error)


@pytest.mark.clause("TC-REC-RETRY", "TC-KEY-1", "D-9")
def test_a_read_is_retried_in_one_process_with_the_same_key(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db", FAST)
    guard.ask(KEY, "lookup", "{}", policy(EffectClass.READ))
    keys: list[str] = []

    async def flaky(attempt: Attempt) -> str:
        keys.append(attempt.key)
        if attempt.number < 3:
            raise OSError("the service is out of reach")
        return "found"

    result = finished(asyncio.run(guard.run(KEY, flaky)))
    assert keys == [KEY, KEY, KEY]
    assert (result.outcome.record, result.output) == (Record.SUCCEEDED, "found")
    assert [a.end for a in guard.attempts(KEY)] == [AttemptEnd.WORKER_LOST,
                                                    AttemptEnd.WORKER_LOST, AttemptEnd.RETURNED]


@pytest.mark.clause("D-3", "TC-EFF-NONIDEM")
@pytest.mark.parametrize(("effect", "failure", "record"), [
    (EffectClass.READ, ToolFailed("no such order"), Record.FAILED),
    (EffectClass.NON_IDEMPOTENT_WRITE, OSError("out of reach"), Record.OUTCOME_UNKNOWN)])
def test_one_failed_run_ends_the_call_when_the_page_says_so(
        tmp_path: Path, effect: EffectClass, failure: Exception, record: Record) -> None:
    """A failure the tool reports is never retried (D-3); a single-attempt call whose run
    failed outside the tool is outcome_unknown, not run again."""
    guard = Guard(tmp_path / "guard.db", FAST)
    guard.ask(KEY, "tool", "{}", policy(effect))
    runs: list[int] = []

    async def failing(attempt: Attempt) -> str:
        runs.append(attempt.number)
        raise failure

    result = finished(asyncio.run(guard.run(KEY, failing)))
    assert runs == [1]
    assert result.outcome.record is record
    if isinstance(failure, ToolFailed):
        assert result.outcome.error == failure_text(FailureKind.TOOL_ERROR, "no such order")


@pytest.mark.clause("TC-SNAP-1", "TC-REC-EXHAUST-READ")
def test_max_attempts_is_the_one_in_force_when_the_call_was_asked(tmp_path: Path) -> None:
    Guard(tmp_path / "guard.db", GuardSettings(max_attempts=2, retry_backoff=0.0)).ask(
        KEY, "lookup", "{}", policy(EffectClass.READ))
    later = Guard(tmp_path / "guard.db", GuardSettings(max_attempts=5, retry_backoff=0.0))
    runs: list[int] = []

    async def lost(attempt: Attempt) -> str:
        runs.append(attempt.number)
        raise OSError("out of reach")

    result = finished(asyncio.run(later.run(KEY, lost)))
    assert runs == [1, 2]
    assert result.outcome.failure is FailureKind.MAY_HAVE_RUN
