"""D-4's two choices on the real runtime, for a single-attempt cancel_order whose attempt times
out while its tool goes on and writes later.

By default (Dex's answer) the call is recorded outcome_unknown, and the page's own reconcile
steps report it once. Under D-4's other choice (`serve --cancel-records-failed`), finding F-7:
it is recorded failed, saying the tool may still be running, and its write lands at the service
after that record. The page's reconcile steps never look at it; `atmostonce reconcile
--include-cancelled` reports it once, naming its kind, and a rerun reports nothing new (D-20)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.runtime.processes import Cluster
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.reconcile import reported_keys
from atmostonce.spec.session import MAY_STILL_BE_RUNNING_TOOL_RESULT, MessageRole, ToolCallStatus
from tests.load import patience
from tests.runtime.conftest import eventually, finished

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, run_timeout=0.3)
FAILS = ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, run_timeout=0.3,
                       cancel_records_failed=True)
"""D-4's other choice, which finding F-7 is about."""
NONIDEM = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)
LATE_WRITE = {"order_id": "9", "duration": 4.0, "write_at": 3.0}


def reconcile(cluster: Cluster, session: str, *flags: str) -> tuple[int, dict[str, object]]:
    """`atmostonce reconcile --json` for `session`, asking the cluster's ledger."""
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "reconcile", "--session", session, "--server",
         cluster.server_address, "--ledger", cluster.ledger_address, "--token-file",
         str(cluster.token_file), "--json", *flags],
        cwd=ROOT, env=dict(os.environ), text=True, capture_output=True,
        timeout=60 * patience())
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.clause("D-4", "TC-AMO-3", "TC-REC-EXHAUST-OTHER", "TC-RCN-ONCE", "TC-RCN-FIND")
def test_d4_by_default_a_cancelled_write_is_unknown_and_the_page_steps_report_it_once(
        tmp_path: Path) -> None:
    session = "d4"
    with Cluster(tmp_path, config=CONFIG, workers=1) as cluster, \
            cluster.client() as client, cluster.ledger_client() as ledger:
        client.set_policy("cancel_order", NONIDEM)
        client.open_session(session)
        key = client.ask(session, "t1", "c1", "cancel_order", LATE_WRITE)
        event = finished(client, session, "c1")
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN
        assert event.error.endswith("(attempt progress NOT_COMPLETED)")
        eventually("the cancelled run's write lands", lambda: ledger.applied(key) == 1)

        code, first = reconcile(cluster, session)
        assert code == 0
        assert (first["unknown"], first["cancelled"]) == (1, 0)
        reports = first["reported"]
        assert isinstance(reports, list)
        (report,) = reports
        assert (report["key"], report["kind"], report["accepted"]) == (
            key, "outcome_unknown", True)
        assert "one operation with this key: the call took effect" in report["text"]
        code, rerun = reconcile(cluster, session)
        assert (code, rerun["reported"], rerun["already_reported"]) == (0, [], 1)


@pytest.mark.clause("F-7", "D-20", "D-4", "TC-AMO-3", "TC-RCN-ONCE", "TC-RCN-NOSEARCH",
                    "TC-RCN-NEXT", "TC-KEY-PASS")
def test_f7_a_cancelled_write_lands_after_its_failed_record_and_reconcile_reports_it_once(
        tmp_path: Path) -> None:
    session = "f7"
    with Cluster(tmp_path, config=FAILS, workers=1) as cluster, \
            cluster.client() as client, cluster.ledger_client() as ledger:
        client.set_policy("cancel_order", NONIDEM)
        client.open_session(session)
        key = client.ask(session, "t1", "c1", "cancel_order", LATE_WRITE)
        event = finished(client, session, "c1")
        assert event.status is ToolCallStatus.FAILED
        assert "may still be running" in event.error
        assert ledger.applied(key) == 0, "the write landed before the failed record"

        eventually("the cancelled run's write lands", lambda: ledger.applied(key) == 1)
        (write,) = ledger.writes(key)
        assert (write.key, write.applied) == (key, True)
        (result,) = [m for m in client.get_agent_snapshot(session).messages
                     if m.role is MessageRole.TOOL]
        assert result.tool_output.startswith(MAY_STILL_BE_RUNNING_TOOL_RESULT)
        assert not any(m.role is MessageRole.USER
                       for m in client.get_agent_snapshot(session).messages)

        code, page_steps = reconcile(cluster, session)
        assert code == 0
        assert (page_steps["unknown"], page_steps["reported"]) == (0, [])

        code, first = reconcile(cluster, session, "--include-cancelled")
        assert code == 0
        assert (first["unknown"], first["cancelled"], first["already_reported"]) == (0, 1, 0)
        reports = first["reported"]
        assert isinstance(reports, list)
        (report,) = reports
        assert (report["key"], report["kind"], report["accepted"]) == (
            key, "failed_may_still_be_running", True)
        assert "one operation with this key: the call took effect" in report["text"]

        code, rerun = reconcile(cluster, session, "--include-cancelled")
        assert code == 0
        assert (rerun["reported"], rerun["already_reported"], rerun["interrupted"]) == (
            [], 1, None)

        history = client.get_agent_snapshot(session).messages
        users = [m for m in history if m.role is MessageRole.USER]
        assert len(users) == 1
        assert reported_keys(users) == frozenset({key})
        assert history[-1] == users[0]
        assert history.index(result) < history.index(users[0])
