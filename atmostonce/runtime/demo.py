"""`atmostonce demo`: one agent session end to end on real processes, explained line by line.

It starts the effect ledger, the server and two workers on loopback, sets each demo tool's
policy, runs a read that succeeds (TC-EFF-READ), a refund that waits for approval and gets it
(TC-APR-3), and an order cancellation whose worker is killed with SIGKILL after the write took
effect, so the call records outcome_unknown (TC-AMO-2, TC-REC-EXHAUST-OTHER). Then it runs the
reconcile job (`atmostonce.runtime.reconcile`, TC-RCN-*) twice, asking the ledger, shows the
AgentEvents it saw and the final snapshot, and cleans up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

from atmostonce.runtime.client import Client
from atmostonce.runtime.ledger_client import LedgerClient, LedgerRun
from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.reconcile import ReconcileRun, as_check, report_unknown_outcomes
from atmostonce.runtime.tools import TOOLS
from atmostonce.spec.policy import resolve_policy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished, ToolCallStatus

SESSION = "demo-session"
CONFIG = ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, retry_backoff=0.2)
WAIT = 15.0


class DemoFailed(Exception):
    pass


class _Demo:
    def __init__(self, out: Callable[[str], None]) -> None:
        self.out = out
        self.started = time.monotonic()

    def say(self, line: str) -> None:
        self.out(f"[{time.monotonic() - self.started:5.1f}s] {line}")

    def detail(self, line: str) -> None:
        self.out(f"         {line}")


def _finished(stream: Iterator[ToolCallFinished], call_id: str) -> ToolCallFinished:
    for event in stream:
        if event.tool_call_id == call_id:
            return event
    raise DemoFailed(f"no tool_call_finished event for {call_id} within {WAIT:g} s")


def _status(client: Client, call_id: str) -> ToolCallStatus:
    for call in client.get_agent_snapshot(SESSION).tool_calls:
        if call.tool_call_id == call_id:
            return call.status
    raise DemoFailed(f"the snapshot does not list {call_id}")


def _output(snapshot: AgentSnapshot, call_id: str) -> str:
    for message in snapshot.messages:
        if message.tool_call_id == call_id:
            return message.tool_output
    return ""


def _run_of(ledger: LedgerClient, key: str) -> LedgerRun:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        runs = ledger.runs(key)
        if runs and ledger.applied(key):
            return runs[0]
        time.sleep(0.02)
    raise DemoFailed(f"the ledger shows no run of {key} that took effect")


def run_demo(out: Callable[[str], None] = print) -> int:
    """Run the demo; 0 when every step went as the spec says, 1 otherwise."""
    demo = _Demo(out)
    demo.say("starting the effect ledger, the server and 2 worker processes on 127.0.0.1")
    with Cluster(config=CONFIG, workers=2, heartbeat_interval=0.25) as cluster:
        assert cluster.ledger is not None
        assert cluster.server is not None
        demo.detail(f"ledger pid {cluster.ledger.pid} at {cluster.ledger_address}; server pid "
                    f"{cluster.server.pid} at {cluster.server_address}, journal "
                    f"{cluster.journal.name} (SQLite, WAL, fsync per group commit)")
        demo.detail("workers: " + ", ".join(f"{w.names[0]} (pid {w.pid})"
                                            for w in cluster.workers))
        demo.detail(f"heartbeat timeout {CONFIG.heartbeat_timeout:g} s, worker lease "
                    f"{CONFIG.lease:g} s")
        with cluster.client() as client, cluster.ledger_client() as ledger:
            try:
                _session(demo, cluster, client, ledger)
            except DemoFailed as failure:
                demo.say(f"FAILED: {failure}")
                return 1
        demo.say("stopping every process and removing the temporary directory")
    demo.say("done")
    return 0


def _session(demo: _Demo, cluster: Cluster, client: Client, ledger: LedgerClient) -> None:
    demo.say("policies (TC-APR-2, D-1):")
    for tool in TOOLS.values():
        client.set_policy(tool.name, tool.policy)
        effective = resolve_policy(tool.policy)
        approval = "waits for approval" if effective.requires_approval else "no approval"
        source = "its ToolPolicy" if tool.policy else "no policy, so unclassified"
        demo.detail(f"{tool.name:<16} {effective.effect.value:<21} {approval:<19} "
                    f"{effective.step.value} ({source})")
    client.open_session(SESSION)
    seen: list[ToolCallFinished] = []
    stream = _recording(client.events(SESSION, past=True, timeout=WAIT), seen)
    demo.say(f"session {SESSION} opened; listening to its AgentEvents stream")

    key = client.ask(SESSION, "turn-1", "call-1", "lookup_order", {"order_id": "1002"})
    demo.say(f"the model asks lookup_order(order 1002): key {key}")
    event = _finished(stream, "call-1")
    run = ledger.runs(key)[0]
    demo.detail(f"{event.status.value} at worker {run.worker}: "
                f"{_output(client.get_agent_snapshot(SESSION), 'call-1')}")

    key = client.ask(SESSION, "turn-1", "call-2", "refund", {"order_id": "1002", "amount": 25})
    demo.say(f"the model asks refund(order 1002, 25): key {key}")
    demo.detail(f"status {_status(client, 'call-2').value}: its policy requires approval")
    reply = client.approve(key)
    demo.say(f"a person approves it: {reply.text}")
    again = client.approve(key)
    demo.detail(f"a second approval changes nothing (D-7): {again.text}")
    event = _finished(stream, "call-2")
    demo.detail(f"{event.status.value}: {_output(client.get_agent_snapshot(SESSION), 'call-2')}"
                f"; the payment service holds {ledger.applied(key)} refund with this key")

    key = client.ask(SESSION, "turn-2", "call-3", "cancel_order",
                     {"order_id": "1002", "duration": 60})
    demo.say(f"the model asks cancel_order(order 1002): key {key}")
    demo.detail(f"status {_status(client, 'call-3').value} (non_idempotent_write); approved: "
                f"{client.approve(key).text}")
    run = _run_of(ledger, key)
    victim = cluster.worker_of(run.worker)
    demo.say(f"worker {run.worker} runs it; the order service already applied the "
             f"cancellation, and the tool is still going")
    cluster.kill(victim)
    killed_at = time.monotonic()
    demo.say(f"killed worker process {victim.pid} with SIGKILL in the middle of the call")
    event = _finished(stream, "call-3")
    if event.status is not ToolCallStatus.OUTCOME_UNKNOWN:
        raise DemoFailed(f"cancel_order recorded {event.status.value}, not outcome_unknown")
    demo.say(f"{time.monotonic() - killed_at:.1f} s later the server declared the worker lost "
             f"(heartbeat timeout {CONFIG.heartbeat_timeout:g} s): {event.status.value}")
    demo.detail(f"error: {event.error}")
    demo.detail("the session never runs it again (TC-AMO-2, TC-RCN-1)")

    demo.say("reconcile (TC-RCN-KEY, TC-RCN-ASK, TC-RCN-TELL):")

    def order_system(key: str, arguments: str) -> str:
        demo.detail(f"the order service holds {ledger.applied(key)} operation(s) with key "
                    f"{key}")
        if ledger.applied(key):
            return "the cancellation of order 1002 went through"
        return "the cancellation of order 1002 did not happen"

    first = asyncio.run(_reconcile(cluster, order_system))
    for report in first.reports:
        demo.detail(f"send_user_message -> {report.accepted}: {report.text!r}")
    rerun = asyncio.run(_reconcile(cluster, order_system))
    demo.detail(f"a second reconcile run finds {len(rerun.reports)} call(s) left to report "
                "(TC-RCN-ONCE)")

    demo.say(f"the AgentEvents stream delivered {len(seen)} tool_call_finished event(s):")
    for event in seen:
        demo.detail(f"{event.turn_id}/{event.tool_call_id} {event.status.value}")
    snapshot = client.get_agent_snapshot(SESSION)
    demo.say("final get_agent_snapshot:")
    for call in snapshot.tool_calls:
        demo.detail(f"{call.idempotency_key:<28} {call.tool:<13} {call.status.value}")
    for message in snapshot.messages:
        text = message.text or message.tool_output
        demo.detail(f"{message.role.value:<5} {text[:110]}")
    demo.say("ground truth from the effect ledger:")
    for run in ledger.runs():
        end = run.end or "no end: its worker was killed"
        demo.detail(f"{run.key:<28} {run.tool:<13} at {run.worker}: {end}")


async def _reconcile(cluster: Cluster, check: Callable[[str, str], str]) -> ReconcileRun:
    """One run of the reconcile job (`atmostonce.runtime.reconcile`) on its own connection."""
    async with cluster.async_client() as client:
        return await report_unknown_outcomes(client, SESSION, as_check(check),
                                             "the order system")


def _recording(stream: Iterator[ToolCallFinished],
               seen: list[ToolCallFinished]) -> Iterator[ToolCallFinished]:
    for event in stream:
        seen.append(event)
        yield event
