"""verify's fresh-executor probes refuse an executor that takes a corrupt journal otherwise than
with one line naming the entry and the field (D-8): one that accepts a bad value, crashes on
one, loses the entry's index, calls a field that is there missing, or ignores a key that
contradicts its call."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from atmostonce.check.probes.journal import probe_journal
from atmostonce.check.probes.table import first_problems
from atmostonce.executor import reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import JSON, Command, ExecutorConfig


class TakesAnyTime(ReferenceExecutor):
    """Reads an entry time that is not a finite number as 0."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        def fixed(entry: dict[str, JSON]) -> dict[str, JSON]:
            when = entry.get("at") if isinstance(entry, dict) else 0.0
            if isinstance(when, bool) or not isinstance(when, (int, float)) or when != when:
                return {**entry, "at": 0.0}
            return entry
        return super().recover([fixed(e) for e in journal], at)


class CrashesOnLists(ReferenceExecutor):
    """Looks a field up in a table without checking that it can be a key first."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        for entry in journal:
            if isinstance(entry, dict):
                hash(entry.get("effect"))
        return super().recover(journal, at)


class LosesTheIndex(ReferenceExecutor):
    """Says what is wrong but not in which entry."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        try:
            return super().recover(journal, at)
        except SpecError as error:
            raise SpecError(re.sub(r"journal entry \d+", "a journal entry", str(error))) from None


class LosesTheField(ReferenceExecutor):
    """Says what is wrong but not with which field."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        try:
            return super().recover(journal, at)
        except SpecError as error:
            raise SpecError(re.sub(r"field '\w+'", "a field", str(error))) from None


class CallsEverythingMissing(ReferenceExecutor):
    """Calls a field of the wrong kind missing."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        try:
            return super().recover(journal, at)
        except SpecError as error:
            raise SpecError(re.sub(r"field ('\w+') must be .*", r"missing field \1",
                                   str(error))) from None


class TrustsTheIds(ReferenceExecutor):
    """Rebuilds each entry's key from its call's ids, so a key of another call goes unseen."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        def fixed(entry: dict[str, JSON]) -> dict[str, JSON]:
            parts = [entry.get(f) for f in ("session_id", "turn_id", "tool_call_id")]
            if isinstance(entry, dict) and entry.get("type") == "ask" and all(
                    isinstance(p, str) and p for p in parts):
                return {**entry, "key": "/".join(parts)}  # type: ignore[arg-type]
            return entry
        return super().recover([fixed(e) for e in journal], at)


class DropsStrayFailureKinds(ReferenceExecutor):
    """Reads a failure kind on a record that is not failed as none."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        def fixed(entry: dict[str, JSON]) -> dict[str, JSON]:
            if isinstance(entry, dict) and entry.get("type") == "record" and entry.get(
                    "record") != "failed":
                return {**entry, "failure": None}
            return entry
        return super().recover([fixed(e) for e in journal], at)


class ForgetsTheFloor(ReferenceExecutor):
    """Rebuilds every session as letting framework metadata lower its default (D-22)."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        return super().recover([{k: v for k, v in e.items() if k != "hints_may_lower"}
                                for e in journal], at)


class TakesReplayedAttemptsAsNew(ReferenceExecutor):
    """Reads an attempt queued again, after its call moved on, as the call's next attempt."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        made: dict[str, int] = {}

        def fixed(entry: dict[str, JSON]) -> dict[str, JSON]:
            key, number = entry.get("key"), entry.get("number")
            if entry.get("type") != "queued" or not isinstance(key, str) or not isinstance(
                    number, int):
                return entry
            made[key] = made.get(key, 0) + 1
            return {**entry, "number": made[key], "attempt": f"{key}#{made[key]}"}
        return super().recover([fixed(e) for e in journal], at)


def test_the_reference_refuses_every_corrupt_journal_with_one_clear_line() -> None:
    assert probe_journal(reference, ExecutorConfig()) == []


@pytest.mark.clause("D-8")
@pytest.mark.parametrize(("broken", "said"), [
    (TakesAnyTime, "recover accepted the journal with field 'at'"),
    (CrashesOnLists, "raised TypeError"),
    (LosesTheIndex, "does not name the entry"),
    (LosesTheField, "does not name the field 'at'"),
    (CallsEverythingMissing, "calls the field missing, but it is there"),
    (TrustsTheIds, "an id of another call"),
    (DropsStrayFailureKinds, "against its 'record'"),
    (TakesReplayedAttemptsAsNew, "about an attempt, repeated at the end"),
    (ForgetsTheFloor, "a new call of hinted in session journal-probe-2 resolves to"),
])
def test_an_executor_that_takes_a_corrupt_journal_otherwise_is_caught(broken: object,
                                                                      said: str) -> None:
    problems = probe_journal(broken, ExecutorConfig())  # type: ignore[arg-type]
    assert any(said in p for p in problems), problems
    assert all(p.startswith("D-8: ") for p in problems)


def test_the_fresh_probes_give_the_corrupt_journal_verdict() -> None:
    verdict, problems = first_problems(TakesAnyTime, ExecutorConfig())
    assert verdict == "RECOVERS FROM A CORRUPT JOURNAL", problems
