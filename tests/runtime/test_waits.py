"""The waits the runtime tests are built on: `eventually` returns only a true value (an empty
list of runs is not "the run started"), and its bound grows with the machine's load."""

from __future__ import annotations

import pytest

from tests.load import patience
from tests.runtime.conftest import eventually


def test_eventually_waits_past_empty_and_false_values() -> None:
    answers: list[object] = [[], None, False, 0, "", ["run"]]
    assert eventually("a run", lambda: answers.pop(0)) == ["run"]
    assert answers == []


def test_eventually_fails_naming_what_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATMOSTONCE_TEST_PATIENCE", "1")
    with pytest.raises(AssertionError, match=r"the run started: not within 0\.05 s"):
        eventually("the run started", list, limit=0.05)


def test_patience_follows_the_setting_and_is_never_below_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATMOSTONCE_TEST_PATIENCE", "3")
    assert patience() == 3.0
    monkeypatch.setenv("ATMOSTONCE_TEST_PATIENCE", "0.1")
    assert patience() == 1.0
    monkeypatch.delenv("ATMOSTONCE_TEST_PATIENCE")
    assert patience() >= 1.0
