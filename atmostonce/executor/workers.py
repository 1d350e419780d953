"""The rules about workers: a worker connecting, polling for work, starting and finishing a run,
and falling silent until it is declared lost; an attempt lost with its worker (TC-AMO-1,
TC-AMO-2, TC-AMO-3, TC-REC-LOST, TC-REC-SUCC, D-3, D-5, D-6, D-12).
"""

from __future__ import annotations

from atmostonce.executor import journal
from atmostonce.executor.attempts import AttemptRules
from atmostonce.executor.members import (
    HANDED,
    HEARTBEAT,
    QUEUED,
    RETURNED,
    STARTED,
    TOOL_FAILED,
    WORKER_LOST,
)
from atmostonce.executor.state import Attempt, Worker
from atmostonce.executor.timers import timer_id
from atmostonce.spec.protocol import (
    Command,
    Connected,
    DropWorker,
    Finished,
    Heartbeat,
    NoWork,
    Persist,
    Poll,
    Started,
    StartTimer,
)


class WorkerRules(AttemptRules):
    """Workers (TC-AMO-1, TC-REC-LOST, D-12)."""

    def touch(self, name: str, out: list[Command]) -> Worker:
        """Any message from a worker shows it is up and restarts its heartbeat timeout; an
        unknown or lost worker is (re)connected (D-12)."""
        worker = self.state.workers.get(name)
        if worker is None:
            beat = StartTimer(timer_id(HEARTBEAT, name), self.config.heartbeat_timeout,
                              HEARTBEAT, name)
            worker = Worker(name, beat, NoWork(name))
            self.state.workers[name] = worker
        out.append(worker.heartbeat)
        return worker

    def on_connected(self, event: Connected) -> list[Command]:
        """A worker connected. If the executor thought that worker held an attempt, the attempt
        is lost to its worker (TC-REC-LOST); its run may go on only if the worker lists it as
        still running, and then, for a single-attempt call, the fence counts it (TC-AMO-3, D-6).
        Abandoned runs the worker does not list are over."""
        out: list[Command] = []
        worker = self.touch(event.worker, out)
        held = worker.holding
        if held is not None:
            going = held.id in event.running
            self.lose_attempt(held, event.at, out, may_go_on=going and self.single(held.call))
        for attempt in sorted(self.state.abandoned_at.get(event.worker, set())):
            if attempt not in event.running and self.state.run_over(attempt, event.worker):
                out.append(Persist(journal.run_over_entry(event.at, attempt, event.worker)))
        return out

    def on_poll(self, event: Poll) -> list[Command]:
        """An idle worker asks for work: one attempt at a time, the oldest the fence lets go
        (TC-AMO-1, D-5, D-6)."""
        out: list[Command] = []
        worker = self.touch(event.worker, out)
        attempt = None if worker.holding is not None else self.next_attempt()
        if attempt is None:
            out.append(worker.no_work)
        else:
            self.hand_out(worker, attempt, event.at, out)
        return out

    def on_started(self, event: Started) -> list[Command]:
        """The worker started the tool on its go-ahead; the run timeout starts again (D-9)."""
        out: list[Command] = []
        self.touch(event.worker, out)
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.phase is HANDED and \
                attempt.worker == event.worker:
            attempt.phase = STARTED
            attempt.started_at = event.at
            out.append(self.run_timer(attempt))
        return out

    def on_heartbeat(self, event: Heartbeat) -> list[Command]:
        out: list[Command] = []
        self.touch(event.worker, out)
        return out

    def on_finished(self, event: Finished) -> list[Command]:
        """The tool returned or reported a failure. For the attempt its worker holds, that ends
        it (TC-REC-SUCC, D-3); otherwise it only says a run is over (TC-AMO-3, TC-REC-1)."""
        out: list[Command] = []
        self.touch(event.worker, out)
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.phase is not QUEUED and \
                attempt.worker == event.worker:
            end = RETURNED if event.ok else TOOL_FAILED
            self.end_attempt(attempt, end, event.at, out, output=event.output)
        else:
            self.late_finished(event, out)
        return out

    def late_finished(self, event: Finished, out: list[Command]) -> None:
        """A run the executor had given up on is over; it never changes a record (TC-REC-1), and
        the fence stops counting it (D-6)."""
        if self.state.run_over(event.attempt, event.worker):
            out.append(Persist(journal.run_over_entry(event.at, event.attempt, event.worker)))

    def lose_attempt(self, attempt: Attempt, at: float, out: list[Command],
                     may_go_on: bool) -> None:
        """The attempt's worker stopped or lost its connection after the hand-out, so the tool
        may have run (TC-REC-LOST, TC-AMO-2)."""
        self.end_attempt(attempt, WORKER_LOST, at, out, may_go_on=may_go_on)

    def on_heartbeat_timeout(self, name: str, at: float) -> list[Command]:
        out: list[Command] = []
        self.declare_lost(name, at, out)
        return out

    def declare_lost(self, name: str, at: float, out: list[Command]) -> None:
        """The worker was silent for the heartbeat timeout: its attempt is lost, and its runs
        are over, since its lease ran out first (TC-REC-LOST, D-12)."""
        state = self.state
        worker = state.workers.get(name)
        if worker is None and name not in state.abandoned_at:
            return
        if worker is not None:
            if worker.holding is not None:
                self.lose_attempt(worker.holding, at, out, may_go_on=False)
            del state.workers[name]
        if state.runs_over_at(name):
            out.append(Persist(journal.worker_lost_entry(at, name)))
        out.append(DropWorker(name))
