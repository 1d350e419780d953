"""The server's liveness log: what it keeps, what a torn line costs, and how the reference
adapter's history places its notes beside the journal's (A-HEARD-KEEPS-ATTEMPT)."""

from __future__ import annotations

from pathlib import Path

from atmostonce.check.history import entries as h
from atmostonce.check.history.checkers import check_history
from atmostonce.engines.reference.server_log import server_log
from atmostonce.runtime.liveness_log import LivenessLog, LivenessNote, read_liveness
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import JSON, ExecutorConfig


def test_notes_read_back_in_order_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "liveness.jsonl"
    assert read_liveness(path) == []
    log = LivenessLog(path)
    log.connected(1.5, "w1")
    log.heartbeat(2.25, "w1", "s/t/c#1")
    log.close()
    with path.open("a", encoding="utf-8") as torn:
        torn.write('[1]\n{"type":"heartbeat","at":3.0,"wor')
    assert read_liveness(path) == [LivenessNote("connected", 1.5, "w1"),
                                   LivenessNote("heartbeat", 2.25, "w1", "s/t/c#1")]


def _journal(lost_at: float) -> list[dict[str, JSON]]:
    """A write asked, queued and handed to w1, whose attempt ends lost to its worker."""
    return [
        {"type": "ask", "at": 1.0, "key": "s/t/c", "tool": "send"},
        {"type": "queued", "at": 1.0, "key": "s/t/c", "attempt": "s/t/c#1"},
        {"type": "handed", "at": 2.0, "key": "s/t/c", "attempt": "s/t/c#1", "worker": "w1"},
        {"type": "ended", "at": lost_at, "key": "s/t/c", "attempt": "s/t/c#1",
         "end": "worker_lost"},
    ]


def _judged(notes: list[LivenessNote]) -> set[str]:
    """The properties the history of `_journal` with `notes` breaks, after the call's ask."""
    asked: list[h.Entry] = [
        h.PolicySet(0.0, "send", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, False), None),
        h.SessionOpened(0.0, "s", None),
        h.CallAsked(1.0, "s/t/c", "s", "t", "c", "send", "{}")]
    entries = asked + server_log(_journal(4.0), [], notes, [], []).entries
    return {v.property for v in check_history(entries, ExecutorConfig())}


def test_a_reconnection_comes_before_the_loss_it_causes_at_the_same_moment() -> None:
    """A worker that connects again ends its attempt at the moment of its hello: the
    connection goes first, so the loss is not taken for a declaration while heard from."""
    notes = [LivenessNote("heartbeat", 3.0, "w1", "s/t/c#1"), LivenessNote("connected", 4.0, "w1")]
    entries = server_log(_journal(4.0), [], notes, [], []).entries
    kinds = [type(e) for e in entries]
    assert kinds.index(h.WorkerConnected) < kinds.index(h.WorkerDeclaredLost)
    assert h.HeartbeatDelivered in kinds
    assert PropertyId.A_HEARD_KEEPS_ATTEMPT not in _judged(notes)


def test_a_loss_soon_after_a_heartbeat_with_no_reconnection_is_a_violation() -> None:
    notes = [LivenessNote("heartbeat", 3.0, "w1", "s/t/c#1")]
    assert PropertyId.A_HEARD_KEEPS_ATTEMPT in _judged(notes)
