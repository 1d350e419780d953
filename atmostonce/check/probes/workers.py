"""Workers' messages and abandoned runs, probed on a fresh executor with the fence on. A
`Started`, `Heartbeat` or `Finished` from a worker about an attempt another worker holds
changes nothing, and the holder's own messages (its name equal but, as off the wire, never the
same object) go on as usual: its `Started` restarts the run timeout and its `Finished` records
the call. Then runs are given up on, three of one tool and two at one worker, and each ends its
own way: a late `Finished`, the worker reconnecting without listing it, the heartbeat timeout.
After every step the fence must let a new call of each tool go exactly when no abandoned run of
it may still go, on the executor and on one rebuilt from the journal so far; the run of a read
never counts, even once its tool became a write and on a restart after any entry the loss of
its worker wrote (TC-AMO-1, TC-AMO-3, TC-REC-1, TC-REC-SUCC, TC-SNAP-2, D-6, D-8, D-9, D-12).
The model's schedules reach these cases only where they happen to go.
"""

from __future__ import annotations

from dataclasses import replace

from atmostonce.check.probes.drive import Drive
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import (
    Ask,
    Command,
    Connected,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    Heartbeat,
    OpenSession,
    SetPolicy,
    Started,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.session import ToolCallStatus

SESSION = "worker-probe"
FENCED, SECOND = "fenced_write", "second_write"
TURNS, LOST = "turns_to_write", "lost_read"
"""Reads whose policy changes to a write later."""


_WRITE = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)


class _Found(Exception):
    """The first thing the executor did otherwise than the rules say, as one problem line."""


def wire(name: str) -> str:
    """`name` as it arrives off the wire: equal to every other copy, never the same object."""
    return "".join([name[:1], name[1:]])


def probe_workers(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line naming the first thing the executor did otherwise than the rules about
    workers' messages and abandoned runs say; empty when it did none."""
    try:
        _Probe(factory, replace(config, fence=True)).run()
    except _Found as found:
        return [str(found)]
    except SpecError as error:
        return [f"D-6: the executor refused the worker probe: {error}"]
    except Exception as error:
        return [f"D-6: the executor failed on the worker probe: {type(error).__name__}: {error}"]
    return []


class _Probe:
    """The steps, in order, on one executor; every call and checking worker named afresh."""

    def __init__(self, factory: ExecutorFactory, config: ExecutorConfig) -> None:
        self.factory = factory
        self.config = config
        self.drive = Drive(factory(config), SESSION)
        self.asked = 0
        self.checkers = 0
        self.connected: set[str] = set()

    def run(self) -> None:
        drive = self.drive
        for tool in (FENCED, SECOND):
            drive.send(SetPolicy, tool, _WRITE)
        for tool in (TURNS, LOST):
            drive.send(SetPolicy, tool, ToolPolicy(EffectClass.READ))
        drive.send(OpenSession, SESSION, None, True)
        self.foreign_messages()
        self.foreign_late_finished()
        self.runs_of_one_tool()
        self.two_runs_at_one_worker()
        self.reconnect_holding()
        self.reads_never_counted()

    # -- the steps --------------------------------------------------------------------------

    def foreign_messages(self) -> None:
        """Messages from `wa` and `wc` about the attempt `wb` holds change nothing; `wb`'s own
        go on (TC-AMO-1, TC-REC-1, TC-REC-SUCC, D-9)."""
        key = self.ask(FENCED, self.drive)
        for worker in ("wa", "wc"):
            self.connected.add(worker)
            self.drive.send(Connected, wire(worker))
        go = self.hand(key, "wb")
        self.foreigners(key, go, "before its Started")
        commands = self.drive.send(Started, wire("wb"), go.attempt)
        if not _restarts_run_timeout(commands, go.attempt):
            raise _Found(f"D-9: the Started of wb, the worker holding attempt {go.attempt}, did "
                         "not start its run timeout again")
        self.foreigners(key, go, "after its Started")
        self.drive.send(Finished, wire("wb"), go.attempt, True, "done")
        status, _ = self.drive.status(key)
        if status is not ToolCallStatus.SUCCEEDED:
            raise _Found(f"TC-REC-SUCC: the Finished(ok) of wb, the worker holding attempt "
                         f"{go.attempt}, left the call {status.value if status else 'gone'}, "
                         "not succeeded")

    def foreigners(self, key: str, go: GoAhead, when: str) -> None:
        for worker in ("wa", "wc"):
            _, before = self.drive.status(key)
            started = self.drive.send(Started, wire(worker), go.attempt)
            self.drive.send(Heartbeat, wire(worker), go.attempt)
            self.drive.send(Finished, wire(worker), go.attempt, True, "forged")
            status, after = self.drive.status(key)
            what = f"from {worker} about attempt {go.attempt}, which wb holds, {when},"
            if _restarts_run_timeout(started, go.attempt):
                raise _Found(f"D-9: a Started {what} started its run timeout again")
            if key in self.drive.records or status is not ToolCallStatus.RUNNING:
                raise _Found(f"TC-REC-1: a Finished {what} recorded the call "
                             f"{status.value if status else 'gone'}")
            if after != before:
                raise _Found(f"TC-AMO-1: Started, Heartbeat and Finished {what} changed what "
                             f"the snapshot shows of the call: {after!r}, before {before!r}")

    def foreign_late_finished(self) -> None:
        """An abandoned run is over only by its own worker's word (TC-AMO-3, D-6)."""
        key = self.ask(FENCED, self.drive)
        go = self.hand(key, "wb")
        self.give_up(go)
        self.expect({FENCED: True}, f"the run timeout of {go.attempt} at wb")
        _, before = self.drive.status(key)
        for worker in ("wa", "wc"):
            self.drive.send(Finished, wire(worker), go.attempt, True, "forged")
        self.expect({FENCED: True}, f"Finished from wa and wc about {go.attempt}, which "
                                    "only wb ran")
        self.drive.send(Finished, wire("wb"), go.attempt, False, "late")
        _, after = self.drive.status(key)
        if after != before:
            raise _Found(f"TC-REC-1: the late Finished of {go.attempt} changed what the snapshot "
                         f"shows of its recorded call: {after!r}, before {before!r}")
        self.expect({FENCED: False}, f"wb's late Finished of {go.attempt}")

    def runs_of_one_tool(self) -> None:
        """Three abandoned runs of one tool: the fence holds until all are over (D-6)."""
        keys = [self.ask(FENCED, self.drive) for _ in range(3)]
        one, two, three = (self.hand(key, worker)
                           for key, worker in zip(keys, ("wb", "wd", "wi"), strict=True))
        for go in (one, two, three):
            self.give_up(go)
        self.expect({FENCED: True}, f"three runs of {FENCED} were given up on")
        self.drive.send(Connected, wire("wd"), (two.attempt,))
        self.expect({FENCED: True}, f"wd reconnected listing {two.attempt} as running")
        self.drive.send(Finished, wire("wb"), one.attempt, True, "late")
        self.expect({FENCED: True}, f"wb's late Finished of {one.attempt}")
        self.drive.send(Finished, wire("wi"), three.attempt, True, "late")
        self.expect({FENCED: True}, f"wi's late Finished of {three.attempt}, with "
                                    f"{two.attempt} still listed as running at wd")
        self.drive.send(Connected, wire("wd"), ())
        self.expect({FENCED: False}, f"wd reconnected without listing {two.attempt}")

    def two_runs_at_one_worker(self) -> None:
        """Two abandoned runs at one worker, of two tools, one over by a late Finished and the
        other by the heartbeat timeout (D-6, D-12)."""
        first = self.ask(FENCED, self.drive)
        one = self.hand(first, "we")
        self.give_up(one)
        second = self.ask(SECOND, self.drive)
        two = self.hand(second, "we")
        self.give_up(two)
        self.expect({FENCED: True, SECOND: True}, f"runs of {FENCED} and {SECOND} at we were "
                                                  "given up on")
        self.drive.send(Finished, wire("we"), one.attempt, True, "late")
        self.expect({FENCED: False, SECOND: True}, f"we's late Finished of {one.attempt}")
        self.heartbeat_timeout("we")
        self.expect({SECOND: False}, "we was declared lost by its heartbeat timeout")

    def reconnect_holding(self) -> None:
        """A worker reconnecting while it held an attempt: the run goes on only if listed
        (TC-REC-LOST, TC-AMO-3, D-6)."""
        go = self.hand(self.ask(FENCED, self.drive), "wf")
        self.drive.send(Connected, wire("wf"), ())
        self.expect({FENCED: False}, f"wf reconnected without listing {go.attempt}, which it "
                                     "held")
        go = self.hand(self.ask(FENCED, self.drive), "wg")
        self.drive.send(Connected, wire("wg"), (go.attempt,))
        self.expect({FENCED: True}, f"wg reconnected listing {go.attempt}, which it held, as "
                                    "running")
        self.heartbeat_timeout("wg")
        self.expect({FENCED: False}, "wg was declared lost by its heartbeat timeout")

    def reads_never_counted(self) -> None:
        """The run of a call that may be retried never holds the fence back, even once its
        tool became single-attempt: not when its worker reconnects listing it, nor when the
        worker is lost, on a restart after any entry that loss wrote (TC-SNAP-2, D-6, D-8)."""
        listed = self.hand(self.ask(TURNS, self.drive), "wh")
        self.drive.send(Connected, wire("wh"), (listed.attempt,))
        self.drive.send(SetPolicy, TURNS, _WRITE)
        self.expect({TURNS: False}, f"wh reconnected listing {listed.attempt} of a read as "
                                    f"running and {TURNS} became a non_idempotent_write")
        lost = self.hand(self.ask(LOST, self.drive), "wk")
        start = len(self.drive.journal)
        self.heartbeat_timeout("wk")
        for cut in range(start, len(self.drive.journal) + 1):
            rebuilt = self.rebuilt(cut)
            rebuilt.send(SetPolicy, LOST, _WRITE)
            if not self.lets_go(rebuilt, LOST):
                raise _Found(f"D-6: with the fence on, after a restart on the journal up to "
                             f"entry {cut}, while the heartbeat timeout of wk, which held "
                             f"{lost.attempt} of a read, was written, and {LOST} then became "
                             f"a non_idempotent_write, a new call of it was held back, though "
                             "the fence counts no run of a call that may be retried")

    # -- helpers ----------------------------------------------------------------------------

    def ask(self, tool: str, drive: Drive) -> str:
        self.asked += 1
        drive.send(Ask, SESSION, f"t{self.asked}", f"c{self.asked}", tool)
        return f"{SESSION}/t{self.asked}/c{self.asked}"

    def hand(self, key: str, worker: str) -> GoAhead:
        """The go-ahead `worker` gets for the call `key`, connecting it first if it is new."""
        if worker not in self.connected:
            self.connected.add(worker)
            self.drive.send(Connected, wire(worker))
        go = self.drive.poll(wire(worker))
        if go is None:
            raise _Found(f"D-6: worker {worker} polled for the call {key} and got no go-ahead, "
                         "though no run of its tool had been given up on")
        return go

    def give_up(self, go: GoAhead) -> None:
        if not self.drive.fire(TimerKind.RUN_TIMEOUT, go.attempt):
            raise _Found(f"D-9: attempt {go.attempt} got no run timeout")

    def heartbeat_timeout(self, worker: str) -> None:
        if not self.drive.fire(TimerKind.HEARTBEAT_TIMEOUT, worker):
            raise _Found(f"D-12: worker {worker} got no heartbeat timeout")

    def expect(self, held: dict[str, bool], after: str) -> None:
        """The fence holds each tool back just as `held` says: on an executor rebuilt from the
        journal so far, and then on this one (D-6, D-8)."""
        rebuilt = self.rebuilt(len(self.drive.journal))
        for drive, where in ((rebuilt, f"after a restart on the journal so far, {after}"),
                             (self.drive, f"after {after}")):
            for tool, holds in held.items():
                if self.lets_go(drive, tool) == holds:
                    raise _Found(f"D-6: with the fence on, {where}, a new call of {tool} "
                                 + ("went ahead, though a run of it the executor gave up on "
                                    "might still go" if holds else
                                    "was held back, though no run of it the executor gave up "
                                    "on may still go"))

    def rebuilt(self, cut: int) -> Drive:
        """A fresh executor recovered from the first `cut` entries of the journal."""
        drive = Drive(self.factory(self.config), SESSION)
        drive.clock = self.drive.clock + 1.0
        drive.executor.recover(self.drive.journal[:cut], drive.clock)
        return drive

    def lets_go(self, drive: Drive, tool: str) -> bool:
        """Whether a new call of `tool` gets a go-ahead now; the call then ends either way."""
        key = self.ask(tool, drive)
        self.checkers += 1
        checker = f"checker{self.checkers}"
        drive.send(Connected, checker)
        go = drive.poll(checker)
        if go is None:
            drive.fire(TimerKind.QUEUE_TIMEOUT, key)
            return False
        drive.send(Finished, checker, go.attempt, True, "checked")
        return go.tool == tool


def _restarts_run_timeout(commands: list[Command], attempt: str) -> bool:
    return any(isinstance(c, StartTimer) and c.kind is TimerKind.RUN_TIMEOUT
               and c.subject == attempt for c in commands)
