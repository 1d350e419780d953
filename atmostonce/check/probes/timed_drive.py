"""A fresh or recovered executor driven through the protocol on a clock that timers advance:
each batch the host carried out noted with the journal entries it persisted, every timer kept
with the time it is due, so a probe can cut the journal inside any batch and drive what it
recovers to quiescence (what the crash probe uses)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from atmostonce.check.probes.drive import Drive
from atmostonce.spec.protocol import (
    Answer,
    Command,
    Connected,
    DropWorker,
    Executor,
    Finished,
    GoAhead,
    Publish,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.session import ToolCallStatus, ToolCallView

IN_PROGRESS = (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.RUNNING)


@dataclass(frozen=True)
class Batch:
    """One event's commands: the journal entries `start`..`end` it persisted, the time it came
    at and the keys of the calls whose records it published."""

    label: str
    at: float
    start: int
    end: int
    published: tuple[str, ...]


class TimedDrive(Drive):
    """A `Drive` over several sessions that also keeps when each running timer is due and
    each batch the host carried out."""

    def __init__(self, executor: Executor, sessions: Sequence[str], clock: float = 0.0) -> None:
        super().__init__(executor, sessions[0])
        self.sessions = tuple(sessions)
        self.clock = clock
        self.due: dict[str, float] = {}
        """When each running timer is due."""
        self.batches: list[Batch] = []
        self.dropped: set[str] = set()
        self.batch_start = 0
        """Where the journal stood when the batch being carried out began."""

    def took(self, label: str, commands: list[Command]) -> list[Command]:
        """Note the batch: the journal entries it persisted and the records it published."""
        published = [f"{c.event.session_id}/{c.event.turn_id}/{c.event.tool_call_id}"
                     for c in commands if isinstance(c, Publish)]
        self.batches.append(Batch(label, self.clock, self.batch_start, len(self.journal),
                                  tuple(published)))
        self.batch_start = len(self.journal)
        return commands

    def start_timer(self, command: StartTimer) -> None:
        self.due[command.timer] = self.clock + command.delay

    def stop_timer(self, timer: str) -> None:
        self.due.pop(timer, None)

    def drop_worker(self, command: DropWorker) -> None:
        self.dropped.add(command.worker)

    def fire(self, kind: TimerKind, subject: str) -> bool:
        """Fire the running timer of `kind` about `subject` (a call's key, an attempt or a
        worker) when it is due; False when there is none."""
        for timer, due in sorted(self.due.items(), key=lambda item: item[1]):
            start = self.host.timers[timer]
            if start.kind is kind and subject in (start.key, start.subject):
                self._fire_due(timer, due)
                return True
        return False

    def fire_next(self) -> bool:
        """Fire the timer due first; False when none runs."""
        if not self.due:
            return False
        timer, due = min(self.due.items(), key=lambda item: item[1])
        self._fire_due(timer, due)
        return True

    def _fire_due(self, timer: str, due: float) -> None:
        del self.due[timer]
        self.clock = max(self.clock, due - 1.0)
        self._fire(timer)

    def poll(self, worker: str) -> GoAhead | None:
        """The go-ahead a poll of `worker` got; a worker the executor dropped connects first."""
        if worker in self.dropped:
            self.dropped.discard(worker)
            self.send(Connected, worker)
        return super().poll(worker)

    def views(self) -> dict[str, ToolCallView]:
        """Every call the sessions show, by key."""
        return {f"{session}/{view.turn_id}/{view.tool_call_id}": view
                for session in self.sessions for view in self.executor.snapshot(session).tool_calls}

    def settle(self, workers: Sequence[str], results: Mapping[str, tuple[bool, str]],
               answers: Mapping[str, bool], limit: int) -> bool:
        """Drive to quiescence: every worker polls and finishes what it gets with the result its
        arguments name, a waiting call is answered as `answers` says, and otherwise the timer
        due first fires; True once every call shows a record, False after `limit` rounds."""
        asked: set[str] = set()
        for _ in range(limit):
            views = self.views()
            if all(view.status not in IN_PROGRESS for view in views.values()):
                return True
            handed = False
            for worker in workers:
                go = self.poll(worker)
                if go is not None:
                    handed = True
                    ok, output = results.get(go.arguments, (True, ""))
                    self.send(Finished, worker, go.attempt, ok, output)
            if handed:
                continue
            waiting = [key for key, view in views.items() if key in answers and key not in asked
                       and view.status is ToolCallStatus.AWAITING_APPROVAL]
            for key in waiting:
                asked.add(key)
                self.send(Answer, f"settle-{key}", key, answers[key])
            if not waiting and not self.fire_next():
                return False
        return False
