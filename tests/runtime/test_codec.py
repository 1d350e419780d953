"""The session API's shapes on the wire: a snapshot with each call's kept policy, deadline and
attempt history comes back exactly as the executor made it (TC-RCN-FIND, TC-SNAP-1, D-30,
D-32), and a malformed one is a one-line error naming the field."""

from __future__ import annotations

import json

import pytest

from atmostonce.runtime import codec
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.records import AttemptEnd, AttemptProgress
from atmostonce.spec.session import AgentSnapshot, AttemptView, ToolCallStatus, ToolCallView

SNAPSHOT = AgentSnapshot("s", (
    ToolCallView("t", "c1", "lookup", ToolCallStatus.SUCCEEDED, "", "s/t/c1", EffectClass.READ,
                 False, None, (AttemptView(1, 0.0, "w1", 0.5, 0.75, 2.0, AttemptEnd.RETURNED),),
                 True),
    ToolCallView("t", "c2", "refund", ToolCallStatus.AWAITING_APPROVAL, "", "s/t/c2",
                 EffectClass.IDEMPOTENT_WRITE, True, 120.0, (), True),
    ToolCallView("t", "c3", "other", ToolCallStatus.RUNNING, "", "s/t/c3"),
    ToolCallView("t", "c4", "lookup", ToolCallStatus.FAILED, "", "s/t/c4", EffectClass.READ,
                 False, None, (
                     AttemptView(1, 0.0, "", None, None, 1.0, AttemptEnd.NOT_REACHED,
                                 AttemptProgress.NOT_STARTED),
                     AttemptView(2, 1.0, "w1", 1.5, None, 3.0, AttemptEnd.WORKER_LOST,
                                 AttemptProgress.NOT_COMPLETED),
                     AttemptView(3, 3.0, "", None, None, 4.0, AttemptEnd.WORKER_LOST,
                                 AttemptProgress.UNSPECIFIED)), True),
), ())


@pytest.mark.clause("TC-RCN-FIND", "TC-SNAP-1", "D-30", "D-32")
def test_a_snapshot_comes_back_as_it_was_sent() -> None:
    wire = json.loads(json.dumps(codec.snapshot_json(SNAPSHOT)))
    assert codec.snapshot_of(wire) == SNAPSHOT


@pytest.mark.clause("D-30", "D-31", "D-5")
def test_attempt_progress_travels_by_dexs_names_and_unspecified_counts_as_reached() -> None:
    wire = json.loads(json.dumps(codec.snapshot_json(SNAPSHOT)))
    attempts = wire["tool_calls"][3]["attempts"]
    assert [a["progress"] for a in attempts] == ["NOT_STARTED", "NOT_COMPLETED", "UNSPECIFIED"]
    assert [a.reached for a in SNAPSHOT.tool_calls[3].attempts] == [False, True, True]
    del attempts[0]["progress"]  # a server that sends none: not known, so not claimed
    assert codec.snapshot_of(wire).tool_calls[3].attempts[0].progress is None


@pytest.mark.clause("D-32")
def test_a_policys_deadline_comes_back_as_it_was_sent() -> None:
    policy = ToolPolicy(EffectClass.IDEMPOTENT_WRITE, True, 90.0)
    assert codec.policy_of(json.loads(json.dumps(codec.policy_json(policy)))) == policy


@pytest.mark.clause("D-30")
@pytest.mark.parametrize(("attempt", "message"), [
    ({"number": "1", "queued_at": 0.0, "worker": ""}, "field 'number' must be a whole number"),
    ({"number": 1, "queued_at": None, "worker": ""}, "field 'queued_at' must be a number"),
    ({"number": 1, "queued_at": 0.0, "worker": "", "handed_at": "x"},
     "field 'handed_at' must be a number or null"),
])
def test_a_malformed_attempt_is_a_one_line_error(attempt: dict[str, object],
                                                 message: str) -> None:
    call = codec.call_json(SNAPSHOT.tool_calls[0])
    call["attempts"] = [attempt]
    with pytest.raises(SpecError, match=message):
        codec.call_of(call)
