"""The people around the executor: the agent's model running sessions and turns, the people
who answer approvals, and the reconcile job.

The model asks the tool calls of a turn, waits until each has a record (from the AgentEvents
stream, or from the snapshot when an event never came), thinks, and asks the next turn; after
a failed or unknown record it may ask the same tool again (TC-REC-2, TC-AMO-4). People approve,
reject, miss the deadline, answer late or twice (D-7). The reconcile job reads the snapshot,
picks the outcome_unknown calls no user message names yet (spec.reconcile) and reports each
with `send_user_message`; it may die after a send, and is simply run again (TC-RCN-ONCE).
"""

from __future__ import annotations

from collections.abc import Callable

from atmostonce.check.history import entries as h
from atmostonce.check.history.policies import PolicyBook
from atmostonce.sim.ledger import Ledger
from atmostonce.sim.loop import Handler, Loop
from atmostonce.sim.members import FLIP, MISS, OUTCOME_UNKNOWN, REJECT, TWICE
from atmostonce.sim.server import SimServer
from atmostonce.sim.workload import CallPlan, RunPlan, SessionPlan, Workload
from atmostonce.spec import protocol as p
from atmostonce.spec.reconcile import pending_reports, report_text
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus

SETTLE = 4.0
"""Seconds from the end of the workload to the final checks; reconcile runs twice meanwhile."""
WATCHDOG = 25.0
"""Seconds a turn waits for its records before the model reads the snapshot."""
REPORT_SOURCE = "the service ledger"
_ASK_AGAIN = (ToolCallStatus.FAILED, ToolCallStatus.OUTCOME_UNKNOWN)


class CallRun:
    """A call the model asked, and the runs of its tool so far."""

    __slots__ = ("depth", "key", "plan", "runs", "session", "status", "tool")

    def __init__(self, key: str, session: SessionRun, plan: CallPlan, depth: int) -> None:
        self.key = key
        self.session = session
        self.plan = plan
        self.tool = plan.tool
        self.depth = depth
        self.runs = 0
        self.status: ToolCallStatus | None = None

    def next_run(self) -> RunPlan:
        runs = self.plan.runs
        plan = runs[min(self.runs, len(runs) - 1)]
        self.runs += 1
        return plan


class SessionRun:
    __slots__ = ("again", "asking", "done", "pending", "plan", "turn", "turns_asked")

    def __init__(self, plan: SessionPlan) -> None:
        self.plan = plan
        self.turn = 0
        self.turns_asked = 0
        self.pending: set[str] = set()
        self.again: list[CallRun] = []
        self.asking = False
        self.done = False


class SimulatedAgents:
    """The model, the people and the reconcile job of one simulation."""

    def __init__(self, loop: Loop, server: SimServer, workload: Workload,
                 policies: PolicyBook, ledger: Ledger, by_args: dict[str, CallRun],
                 quiesce: Callable[[], None], finalize: Handler) -> None:
        """`policies` are the policies in force, as the people and the model see them;
        `ledger` is where the reconcile job reads what tools did; `by_args` is filled with
        each call asked, by its arguments, for the server and the workers to name it by; once
        every session is done, `quiesce` ends the faults and `finalize`, scheduled a settling
        time later, ends the run."""
        self.loop = loop
        self.server = server
        self.workload = workload
        self.policies = policies
        self.ledger = ledger
        self.quiesce = quiesce
        self.finalize = finalize
        self.sessions: dict[str, SessionRun] = {}
        self.calls: dict[str, CallRun] = {}
        self.by_args = by_args
        self.left = 0
        self.asked = 0
        self.requests = 0
        self.spares = 0
        self.own_spares = dict(workload.spares_by_tool)
        self.own_taken: dict[str, int] = {}
        self.reconcile_due: set[str] = set()
        self.unknown_sessions: dict[str, None] = {}
        self.reports = 0
        self.reconcile_crashes = 0
        """Reconcile runs still to die after their first send (the fault schedule arms them;
        quiescence clears them)."""
        self.seen: dict[str, tuple[ToolCallStatus, str, tuple[str, ...]]] = {}
        self.awaiting: set[str] = set()
        """Calls that wait for approval and nobody answered yet, as the people see them."""

    def start(self) -> None:
        at = self.loop.at
        for plan in self.workload.sessions:
            at(plan.start, self._open, plan)
            self.left += 1

    # -- the model ------------------------------------------------------------------------------

    def _open(self, plan: SessionPlan, _b: object) -> None:
        loop = self.loop
        run = SessionRun(plan)
        self.sessions[plan.session_id] = run
        lowers = plan.hints_may_lower
        self.policies.set_default(plan.session_id, plan.default_effect, lowers)
        loop.record(h.SessionOpened(loop.now, plan.session_id, plan.default_effect,
                                    None if lowers else False))
        self.server.feed(p.OpenSession(loop.now, plan.session_id, plan.default_effect, lowers))
        self._turn(run, None)

    def _turn(self, run: SessionRun, _b: object) -> None:
        """Ask the next turn's calls: first the tools asked again, then the planned ones."""
        plans: list[tuple[CallPlan, int]] = [(c.plan, c.depth) for c in run.again]
        run.again = []
        if run.turn < len(run.plan.turns):
            taken = {cp.tool for cp, _ in plans}
            plans += [(cp, 0) for cp in run.plan.turns[run.turn] if cp.tool not in taken]
            run.turn += 1
        if not plans:
            self._session_done(run)
            return
        run.turns_asked += 1
        turn_id = f"t{run.turns_asked}"
        run.asking = True
        for plan, depth in plans:
            self._ask(run, turn_id, plan, depth)
        run.asking = False
        if run.pending:
            loop = self.loop
            loop.at(loop.now + WATCHDOG, self._watchdog, run, run.turns_asked)
        else:
            self._next_turn(run)

    def _ask(self, run: SessionRun, turn_id: str, plan: CallPlan, depth: int) -> None:
        loop = self.loop
        self.asked += 1
        number = self.asked
        session_id = run.plan.session_id
        call_id = f"c{number}"
        key = f"{session_id}/{turn_id}/{call_id}"
        arguments = f'{{"n": {number}}}'
        call = CallRun(key, run, plan, depth)
        self.calls[key] = call
        self.by_args[arguments] = call
        run.pending.add(key)
        loop.record(h.CallAsked(loop.now, key, session_id, turn_id, call_id, plan.tool,
                                arguments, plan.deadline))
        self.server.feed(p.Ask(loop.now, session_id, turn_id, call_id, plan.tool, arguments,
                               plan.deadline))
        if call.status is None and self.policies.now(plan.tool, session_id).requires_approval:
            self.awaiting.add(key)
            self._person(call)
        elif plan.stray:
            loop.at(loop.now + plan.answer_after, self._answer, key, True)

    def on_record(self, key: str, status: ToolCallStatus) -> None:
        """A call's record reached the model: the turn goes on once every call has one."""
        call = self.calls.get(key)
        if call is None or call.status is not None:
            return
        call.status = status
        self.awaiting.discard(key)
        run = call.session
        run.pending.discard(key)
        if status is OUTCOME_UNKNOWN:
            self._reconcile_soon(run.plan.session_id)
        if status in _ASK_AGAIN and call.plan.reask and call.depth < 2:
            run.again.append(CallRun("", run, self._spare(call.tool), call.depth + 1))
        if not run.pending and not run.asking:
            self._next_turn(run)

    def _spare(self, tool: str) -> CallPlan:
        """The next spare plan for a call of `tool` the model asks again: from the tool's own
        pool when it has one, else from the shared pool, given the tool's name."""
        own = self.own_spares.get(tool)
        if own is None:
            spares = self.workload.spares
            spare = spares[self.spares % len(spares)]
            self.spares += 1
            return spare._replace(tool=tool)
        taken = self.own_taken.get(tool, 0)
        self.own_taken[tool] = taken + 1
        return own[taken % len(own)]

    def _next_turn(self, run: SessionRun) -> None:
        think = run.plan.think[min(run.turns_asked, len(run.plan.think) - 1)]
        loop = self.loop
        loop.at(loop.now + think, self._turn, run)

    def _watchdog(self, run: SessionRun, turn: int) -> None:
        if run.turns_asked != turn or not run.pending or run.done:
            return
        self.observe(run.plan.session_id, self.server.executor.snapshot(run.plan.session_id))
        if run.pending and run.turns_asked == turn:
            loop = self.loop
            loop.at(loop.now + WATCHDOG, self._watchdog, run, turn)

    def _session_done(self, run: SessionRun) -> None:
        if run.done:
            return
        run.done = True
        self.left -= 1
        if self.left == 0:
            loop = self.loop
            self.quiesce()
            loop.at(loop.now + 1.0, self._final_reconcile)
            loop.at(loop.now + 2.5, self._final_reconcile)
            loop.at(loop.now + SETTLE, self.finalize)

    # -- the snapshot -----------------------------------------------------------------------------

    def observe(self, session_id: str, snapshot: AgentSnapshot) -> None:
        """Record every change of a call's status, error or tool results in the snapshot."""
        loop = self.loop
        seen = self.seen
        results = h.tool_results(session_id, snapshot)
        for view in snapshot.tool_calls:
            key = f"{session_id}/{view.turn_id}/{view.tool_call_id}"
            shown = results.get(key, ())
            now = (view.status, view.error, shown)
            if seen.get(key) != now:
                seen[key] = now
                loop.record(h.SnapshotSeen(loop.now, key, view.status, view.error,
                                           view.idempotency_key, h.unreached_of(view), shown,
                                           h.kept_of(view), h.progress_of(view)))
                if view.status.final:
                    self.on_record(key, view.status)

    def observe_all(self) -> None:
        server = self.server
        for session_id in self.sessions:
            self.observe(session_id, server.executor.snapshot(session_id))

    # -- people -----------------------------------------------------------------------------------

    def _person(self, call: CallRun) -> None:
        """D-7: approve, reject, never answer, answer late, twice, or change one's mind."""
        at = self.loop.at
        plan = call.plan
        person = plan.person
        first = self.loop.now + plan.answer_after
        if person is MISS:
            return
        at(first, self._answer, call.key, person is not REJECT)
        if person is TWICE:
            at(first + plan.second_after, self._answer, call.key, True)
        elif person is FLIP:
            at(first + plan.second_after, self._answer, call.key, False)

    def _answer(self, key: str, approve: bool) -> None:
        self.awaiting.discard(key)
        self.requests += 1
        request = f"answer-{self.requests}"
        self.server.request(p.Answer(self.loop.now, request, key, approve))

    # -- the reconcile job ------------------------------------------------------------------

    def _reconcile_soon(self, session_id: str) -> None:
        self.unknown_sessions[session_id] = None
        if session_id not in self.reconcile_due:
            self.reconcile_due.add(session_id)
            loop = self.loop
            loop.at(loop.now + 0.5 + 2.5 * loop.rnd(), self._reconcile, session_id)

    def _reconcile(self, session_id: str, _b: object = None) -> None:
        """TC-RCN-ONCE: read the history first, report each unknown call no user message names
        yet, and never retry a send; a crash after a send just means another run later."""
        self.reconcile_due.discard(session_id)
        loop = self.loop
        server = self.server
        snapshot = server.executor.snapshot(session_id)
        self.observe(session_id, snapshot)
        sent = 0
        crashed = False
        for pending in pending_reports(session_id, snapshot.messages):
            text = report_text(REPORT_SOURCE, self.ledger.finding(pending.key), pending.key)
            self.requests += 1
            request = f"report-{self.requests}"
            server.request(p.UserMessage(loop.now, request, session_id, text))
            sent += 1
            self.reports += 1
            if self.reconcile_crashes > 0:
                self.reconcile_crashes -= 1
                crashed = True
                break
        loop.record(h.ReconcileRan(loop.now, session_id, sent, crashed))
        if crashed:
            self._reconcile_soon(session_id)

    def _final_reconcile(self, _a: object, _b: object) -> None:
        """Run the job again for every session that ever had an unknown call: a rerun must send
        nothing new (TC-RCN-ONCE)."""
        for session_id in self.unknown_sessions:
            self._reconcile(session_id)
