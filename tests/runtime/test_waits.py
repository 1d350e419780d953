"""The waits the runtime tests are built on: `eventually` returns only a true value (an empty
list of runs is not "the run started"), and it names what it waited for when it gives up."""

from __future__ import annotations

import pytest

from tests.runtime.conftest import eventually


def test_eventually_waits_past_empty_and_false_values() -> None:
    answers: list[object] = [[], None, False, 0, "", ["run"]]
    assert eventually("a run", lambda: answers.pop(0)) == ["run"]
    assert answers == []


def test_eventually_fails_naming_what_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATMOSTONCE_TEST_PATIENCE", "1")
    with pytest.raises(AssertionError, match=r"the run started: not within 0\.05 s"):
        eventually("the run started", list, limit=0.05)

