"""The overview of how the machines interact is found by exploring the model."""

from __future__ import annotations

import pytest

from atmostonce import palette
from atmostonce.model import overview
from atmostonce.model.config import ModelConfig
from atmostonce.spec.errors import SpecError
from atmostonce.spec.step_kinds import StepKind


@pytest.fixture(scope="module")
def found() -> dict[tuple[str, str], tuple[str, ...]]:
    return {(i.origin, i.target): i.kinds for i in overview.interactions(overview.BOUND)}


@pytest.mark.clause("D-5", "D-12", "TC-AMO-3", "TC-EFF-IDEM")
def test_the_overview_shows_the_couplings_of_the_model(
        found: dict[tuple[str, str], tuple[str, ...]]) -> None:
    assert found[("Attempt", "Run")] == (StepKind.GO,)  # the run starts only on the go-ahead
    assert found[("Run", "KeyedLedger")] == (StepKind.APPLY,)
    assert found[("Run", "PlainLedger")] == (StepKind.APPLY,)
    assert found[("Worker", "Run")] == (StepKind.CRASH, StepKind.DETECT, StepKind.RECONNECT)
    assert found[("Worker", "Attempt")] == (StepKind.DETECT, StepKind.RECONNECT)
    assert found[("CallTool", "Attempt")] == (StepKind.APPROVE,)
    assert found[("agent's model", "CallTool")] == (StepKind.ASK, StepKind.REASK)
    assert StepKind.RESTART in found[("server restart", "Attempt")]
    assert set(found[("Attempt", "CallSingleAttemptTool")]) == {StepKind.EXPIRE, StepKind.TIME_OUT}


def test_a_cancel_draws_no_arrow_to_the_run(
        found: dict[tuple[str, str], tuple[str, ...]]) -> None:
    """TC-AMO-3: a time-out decides the call but leaves the run going."""
    assert not any(StepKind.TIME_OUT in kinds for (o, t), kinds in found.items() if t == "Run")
    assert ("server restart", "Run") not in found


def test_the_overview_dot_draws_every_interaction() -> None:
    dot = overview.overview_dot()
    assert f'"agent\'s model" [fillcolor="{palette.ACTOR}" shape=ellipse style=filled]' in dot
    assert "Attempt -> Run [label=go]" in dot
    legend = dot.splitlines()[1]
    assert legend.startswith("\tgraph [")
    assert "label=<<table" in legend
    assert "TC-AMO-3" in legend


def test_a_narrower_bound_shows_fewer_interactions() -> None:
    """The overview follows the model: with no faults, workers never move runs or attempts."""
    quiet = ModelConfig(workers=1, calls=1, crashes=0, partitions=0, restarts=0, timeouts=0,
                        faults=0)
    pairs = {(i.origin, i.target) for i in overview.interactions(quiet)}
    assert ("Worker", "Run") not in pairs
    assert ("server restart", "Attempt") not in pairs
    assert ("Attempt", "Run") in pairs


def test_a_step_nobody_owns_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(overview.ACTORS, StepKind.ASK)
    with pytest.raises(SpecError, match="model step 'ask' is no machine's trigger"):
        overview.interactions.__wrapped__(ModelConfig(workers=1, calls=1, faults=0))
