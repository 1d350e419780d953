"""One trace that `atmostonce check --out` wrote, replayed on the real runtime: a ledger, a
server on its SQLite journal and worker processes on loopback (`processes.Cluster`), each model
step taken as a real action and the observable state compared with the model's after it.

How the steps map: the agent's asks and the people's answers go through the client; a policy
change is a `set_policy`; a hand-out is a fresh worker process for the model's worker, which
polls and takes the one queued attempt, and its go-ahead starts the tool at once; a tool run is
scripted through its gate files (`tools`: the call is asked with a `gate`), so it writes and
returns exactly at the `apply` and `finish` steps; a crash is SIGKILL; a lost connection is
SIGSTOP and its return SIGCONT; a server restart kills the server and starts it on the same
journal and port; time-outs, the heartbeat timeout and the approval deadline are waited for as
conditions, with short timers configured only when the trace has such a step; the reconcile
job sends its reports through the client. After each step the harness waits, bounded, until the
runtime shows what the model shows: every call's status, record and error, its attempt history
(attempts, hand-outs, how the last one ended; not when Started arrived, which a real worker
sends with the start), its reports, the ledger's runs per call and effects per tool.

A process for a model worker lives only while it runs a tool, so that no idle worker can take an
attempt the model hands to another. A step the runtime cannot be made to take when the trace
says is reported as not scriptable, with the reason, and the replay stops there; it is never
counted as agreeing.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.check.lockstep.conformance import reported_counts, status_of_state
from atmostonce.check.lockstep.trace_replay import (
    AGREE,
    DIVERGED,
    NOT_REACHED,
    NOT_SCRIPTABLE,
    LoadedTrace,
    PlannedStep,
    Replay,
    StepOutcome,
    plan,
)
from atmostonce.check.lockstep.views import history_problem
from atmostonce.model import layout as m
from atmostonce.model.config import ToolSpec
from atmostonce.model.layout import State
from atmostonce.model.system import System
from atmostonce.runtime.client import Client
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.processes import Cluster, Managed
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.reconcile import pending_reports, report_text
from atmostonce.spec.records import RejectReason, failure_text, reject_text
from atmostonce.spec.step_kinds import StepKind

SESSION = "s"
DEMO_TOOL = {
    EffectClass.READ: "lookup_order",
    EffectClass.IDEMPOTENT_WRITE: "refund",
    EffectClass.NON_IDEMPOTENT_WRITE: "cancel_order",
    EffectClass.UNCLASSIFIED: "notify_customer",
}
"""The demo tool that stands for a model tool of each effect class (its service matches)."""
SHORT = 2.0
"""Seconds of a time-out, heartbeat timeout or approval deadline the trace waits for."""
LONG = 120.0
"""Seconds of the timers the trace never lets fire, and of a gated run's longest wait."""
SETTLE = 10.0
"""Seconds the harness waits, beyond a timer, for the runtime to show the model's state."""
MOVED = 1.0
"""Seconds the harness still waits once the runtime shows neither the model's state before the
step nor after it: it went elsewhere, and is given this long to arrive after all."""
TIMED = (StepKind.TIME_OUT, StepKind.EXPIRE, StepKind.DEADLINE, StepKind.DETECT)


class Unscriptable(Exception):
    """The runtime cannot be made to take this step when the trace says."""


def executor_config(trace: LoadedTrace, steps: list[PlannedStep]) -> ExecutorConfig:
    """The server's settings: short timers only for the kinds of step the trace waits for."""
    kinds = {step.label[0] for step in steps}
    detect = StepKind.DETECT in kinds
    return ExecutorConfig(
        max_attempts=trace.config.max_attempts, retry_backoff=0.05,
        queue_timeout=SHORT if StepKind.EXPIRE in kinds else LONG,
        run_timeout=SHORT if StepKind.TIME_OUT in kinds else LONG,
        heartbeat_timeout=SHORT if detect else 10.0, lease=SHORT / 2 if detect else 5.0,
        approval_deadline=LONG * 10, fence=trace.config.fence,
        cancel_records_failed=trace.config.cancel_records_failed)


@dataclass
class ModelWorker:
    """What runs a model worker on the runtime: a process while it holds runs, the calls whose
    runs it holds, and how its connection stands (up, paused, restart-cut, crashed, lost)."""

    process: Managed | None = None
    connection: str = "up"
    paused_at: float = 0.0
    runs: set[int] = field(default_factory=set)


class RuntimeReplay:
    """The cluster, its clients and the harness's view of the model's workers and calls."""

    def __init__(self, trace: LoadedTrace, system: System, steps: list[PlannedStep],
                 cluster: Cluster) -> None:
        self.trace = trace
        self.steps = steps
        self.config = trace.config
        self.system = system
        self.cluster = cluster
        self.settings = cluster.config
        self.client: Client = cluster.client()
        self.ledger: LedgerClient = cluster.ledger_client()
        self.workers = [ModelWorker() for _ in range(trace.config.workers)]
        self.keys: list[str] = []
        self.gates: list[Path] = []
        self.deadline_calls = {step.label[1] for step in steps
                               if step.label[0] == StepKind.DEADLINE}
        self.hand_step = -1
        """The call whose hand-out the last step was (its go-ahead starts the tool at once)."""

    def close(self) -> None:
        self.client.close()
        self.ledger.close()

    # -- setting up --------------------------------------------------------------------------

    def set_up(self) -> None:
        effects = [tool.effect for tool in self.config.tools]
        for tool in self.config.tools:
            if effects.count(tool.effect) == 1:
                self.client.set_policy(DEMO_TOOL[tool.effect], tool.initial_policy, tool.hints)
        self.client.open_session(SESSION, self.config.session_default,
                                 hints_may_lower=self.config.hints_may_lower)

    # -- one step ----------------------------------------------------------------------------

    def take(self, step: PlannedStep) -> tuple[str, str]:
        """Take `step` on the runtime; the verdict and what the runtime showed."""
        kind = step.label[0]
        try:
            self._check_scriptable(step)
            getattr(self, f"_do_{kind}")(step)
        except Unscriptable as why:
            return NOT_SCRIPTABLE, f"not scriptable on the runtime ({why})"
        except SpecError as error:
            return DIVERGED, f"the runtime refused the step: {error}"
        started = time.monotonic()
        problem, seen = self._settle(step, SETTLE + (SHORT if kind in TIMED else 0.0))
        waited = time.monotonic() - started
        if kind in (StepKind.FINISH_OK, StepKind.FINISH_FAIL):
            self._retire(step.label[2])
        elif kind == StepKind.DETECT:
            self._gone(step.label[1])
        self.hand_step = step.label[1] if kind == StepKind.HAND else -1
        if problem is not None:
            return DIVERGED, f"{problem} (after waiting {waited:.1f} s); runtime: {seen}"
        if self.compare(step, step.before)[0] is None:
            return AGREE, f"runtime: {seen} (the step changes nothing the snapshot or the " \
                          "ledger shows)"
        return AGREE, f"runtime: {seen}"

    def _check_scriptable(self, step: PlannedStep) -> None:
        kind, a, b = step.label
        if self.hand_step >= 0 and not (kind == StepKind.GO and a == self.hand_step):
            raise Unscriptable("the runtime's worker starts the tool the moment its go-ahead "
                               "arrives, so no step can come between a hand-out and the start")
        if kind in (StepKind.ASK, StepKind.REASK):
            tool = self._tool(step.before, kind, a)
            effects = [t.effect for t in self.config.tools]
            if effects.count(tool.effect) > 1:
                raise Unscriptable(f"the trace has several {tool.effect.value} tools and the "
                                   "runtime's workers one demo tool of each class")
        if kind in (StepKind.HEARTBEAT, StepKind.APPLY, StepKind.FINISH_OK, StepKind.FINISH_FAIL):
            connection = self.workers[b].connection
            if connection == "paused":
                raise Unscriptable(f"worker {b} is paused (SIGSTOP stands for its lost "
                                   "connection), so its tool cannot move")
            if connection == "restart-cut":
                raise Unscriptable(f"worker {b} lost its connection in the server restart and "
                                   "the runtime's worker delivers by itself once its run is "
                                   "over (D-8, D-12), not when the model's reconnect step says")
        if kind == StepKind.APPLY:
            tool = self._tool(step.before, StepKind.REASK, a)
            if tool.effect is EffectClass.NON_IDEMPOTENT_WRITE and self.config.ledger != "plain":
                raise Unscriptable(f"the model's service drops repeats ({self.config.ledger} "
                                   "ledger); the runtime's cancel_order service applies every "
                                   "write")
        if kind in (StepKind.FINISH_OK, StepKind.FINISH_FAIL) and self._queued(step.after):
            raise Unscriptable(f"worker {b} polls the moment its run is over and would take a "
                               "queued attempt the model hands out later")
        if kind == StepKind.HAND:
            worker = self.workers[b]
            if worker.process is not None:
                raise Unscriptable(f"worker {b}'s process still runs a tool; a runtime worker "
                                   "runs one tool at a time")
            if self._queued(step.before) > 1:
                raise Unscriptable("several attempts are queued and the server picks which one "
                                   "a polling worker gets")
        if kind == StepKind.RECONNECT:
            worker = self.workers[a]
            if worker.connection == "restart-cut" and worker.process is not None:
                raise Unscriptable(f"worker {a} does not connect again while its run goes on "
                                   "(D-12); it reconnects only once the run is over")
            if worker.connection == "paused" and \
                    time.monotonic() - worker.paused_at > 0.8 * self.settings.lease:
                raise Unscriptable(f"worker {a} was paused longer than its lease "
                                   f"({self.settings.lease:g} s), so it fences itself when "
                                   "resumed (D-12) where the model's worker goes on")

    def _queued(self, state: State) -> int:
        return sum(1 for c in self.system.calls_of(state) if c[m.AS] == m.A_QUEUED)

    def _tool(self, state: State, kind: str, a: int) -> ToolSpec:
        t = a if kind == StepKind.ASK else self.system.calls_of(state)[a][m.T]
        return self.config.tools[t]

    # -- the actions -------------------------------------------------------------------------

    def _ask(self, tool: ToolSpec) -> None:
        i = len(self.keys)
        gate = self.cluster.workdir / f"gate-{i}"
        self.gates.append(gate)
        deadline = SHORT if i in self.deadline_calls else None
        key = self.client.ask(SESSION, f"turn-{i}", f"call-{i}", DEMO_TOOL[tool.effect],
                              {"gate": str(gate), "duration": LONG},
                              approval_deadline=deadline)
        self.keys.append(key)

    def _do_ask(self, step: PlannedStep) -> None:
        self._ask(self._tool(step.before, StepKind.ASK, step.label[1]))

    def _do_reask(self, step: PlannedStep) -> None:
        self._ask(self._tool(step.before, StepKind.REASK, step.label[1]))

    def _do_change_policy(self, step: PlannedStep) -> None:
        t = step.label[1]
        tool = self.config.tools[t]
        changed = not (step.before[m.TV] >> t & 1)
        self.client.set_policy(DEMO_TOOL[tool.effect],
                               tool.changed_policy() if changed else tool.initial_policy,
                               tool.hints)

    def _answer(self, step: PlannedStep, approve: bool) -> None:
        key = self.keys[step.label[1]]
        reply = self.client.approve(key) if approve else self.client.reject(key)
        if not reply.accepted:
            raise SpecError(f"the server refused the answer: {reply.text}")

    def _do_approve(self, step: PlannedStep) -> None:
        self._answer(step, True)

    def _do_reject(self, step: PlannedStep) -> None:
        self._answer(step, False)

    def _wait_for_timer(self, step: PlannedStep) -> None:
        """Nothing to do: the server's timer fires by itself, and `take` waits for it."""

    _do_deadline = _do_expire = _do_time_out = _wait_for_timer

    def _do_hand(self, step: PlannedStep) -> None:
        worker = self.workers[step.label[2]]
        worker.process = self.cluster.start_worker(name=f"m{step.label[2]}")
        worker.connection = "up"
        worker.runs.add(step.label[1])

    def _do_go(self, step: PlannedStep) -> None:
        """The go-ahead started the tool already; `take` waits for its run at the ledger."""

    _do_heartbeat = _do_go

    def _release(self, i: int, what: str, text: str) -> None:
        gate = self.gates[i]
        staged = gate.with_name(f"{gate.name}.{what}.staged")
        staged.write_text(text)
        os.replace(staged, gate.with_name(f"{gate.name}.{what}"))

    def _do_apply(self, step: PlannedStep) -> None:
        self._release(step.label[1], "write", "")

    def _finish(self, step: PlannedStep, answer: str) -> None:
        self._release(step.label[1], "return", answer)
        self.workers[step.label[2]].runs.discard(step.label[1])

    def _do_finish_ok(self, step: PlannedStep) -> None:
        self._finish(step, "ok")

    def _do_finish_fail(self, step: PlannedStep) -> None:
        self._finish(step, "fail")

    def _retire(self, w: int) -> None:
        """A worker whose runs are over stops, so that it takes no attempt the model hands
        to another; the next hand-out to it starts a fresh process."""
        worker = self.workers[w]
        if worker.process is not None and not worker.runs:
            worker.process.stop()
            worker.process = None

    def _do_crash(self, step: PlannedStep) -> None:
        worker = self.workers[step.label[1]]
        if worker.process is not None:
            self.cluster.kill(worker.process)
        worker.process, worker.runs, worker.connection = None, set(), "crashed"

    def _do_disconnect(self, step: PlannedStep) -> None:
        worker = self.workers[step.label[1]]
        if worker.process is not None:
            self.cluster.pause(worker.process)
            worker.paused_at = time.monotonic()
        worker.connection = "paused"

    def _do_reconnect(self, step: PlannedStep) -> None:
        worker = self.workers[step.label[1]]
        if worker.process is not None and worker.connection == "paused":
            self.cluster.resume(worker.process)
        worker.connection = "up"

    def _do_detect(self, step: PlannedStep) -> None:
        """The heartbeat timeout fires by itself (`take` waits for it, then `_gone`)."""
        self.workers[step.label[1]].connection = "lost"

    def _gone(self, w: int) -> None:
        """A paused worker the server declared lost is gone for the model, its runs stopped
        when its lease ran out (D-12): its process is killed."""
        worker = self.workers[w]
        if worker.process is not None:
            self.cluster.kill(worker.process)
        worker.process, worker.runs = None, set()

    def _do_rejoin(self, step: PlannedStep) -> None:
        self.workers[step.label[1]].connection = "up"

    def _do_restart(self, step: PlannedStep) -> None:
        self.cluster.restart_server()
        for worker in self.workers:
            if worker.connection in ("up", "paused") and worker.process is not None:
                if worker.connection == "paused":
                    self.cluster.resume(worker.process)
                worker.connection = "restart-cut"

    def _reports(self, only: str | None) -> None:
        snapshot = self.client.get_agent_snapshot(SESSION)
        for pending in pending_reports(SESSION, snapshot.messages):
            if only is None or pending.key == only:
                self.client.send_user_message(SESSION,
                                              report_text("the harness", "checked", pending.key))

    def _do_reconcile(self, step: PlannedStep) -> None:
        self._reports(None)

    def _do_reconcile_crash(self, step: PlannedStep) -> None:
        self._reports(self.keys[step.label[1]])

    def ledger_note(self) -> str:
        """The ledger's runs at the end: the ground truth of what ran, and whether it still
        runs."""
        runs = self.ledger.runs()
        listed = "; ".join(f"{r.tool} for {r.key} on {r.worker}: "
                           f"{'still going' if r.ended is None else r.end}" for r in runs)
        return f"the ledger holds {len(runs)} run{'s' if len(runs) != 1 else ''}" + (
            f": {listed}" if runs else "")

    # -- comparing ---------------------------------------------------------------------------

    def _settle(self, step: PlannedStep, bound: float) -> tuple[str | None, str]:
        """Wait until the runtime shows the model's state after `step`, at most `bound` s, or
        `MOVED` s once it shows neither that state nor the one before the step."""
        deadline = time.monotonic() + bound
        while True:
            problem, seen = self.compare(step, step.after)
            now = time.monotonic()
            if problem is None or now > deadline:
                break
            if self.compare(step, step.before)[0] is not None:
                deadline = min(deadline, now + MOVED)
            time.sleep(0.02)
        return problem, seen

    def compare(self, step: PlannedStep, state: State) -> tuple[str | None, str]:
        """The first difference between the runtime and the model's `state` around `step` (None
        when they agree), and what the runtime shows."""
        snapshot = self.client.get_agent_snapshot(SESSION)
        runs = self.ledger.runs()
        writes = self.ledger.writes()
        views = {v.idempotency_key: v for v in snapshot.tool_calls}
        reported = reported_counts(snapshot)
        problems: list[str] = []
        shown: list[str] = []
        for i, c in enumerate(self.system.calls_of(state)):
            key = self.keys[i]
            view = views.get(key)
            if view is None:
                problems.append(f"call {i} ({key}) is missing from the snapshot")
                continue
            ran = sum(1 for r in runs if r.key == key)
            starting = step.label[0] == StepKind.HAND and step.label[1] == i and state is step.after
            handed = sum(1 for a in view.attempts if a.reached)
            shown.append(f"call {i} {view.status.value}, {len(view.attempts)} attempt"
                         f"{'s' if len(view.attempts) != 1 else ''} ({handed} handed out), "
                         f"{ran} run{'s' if ran != 1 else ''} at the ledger")
            expected = status_of_state(c[m.CS])
            if view.status is not expected:
                problems.append(f"call {i} is {view.status.value} on the runtime but "
                                f"{expected.value} in the model")
            if c[m.FK] and not view.error.startswith(failure_text(m.FAILURE_OF_INDEX[c[m.FK]])):
                problems.append(f"call {i} failed with {view.error!r}, the model says "
                                f"{failure_text(m.FAILURE_OF_INDEX[c[m.FK]])!r}")
            if c[m.CS] == m.C_REJECTED:
                reason = RejectReason.DEADLINE if c[m.G] & m.G_DEADLINE else RejectReason.PERSON
                if view.error != reject_text(reason):
                    problems.append(f"call {i} was rejected with {view.error!r}, the model "
                                    f"says {reject_text(reason)!r}")
            if starting and handed:
                taker = [a for a in view.attempts if a.reached][-1].worker
                process = self.workers[step.label[2]].process
                if process is None or taker not in process.names:
                    problems.append(f"call {i}'s attempt went to {taker}, not to worker "
                                    f"{step.label[2]}'s process")
            history = history_problem(c, view, judge_started=False)
            if history is not None:
                problems.append(f"call {i} {history}")
            model_ran = m.runs_started(c[m.G])
            if ran != model_ran and not (starting and ran == model_ran + 1):
                problems.append(f"the ledger holds {ran} runs of call {i}, the model "
                                f"{model_ran}")
            if c[m.CS] == m.C_UNKNOWN and reported.get(key, 0) != c[m.REP]:
                problems.append(f"call {i} was reported {reported.get(key, 0)} times, the "
                                f"model says {c[m.REP]}")
        effects: list[str] = []
        for t, tool in enumerate(self.config.tools):
            if tool.effect is EffectClass.READ:
                continue
            demo = DEMO_TOOL[tool.effect]
            applied = min(2, sum(1 for w in writes if w.tool == demo and w.applied))
            model = state[m.TE] >> (2 * t) & 3
            effects.append(f"{demo} {applied}")
            if applied != model:
                problems.append(f"the {demo} service applied {applied} writes, the model "
                                f"{model} ({tool.name})")
        seen = "; ".join(shown or ["no calls"]) + f"; effects: {', '.join(effects)}"
        return (problems[0] if problems else None), seen


def replay_runtime(trace: LoadedTrace, executor: str | None,
                   progress: Callable[[str], None] | None = None) -> Replay:
    """Replay `trace` on a cluster started for it (the server runs `executor`, None for the
    reference one), stopped again before this returns, also on an error or Ctrl-C."""
    system, steps = plan(trace)
    replay = Replay("runtime", executor or "the reference executor's server", trace)
    settings = executor_config(trace, steps)
    replay.notes.append(
        f"server timers: run {settings.run_timeout:g} s, queue {settings.queue_timeout:g} s, "
        f"heartbeat {settings.heartbeat_timeout:g} s, lease {settings.lease:g} s; approval "
        f"deadline {SHORT:g} s for the calls whose deadline the trace lets pass")
    if trace.config.ledger != "plain":
        replay.notes.append(f"the model's ledger is {trace.config.ledger}; the runtime's "
                            "non-idempotent service applies every write")
    with tempfile.TemporaryDirectory(prefix="atmostonce-replay-") as workdir, \
            Cluster(workdir, config=settings, workers=0, executor=executor) as cluster:
        harness = RuntimeReplay(trace, system, steps, cluster)
        try:
            harness.set_up()
            stopped = False
            for step in steps:
                if stopped:
                    replay.steps.append(StepOutcome(step.number, step.text, NOT_REACHED))
                    continue
                if progress is not None:
                    progress(f"step {step.number}: {step.label[0]}")
                verdict, detail = harness.take(step)
                replay.steps.append(StepOutcome(step.number, step.text, verdict, detail))
                stopped = verdict != AGREE
            replay.notes.append(harness.ledger_note())
        finally:
            harness.close()
    return replay
