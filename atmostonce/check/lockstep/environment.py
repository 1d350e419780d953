"""The environment of the model played against the executor under test, for the lockstep
(`atmostonce.check.lockstep.conformance.Lockstep`): one action for each kind of model step
(`_do_KIND`), turned into protocol events: the agent asking, policies changing, people answering,
workers polling, running, reporting, crashing, cut off and back, services applying effects, timers
firing, the server restarting, the reconcile job reporting.
"""

from __future__ import annotations

from atmostonce.check.lockstep.state import (
    SESSION,
    Disagreement,
    LockstepState,
    RunAtWorker,
    Worker,
)
from atmostonce.model import layout as m
from atmostonce.model.layout import Label
from atmostonce.spec import protocol as p
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.reconcile import pending_reports, report_text
from atmostonce.spec.step_kinds import StepKind


class EnvironmentActions(LockstepState):
    """The environment's actions, one per kind of model step."""

    calls_per_turn = 1
    """How many calls in a row the agent's model asks in one turn: call i is in turn
    i // calls_per_turn. The model knows no turns; the executor sees them in the keys."""

    def _new_call(self, tool: int) -> None:
        i = len(self.keys)
        turn = f"turn-{i // self.calls_per_turn}"
        key = f"{SESSION}/{turn}/call-{i}"
        self.keys.append(key)
        self.tools.append(self.config.tools[tool].name)
        self.asked_clock[key] = self.clock
        self._send(p.Ask(self.clock, SESSION, turn, f"call-{i}", self.config.tools[tool].name))

    def _do_ask(self, label: Label) -> None:
        self._new_call(label[1])

    def _do_reask(self, label: Label) -> None:
        self._new_call(self.system.calls_of(self.state)[label[1]][m.T])

    def _do_change_policy(self, label: Label) -> None:
        tool = self.config.tools[label[1]]
        changed = not (self.state[m.TV] >> label[1] & 1)
        if changed:
            self._send(p.SetPolicy(self.clock, tool.name, tool.changed_policy(), tool.hints))
        else:
            self._send(p.SetPolicy(self.clock, tool.name, tool.initial_policy, tool.hints))

    def _answer(self, label: Label, approve: bool) -> None:
        self.requests += 1
        request = f"r{self.requests}"
        self._send(p.Answer(self.clock, request, self.keys[label[1]], approve))
        reply = self.replies.get(request)
        if reply is None or not reply.ok:
            raise Disagreement(f"the executor refused an answer the model accepts: {reply}")

    def _do_approve(self, label: Label) -> None:
        self._answer(label, True)

    def _do_reject(self, label: Label) -> None:
        self._answer(label, False)

    def _do_deadline(self, label: Label) -> None:
        self._fire_kind(p.TimerKind.APPROVAL_DEADLINE, key=self.keys[label[1]])

    def _do_expire(self, label: Label) -> None:
        self._fire_kind(p.TimerKind.QUEUE_TIMEOUT, key=self.keys[label[1]])

    def _do_hand(self, label: Label) -> None:
        worker = self.workers[label[2]]
        self.sent.pop(worker.name, None)
        self._send(p.Poll(self.clock, worker.name))
        handed = self.sent.get(worker.name)
        if handed is None:
            raise Disagreement(f"worker {worker.name} polled and got no work, but the model "
                               f"hands it call {label[1]}'s attempt")
        key = handed[1]
        if key not in self.keys:
            raise Disagreement(f"the go-ahead names an unknown key {key!r}")
        chosen: Label = (StepKind.HAND, self.keys.index(key), label[2])
        self.diverged = self.diverged or chosen != label
        self.hand_outs[key] = self.hand_outs.get(key, 0) + 1
        if chosen not in self.enabled():
            raise Disagreement(f"the executor handed call {chosen[1]}'s attempt to "
                               f"{worker.name}, which the model does not allow")
        self._advance(chosen)

    def _do_go(self, label: Label) -> None:
        i, w = label[1], label[2]
        worker = self.workers[w]
        attempt, key = self.sent.pop(worker.name)
        self.runs[(i, worker.name)] = RunAtWorker(worker.name, attempt, key)

    def _do_heartbeat(self, label: Label) -> None:
        run = self.runs[(label[1], self.workers[label[2]].name)]
        run.started_sent = True
        self._from_worker(self.workers[label[2]], p.Started(self.clock, run.worker, run.attempt))

    def _do_time_out(self, label: Label) -> None:
        """The run timeout fires; the executor must cancel the attempt at the worker it
        handed it to (TC-AMO-3, A-CANCEL-ON-TIMEOUT: the host judges it)."""
        self._fire_kind(p.TimerKind.RUN_TIMEOUT, key=self.keys[label[1]])

    def _do_apply(self, label: Label) -> None:
        run = self.runs[(label[1], self.workers[label[2]].name)]
        tool = self.config.tools[self.system.calls_of(self.state)[label[1]][m.T]]
        name = tool.name
        if tool.effect is EffectClass.NON_IDEMPOTENT_WRITE and self.config.ledger == "plain":
            applies = True
        elif tool.effect is EffectClass.NON_IDEMPOTENT_WRITE and self.config.ledger == "business":
            applies = name not in self.business
            self.business.add(name)
        else:
            applies = run.key not in self.ledger_keys
            self.ledger_keys.add(run.key)
        if applies:
            self.effects[name] = min(2, self.effects.get(name, 0) + 1)

    def _finish(self, label: Label, ok: bool) -> None:
        worker = self.workers[label[2]]
        run = self.runs.pop((label[1], worker.name))
        if not run.started_sent:
            self._from_worker(worker, p.Started(self.clock, run.worker, run.attempt))
        output = f"output of {run.attempt}"
        self.outputs.setdefault(self.keys[label[1]], set()).add(output)
        if not ok:
            self.failures.setdefault(self.keys[label[1]], set()).add(output)
        self._from_worker(worker, p.Finished(self.clock, run.worker, run.attempt, ok, output))

    def _do_finish_ok(self, label: Label) -> None:
        self._finish(label, True)

    def _do_finish_fail(self, label: Label) -> None:
        self._finish(label, False)

    def _kill(self, worker: Worker) -> None:
        for key in [k for k in self.runs if k[1] == worker.name]:
            del self.runs[key]
        worker.held.clear()
        self.sent.pop(worker.name, None)

    def _do_crash(self, label: Label) -> None:
        worker = self.workers[label[1]]
        self._kill(worker)
        worker.connection = "crashed"

    def _do_disconnect(self, label: Label) -> None:
        self.workers[label[1]].connection = "cut"

    def _do_reconnect(self, label: Label) -> None:
        worker = self.workers[label[1]]
        was = worker.connection
        worker.connection = "up"
        if was == "restart-cut":
            running = tuple(run.attempt for run in self.runs.values()
                            if run.worker == worker.name)
            running += tuple(e.attempt for e in worker.held if isinstance(e, p.Finished))
            self._send(p.Connected(self.clock, worker.name, running))
        held, worker.held = worker.held, []
        for event in held:
            self._send(event)

    def _do_detect(self, label: Label) -> None:
        worker = self.workers[label[1]]
        timer = self._timer(p.TimerKind.HEARTBEAT_TIMEOUT, subject=worker.name)
        if timer is not None:
            self._fire(timer)
        self._kill(worker)
        worker.connection = "lost"

    def _do_rejoin(self, label: Label) -> None:
        worker = self.workers[label[1]]
        worker.connection = "up"
        self._send(p.Connected(self.clock, worker.name))

    def _do_restart(self, label: Label) -> None:
        self.sent.clear()
        for worker in self.workers:
            if worker.connection in ("up", "cut"):
                worker.connection = "restart-cut"
        self._restart()

    def _report(self, only: str | None) -> None:
        """The reconcile job: every pending report, or only the one for key `only` before it
        crashes."""
        snapshot = self.executor.snapshot(SESSION)
        for pending in pending_reports(SESSION, snapshot.messages):
            if only is not None and pending.key != only:
                continue
            self.requests += 1
            request = f"r{self.requests}"
            self._send(p.UserMessage(self.clock, request, SESSION,
                                     report_text("the harness", "checked", pending.key)))

    def _do_reconcile(self, label: Label) -> None:
        self._report(None)

    def _do_reconcile_crash(self, label: Label) -> None:
        self._report(self.keys[label[1]])
