"""The reconcile job on the real runtime: it finds a session's outcome_unknown calls, rebuilds
their keys, asks the effect ledger, tells the session with one note per call, and reports each
call exactly once however often it runs, also when it is killed with SIGKILL between a send and
its return and then run again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from atmostonce.engines.proxy import DOWN, Proxy
from atmostonce.runtime.client import Client
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.loop import LoopThread
from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.reconcile import ReconcileRun, ledger_check, report_unknown_outcomes
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.reconcile import reported_keys
from atmostonce.spec.session import (
    OUTCOME_UNKNOWN_TOOL_RESULT,
    MessageRole,
    ToolCallStatus,
)
from tests.load import patience
from tests.runtime.conftest import eventually

CONFIG = ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, retry_backoff=0.1,
                        queue_timeout=30.0, run_timeout=60.0)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(config=CONFIG, workers=2) as started:
        with started.client() as client:
            client.set_policy("cancel_order",
                              ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False))
            client.set_policy("notify_customer",
                              ToolPolicy(EffectClass.UNCLASSIFIED, requires_approval=False))
        yield started


def unknown_calls(cluster: Cluster, session: str) -> tuple[str, str]:
    """Two calls of `session` recorded outcome_unknown by killing their workers mid-run: the
    first after its write took effect, the second before it wrote anything."""
    cluster.respawn_workers()
    with cluster.client() as client, cluster.ledger_client() as ledger:
        client.open_session(session)
        took = client.ask(session, "t1", "c1", "cancel_order", {"order_id": "7", "duration": 60})
        never = client.ask(session, "t1", "c2", "notify_customer",
                           {"order_id": "8", "duration": 60, "write_at": 50})
        eventually("both calls run, the first one wrote",
                   lambda: ledger.runs(never) and ledger.applied(took) == 1)
        for key in (took, never):
            cluster.kill(cluster.worker_of(ledger.runs(key)[0].worker))

        def unknown() -> bool:
            calls = client.get_agent_snapshot(session).tool_calls
            return len(calls) == 2 and all(
                c.status is ToolCallStatus.OUTCOME_UNKNOWN for c in calls)

        eventually("both calls recorded outcome_unknown", unknown)
    cluster.respawn_workers()
    return took, never


def reports_of(client: Client, session: str) -> list[str]:
    """Every key the session's user messages name, once per message that names it."""
    named: list[str] = []
    for message in client.get_agent_snapshot(session).messages:
        named.extend(reported_keys([message]))
    return named


def reconcile_cli(cluster: Cluster, *args: str, env: dict[str, str] | None = None
                  ) -> subprocess.Popen[str]:
    """`atmostonce reconcile ARGS` with the cluster's token file."""
    return subprocess.Popen([sys.executable, "-m", "atmostonce", "reconcile", "--token-file",
                             str(cluster.token_file), *args],
                            cwd=ROOT, env={**os.environ, **(env or {})}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60 * patience())
    return process.returncode, out, err


@pytest.mark.clause("TC-RCN-ONCE", "TC-RCN-TELL", "TC-RCN-KEY", "TC-RCN-ASK")
def test_a_job_killed_between_a_send_and_its_return_then_rerun_reports_each_call_once(
        cluster: Cluster, tmp_path: Path) -> None:
    session = "crash"
    took, never = unknown_calls(cluster, session)
    loop = LoopThread("test-proxy")
    proxy = Proxy(("127.0.0.1", cluster.server_port))
    try:
        port = loop.run(proxy.start(), timeout=10 * patience())
        job = reconcile_cli(cluster, "--session", session, "--server", f"127.0.0.1:{port}",
                            "--check", "tests.reconcile_check:check", "--json",
                            env={"RECONCILE_MARKERS": str(tmp_path)})
        first = tmp_path / "checking-1"
        eventually("the job asks about its first call", first.exists)
        first_key = first.read_text()
        loop.call(lambda: proxy.hold(DOWN))
        (tmp_path / "go").write_text("")
        with cluster.client() as client:
            eventually("the first report joined the history",
                       lambda: first_key in reports_of(client, session))
            time.sleep(0.2)
            assert job.poll() is None, "the job returned although its reply is held"
            os.kill(job.pid, signal.SIGKILL)
            code, out, _ = finished(job)
            assert code == -signal.SIGKILL
            assert out == ""
            assert not (tmp_path / "checking-2").exists()
            assert reports_of(client, session) == [first_key]
    finally:
        loop.run(proxy.close(), timeout=10 * patience())
        loop.close()

    ledger_address = cluster.ledger_address
    code, out, err = finished(reconcile_cli(cluster, "--session", session, "--server",
                                            cluster.server_address, "--ledger", ledger_address,
                                            "--json"))
    assert code == 0, err
    rerun = json.loads(out)
    other = never if first_key == took else took
    assert [r["key"] for r in rerun["reported"]] == [other]
    assert (rerun["unknown"], rerun["already_reported"], rerun["interrupted"]) == (2, 1, None)

    code, out, err = finished(reconcile_cli(cluster, "--session", session, "--server",
                                            cluster.server_address, "--ledger", ledger_address,
                                            "--json"))
    assert code == 0, err
    again = json.loads(out)
    assert (again["reported"], again["already_reported"]) == ([], 2)
    with cluster.client() as client:
        assert sorted(reports_of(client, session)) == sorted([took, never])


@pytest.mark.clause("TC-RCN-FIND", "TC-RCN-KEY", "TC-RCN-ASK", "TC-RCN-TELL", "TC-RCN-ONCE",
                    "TC-RCN-1")
def test_reconcile_finds_each_unknown_call_asks_the_ledger_and_tells_the_session(
        cluster: Cluster) -> None:
    session = "find"
    took, never = unknown_calls(cluster, session)
    with cluster.client() as client:
        snapshot = client.get_agent_snapshot(session)
        assert {c.idempotency_key: c.status for c in snapshot.tool_calls} == {
            took: ToolCallStatus.OUTCOME_UNKNOWN, never: ToolCallStatus.OUTCOME_UNKNOWN}
        assert all(c.error for c in snapshot.tool_calls)
        events = list(client.events(session, past=True, timeout=2.0))
        assert {e.status for e in events} == {ToolCallStatus.OUTCOME_UNKNOWN}
        results = [m for m in snapshot.messages if m.role is MessageRole.TOOL]
        assert all(OUTCOME_UNKNOWN_TOOL_RESULT in m.tool_output for m in results)
        assert {build_key(session, m.turn_id, m.tool_call_id) for m in results} == {took, never}

    host, port = cluster.ledger_address.rsplit(":", 1)

    async def run_job() -> ReconcileRun:
        check, close = ledger_check(host, int(port), cluster.token)
        try:
            async with cluster.async_client() as sessions:
                return await report_unknown_outcomes(sessions, session, check)
        finally:
            close()

    first = asyncio.run(run_job())
    assert first.complete
    assert (first.unknown, first.already_reported) == (2, 0)
    texts = {r.key: r.text for r in first.reports}
    assert set(texts) == {took, never}
    assert all(r.accepted for r in first.reports)
    assert texts[took].startswith("Note from the effect ledger: ")
    assert "one operation with this key: the call took effect" in texts[took]
    assert "took no effect" in texts[never]
    assert texts[never].endswith(f"(tool call {never})")
    with LedgerClient(host, int(port), token=cluster.token) as ledger:
        assert ledger.runs(took)
        assert ledger.runs(never)

    second = asyncio.run(run_job())
    assert (second.reports, second.already_reported, second.complete) == ([], 2, True)
    with cluster.client() as client:
        assert sorted(reports_of(client, session)) == sorted([took, never])
        users = [m for m in client.get_agent_snapshot(session).messages
                 if m.role is MessageRole.USER]
        assert len(users) == 2


@pytest.mark.parametrize(("args", "says"), [
    (["--session", "s1"], "no address: pass --server"),
    (["--session", "a/b", "--server", "127.0.0.1:1"], "contains '/'"),
    (["--session", "s1", "--server", "nowhere"], "must look like HOST:PORT"),
    (["--session", "s1", "--server", "127.0.0.1:1"], "no address: pass --ledger"),
    (["--session", "s1", "--server", "127.0.0.1:1", "--check", "no_such_module:check"],
     "cannot import check module"),
    (["--session", "s1", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1"],
     "cannot reach the atmostonce server"),
    (["--session", "s1", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1",
      "--token-file", "/no/such/token"], "token file /no/such/token does not exist"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    token = tmp_path / "token"
    token.write_text("a-token\n")
    token.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATMOSTONCE_")}
    env["ATMOSTONCE_TOKEN_FILE"] = str(token)
    done = subprocess.run([sys.executable, "-m", "atmostonce", "reconcile", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60 * patience(),
                          check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("atmostonce: error: ")
    assert says in done.stderr
    assert done.stderr.count("\n") == 1


def test_without_a_token_file_reconcile_says_where_to_give_one() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATMOSTONCE_")}
    done = subprocess.run([sys.executable, "-m", "atmostonce", "reconcile", "--session", "s1",
                           "--server", "127.0.0.1:1"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60 * patience(), check=False)
    assert done.returncode == 2
    assert done.stderr == ("atmostonce: error: no token file: pass --token-file PATH or set "
                           "$ATMOSTONCE_TOKEN_FILE\n")
