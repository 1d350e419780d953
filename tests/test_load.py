"""Wall-clock bounds in tests grow with the machine's load (`tests/load.py`)."""

from __future__ import annotations

import pytest

from tests.load import patience


def test_patience_follows_the_setting_and_is_never_below_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATMOSTONCE_TEST_PATIENCE", "3")
    assert patience() == 3.0
    monkeypatch.setenv("ATMOSTONCE_TEST_PATIENCE", "0.1")
    assert patience() == 1.0
    monkeypatch.delenv("ATMOSTONCE_TEST_PATIENCE")
    assert patience() >= 1.0


def test_each_test_hangs_at_most_the_configured_bound_times_the_load(
        request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None
    configured = float(request.config.getini("timeout"))
    assert configured > 0
    assert marker.args[0] >= configured
