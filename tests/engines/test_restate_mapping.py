"""The Restate mapping's pure rules, payloads and server log, without a server: which attempts a
call's `ctx.run` gets, which record a call ends with, and what the server log makes of the
workers' notes and Restate's journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("restate")

from atmostonce.check.history import entries as h
from atmostonce.engines.restate import mapping, server
from atmostonce.engines.restate.payloads import (
    config_of,
    policy_of,
    settings_of,
    snapshot_of,
    statement_of,
)
from atmostonce.engines.restate.server_log import UNKNOWN_WORKER, server_log
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy, resolve_policy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import Record

CONFIG = ExecutorConfig(max_attempts=4, retry_backoff=0.2)
READ = resolve_policy(ToolPolicy(EffectClass.READ, requires_approval=False))
WRITE = resolve_policy(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False))


@pytest.mark.clause("TC-POL-2", "TC-EFF-NONIDEM")
def test_only_call_tool_calls_get_the_kept_attempts() -> None:
    assert mapping.plan(READ, CONFIG) == mapping.RunPlan(4, 0.2)
    assert mapping.plan(WRITE, CONFIG) == mapping.RunPlan(1, 0.2)


@pytest.mark.clause("TC-REC-1", "D-3", "D-5")
def test_records_from_what_ctx_run_gave_back() -> None:
    single = mapping.plan(WRITE, CONFIG)
    assert mapping.outcome(WRITE, single, True, "ok").record is Record.SUCCEEDED
    failed = mapping.outcome(WRITE, single, False, "no such order")
    assert failed.record is Record.FAILED
    assert "no such order" in failed.error
    assert mapping.outcome(WRITE, single, None, "gave up").record is Record.OUTCOME_UNKNOWN
    retried = mapping.plan(READ, CONFIG)
    assert mapping.outcome(READ, retried, None, "gave up").record is Record.FAILED


def test_payloads_round_trip() -> None:
    policy = ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=True)
    hints = ToolHints(read_only=False, idempotent=True, destructive=None)
    assert policy_of(json.loads(json.dumps(statement_of(policy, hints)))) == (policy, hints)
    assert policy_of(statement_of(None, None)) == (None, None)
    assert config_of(json.loads(json.dumps(settings_of(CONFIG)))) == CONFIG
    with pytest.raises(SpecError, match="outside the spec"):
        snapshot_of({"session_id": "s", "tool_calls": [
            {"turn_id": "t", "tool_call_id": "c", "tool": "x", "status": "nonsense",
             "error": "", "idempotency_key": "s/t/c"}], "messages": []})


def test_a_missing_server_binary_is_one_line_naming_the_install(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(server.ENV, str(tmp_path / "nothing"))
    with pytest.raises(SpecError, match="no file"):
        server.binary()
    monkeypatch.delenv(server.ENV)
    monkeypatch.setattr(server, "PREFIX", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SpecError, match=r"npm install --prefix \.restate"):
        server.binary()


def _notes(path: Path, *notes: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(n) + "\n" for n in notes) + '{"type": "star')
    return path


@pytest.mark.clause("D-5", "TC-AMO-2")
def test_the_server_log_takes_hand_outs_from_notes_and_the_journal(tmp_path: Path) -> None:
    """Two runs of one call's closure noted by two workers are two hand-outs, however many Run
    commands the journal holds; a Run command no note names is a hand-out to an unknown
    worker; the n-th Run notification is the n-th run's result, delivered by the run that ended
    last before it, whichever file noted it; an answer is taken when its handler judged it,
    not when its note was written."""
    files = [_notes(tmp_path / "w2.events",
                    {"type": "started", "at": 3.0, "worker": "w2-2", "attempt": "s/t/c#w2-2.1",
                     "key": "s/t/c", "tool": "cancel_order"},
                    {"type": "ended", "at": 3.5, "worker": "w2-2", "attempt": "s/t/c#w2-2.1",
                     "ok": True},
                    {"type": "answer_taken", "at": 2.9, "worker": "w2-2", "key": "s/t/c",
                     "approve": True, "wall": 1_000_000.5},
                    {"type": "answer_taken", "at": 0.7, "worker": "w2-2", "key": "s/t/c",
                     "approve": True}),
             _notes(tmp_path / "w3.events",
                    {"type": "started", "at": 1.0, "worker": "w3-3", "attempt": "s/t/c#w3-3.1",
                     "key": "s/t/c", "tool": "cancel_order"})]
    offset = 1_000_000.0
    journal = [
        {"target": "ToolCall/s/t/c/run_call", "entry_type": "Command: Run", "name": "tool",
         "appended_at": "1970-01-12T13:46:40.900Z"},
        {"target": "ToolCall/s/t/c/run_call", "entry_type": "Notification: Run", "name": "",
         "appended_at": "1970-01-12T13:46:43.600Z"},
        {"target": "ToolCall/s/t/d/run_call", "entry_type": "Command: Run", "name": "tool",
         "appended_at": "1970-01-12T13:46:44.000Z"},
    ]
    log = server_log(journal, files, offset)
    handed = [e for e in log.entries if isinstance(e, h.HandedOut)]
    assert [(e.worker, e.key) for e in handed] == [
        ("w3-3", "s/t/c"), ("w2-2", "s/t/c"), (UNKNOWN_WORKER, "s/t/d")]
    [delivered] = [e for e in log.entries if isinstance(e, h.ResultDelivered)]
    assert (delivered.worker, delivered.ok) == ("w2-2", True)
    assert delivered.at == pytest.approx(3.6)
    [answered] = [e for e in log.entries if isinstance(e, h.ApprovalAnswered)]
    assert answered.at == pytest.approx(0.5)
    assert [(r.worker, r.ok) for r in log.run_ends] == [("w2-2", True)]
