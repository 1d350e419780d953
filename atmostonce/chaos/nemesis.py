"""The nemesis: seeded faults injected into a running engine, and the log of what it did.

Five kinds, each at its own mean rate, at moments and on targets drawn from the seed:

- `kill`: a worker process gets SIGKILL mid-whatever (its runs die with it); a fresh worker
  process replaces it a moment later (TC-REC-LOST, TC-AMO-2).
- `pause`: a worker process gets SIGSTOP and, after a while, SIGCONT: a worker that is there
  but silent (D-12).
- `partition`: a worker's connection to the server is cut through its proxy: held (nothing
  passes, nothing is lost) or dropped (reset, new connections refused), as `cuts` allows,
  then healed (D-12).
- `restart`: the server gets SIGKILL and is started again from its journal (D-8); some
  restarts wait until a call waits for approval.
- `disk` (not in the default set; it needs an engine with `DiskFaults`, such as the reference
  one under libfiu): for a window the disk under the engine's server or under the effect
  ledger, drawn from the seed, fails: fsync and fdatasync with EIO, or its writes with EIO or
  ENOSPC. A process that commits then must stop (exit status 4,
  `atmostonce.runtime.disk_faults`) and is started again from its file, counted as a
  `disk-exit` (the server) or a `ledger-disk-exit`; one that lives through the window is killed
  after it and started again from its file too, so that whatever it answered meanwhile must be
  there. The ledger comes back on its address, so workers and the harness find it again; while
  it is down a tool's run start or write goes unanswered, and the tool reports that it did not
  run or that its write failed. No worker is started during a window: the process may stop at
  any moment then, and a worker start waits for both.

Pauses and cuts last less than the lease, between the lease and the heartbeat timeout, or
longer, so every side of D-12 is met. Targets are preferably workers running a tool right now
(the ledger says which), and a worker carries one fault at a time. The nemesis also keeps the
worker count: a worker that ended itself (it fenced itself, D-12) is logged and replaced, and a
server that died on its own is logged as an engine failure and started again. Everything runs
on the caller's thread, which must be the thread that started the engine.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from atmostonce.engines.adapter import CutMode, DiskFaults, Engine, WorkerRef
from atmostonce.runtime.fiu import DiskFault
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig


class NemesisKind(enum.Enum):
    KILL = "kill"
    PAUSE = "pause"
    PARTITION = "partition"
    RESTART = "restart"
    DISK = "disk"


DEFAULT_KINDS = (NemesisKind.KILL, NemesisKind.PAUSE, NemesisKind.PARTITION,
                 NemesisKind.RESTART)
"""The kinds a run injects unless told otherwise: those every engine's processes allow."""

MEAN_GAP: dict[NemesisKind, float] = {
    NemesisKind.KILL: 3.0,
    NemesisKind.PAUSE: 4.0,
    NemesisKind.PARTITION: 4.0,
    NemesisKind.RESTART: 9.0,
    NemesisKind.DISK: 6.0,
}
"""Mean seconds between two faults of a kind, at pace 1; the first of each kind comes within
its mean gap, so that even a short run meets every kind it asks for."""
TICK = 0.05
RESTART_WHILE_WAITING = 0.4
"""How likely a restart waits until a call waits for approval."""
WAITING_TRIES = 60
"""Ticks a restart timed that way waits for such a call before it strikes anyway."""
BUSY_FIRST = 0.7
"""How likely a fault picks a worker that runs a tool, when one does."""
PAUSE_MARGIN = 0.01
"""Seconds a process may still run after SIGSTOP was sent."""
CONSEQUENCES = ("exit", "server-died", "disk-exit", "ledger-disk-exit", "ledger-died")
"""Fault log kinds the nemesis did not inject but saw happen."""
DISK_WINDOW = (0.3, 2.0)
"""Bounds in seconds of a disk fault's window."""
SERVER = "server"
LEDGER = "ledger"
"""The processes whose disk may fail: the engine's server and the effect ledger."""


def now() -> float:
    return time.monotonic()


class EngineFailed(Exception):
    """The engine cannot go on: its server, a worker or the effect ledger did not start."""


class Ledger(DiskFaults, Protocol):
    """The effect ledger as the nemesis fails its disk (`atmostonce.chaos.ledger_process`):
    it can be asked whether it runs, killed, and started again on its file and address."""

    def alive(self) -> bool:
        """Whether the ledger process runs."""

    def kill(self) -> None:
        """SIGKILL it and wait until it is gone."""

    def start(self) -> str:
        """Start it again on its file and address, waiting until it serves; what was started.
        SpecError when it does not serve."""


@dataclass(frozen=True)
class Fault:
    """One fault as it happened: `kind` is kill, pause, partition-hold, partition-drop,
    restart, disk, exit (a worker ended itself), disk-exit (the server stopped on a disk
    fault), ledger-disk-exit (the ledger did), server-died or ledger-died; `end` is when it was
    undone; `target` is the process whose disk failed (server or ledger), for disk faults."""

    kind: str
    start: float
    end: float | None
    worker: str = ""
    names: tuple[str, ...] = ()
    detail: str = ""
    target: str = ""

    def line(self, origin: float) -> str:
        span = f"{self.start - origin:8.3f}s" + (
            f" .. {self.end - origin:8.3f}s" if self.end is not None else " " * 13)
        who = f" {self.worker} ({', '.join(self.names)})" if self.worker else ""
        return f"{span} {self.kind}{who}{': ' + self.detail if self.detail else ''}"


@dataclass
class FaultLog:
    faults: list[Fault] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)
    """When each server restart's kill was complete and every client had heard of it: the
    boundary between two lives of the server."""
    errors: list[str] = field(default_factory=list)
    """What went wrong with the engine itself (a server that died on its own)."""

    def counts(self) -> dict[str, int]:
        """Faults the nemesis injected, by kind."""
        return dict(sorted(Counter(f.kind for f in self.faults
                                   if f.kind not in CONSEQUENCES).items()))

    def summary(self) -> str:
        """The injected faults by kind in one line, such as `kill 3, pause 1`."""
        return ", ".join(f"{kind} {n}" for kind, n in self.counts().items()) or "none"

    def disk_windows(self) -> dict[str, int]:
        """The disk faults' windows by the process whose disk failed (server, ledger)."""
        return dict(sorted(Counter(f.target for f in self.faults if f.kind == "disk").items()))

    def consequences(self) -> dict[str, int]:
        """What the engine did by itself: workers that ended themselves (fenced, D-12), a server
        that died."""
        return dict(sorted(Counter(f.kind for f in self.faults
                                   if f.kind in CONSEQUENCES).items()))


class Nemesis:
    """Injects the chosen kinds of fault into `engine` (see the module docstring)."""

    def __init__(self, engine: Engine, kinds: tuple[NemesisKind, ...], seed: int,
                 config: ExecutorConfig, workers: int, barrier: Callable[[], None],
                 busy: Callable[[], set[str]], say: Callable[[str], None],
                 pace: float = 1.0, cuts: tuple[CutMode, ...] = tuple(CutMode),
                 waiting: Callable[[], bool] = lambda: False, ledger: Ledger | None = None
                 ) -> None:
        """`busy` names the workers running a tool now; `waiting` says whether a call waits
        for approval now, for the restarts timed to strike then; `ledger`, when given, is a
        target of disk faults beside the server, kept running as the server is."""
        self.engine = engine
        self.kinds = kinds
        self.pace = pace
        self.cuts = cuts or tuple(CutMode)
        self.rng = random.Random(f"atmostonce-chaos:{seed}:nemesis")
        self.config = config
        self.workers = workers
        self.barrier = barrier
        self.busy = busy
        self.waiting = waiting
        self.settling = False
        self.say = say
        self.log = FaultLog()
        self.live: dict[str, WorkerRef] = {w.id: w for w in engine.workers()}
        self.faulted: dict[str, tuple[str, float, str]] = {}
        """Worker id -> (fault kind, since, detail) while a pause or cut is on."""
        self.owed = 0
        """Replacement workers still to start."""
        self.server_down_since: float | None = None
        self._todo: list[tuple[float, int, Callable[[], None]]] = []
        self.injected: Counter[NemesisKind] = Counter()
        """Faults injected so far, by kind (a pause counts when it starts)."""
        self._order = itertools.count()
        self.ledger = ledger
        self.disk_on: tuple[int, DiskFault, float, str] | None = None
        """The disk fault on now: its number, what it is, since when, and its target."""
        self._windows = itertools.count(1)

    # -- the loop ------------------------------------------------------------------------------

    def run(self, duration: float, tick: Callable[[], None] = lambda: None,
            at_least: int = 0) -> None:
        """Inject faults for `duration` seconds; `tick` is called every loop. When the time is
        up and a kind has been injected fewer than `at_least` times (a busy machine fits fewer
        in the same seconds), that kind goes on, one fault as soon as a target is free, for at
        most `duration` seconds more."""
        start = now()
        end = start + duration
        due = {kind: start + self.rng.uniform(0.2, 1.0) * MEAN_GAP[kind] / self.pace
               for kind in self.kinds}
        while now() < end or (self.short(at_least) and now() < end + duration):
            self.supervise()
            self._run_due()
            late = now() >= end
            for kind, when in due.items():
                if late and self.injected[kind] >= at_least:
                    continue
                if when <= now() or late:
                    self._inject(kind)
                    due[kind] = now() + self._gap(kind)
            tick()
            time.sleep(TICK)

    def short(self, at_least: int) -> list[NemesisKind]:
        """The kinds asked for that have been injected fewer than `at_least` times."""
        return [kind for kind in self.kinds if self.injected[kind] < at_least]

    def _gap(self, kind: NemesisKind) -> float:
        return self.rng.expovariate(self.pace / MEAN_GAP[kind])

    def _later(self, delay: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._todo, (now() + delay, next(self._order), action))

    def _run_due(self) -> None:
        while self._todo and self._todo[0][0] <= now():
            _, _, action = heapq.heappop(self._todo)
            action()

    def settle(self) -> None:
        """Stop injecting: undo every pause and cut, start the server if it is down and
        replace every worker that is gone."""
        self.settling = True
        if self.disk_on is not None:
            self._disk_over(self.disk_on[0])
        while self._todo:
            _, _, action = heapq.heappop(self._todo)
            action()
        self.supervise()
        while self.owed > 0:
            self._replace()

    # -- keeping the engine whole --------------------------------------------------------------

    def supervise(self) -> None:
        """Notice a server or ledger that died on its own and workers that ended themselves."""
        if self.ledger is not None and not self.ledger.alive():
            self._ledger_gone(self.ledger)
        if self.server_down_since is None and not self.engine.server_alive():
            at = now()
            if isinstance(self.engine, DiskFaults) and self.engine.died_of_disk_fault():
                self._disk_exit(at)
                return
            self.barrier()
            self.log.restarts.append(now())
            self.log.faults.append(Fault("server-died", at, None, detail="not the nemesis"))
            self.log.errors.append(f"the server died on its own at {at:.3f}")
            self._close_window(at, "the server died during it, not of the fault", SERVER)
            self._start_server("the server died on its own; started it again from its journal")
        for wid, ref in list(self.live.items()):
            if wid not in self.faulted and not self.engine.worker_alive(ref):
                del self.live[wid]
                self.log.faults.append(Fault("exit", now(), None, wid, ref.names,
                                             "the worker ended itself"))
                self.owed += 1
                self._later(0.1, self._replace)

    def _start_server(self, what: str) -> None:
        before = set(self.engine.pids())
        try:
            self.engine.start_server()
        except SpecError as error:
            self.log.errors.append(f"the server did not start again: {error}")
            raise EngineFailed(str(error)) from None
        new = sorted(set(self.engine.pids()) - before)
        self.say(f"{what} ({', '.join(f'pid {pid}' for pid in new) or 'no new process'})")

    def _replace(self) -> None:
        if self.owed <= 0:
            return
        if self.server_down_since is not None or self.disk_on is not None:
            self._later(0.1, self._replace)
            return
        self.owed -= 1
        try:
            ref = self.engine.start_worker()
        except SpecError as error:
            self.log.errors.append(f"a worker did not start: {error}")
            raise EngineFailed(str(error)) from None
        self.live[ref.id] = ref
        self.say(f"started worker {ref.id} ({', '.join(ref.names)}, pid {ref.pid})")

    def _target(self) -> WorkerRef | None:
        free = [w for w in self.live.values() if w.id not in self.faulted]
        if not free:
            return None
        if self.rng.random() < BUSY_FIRST:
            running = self.busy()
            busy = [w for w in free if running.intersection(w.names)]
            if busy:
                return self.rng.choice(busy)
        return self.rng.choice(free)

    def _duration(self) -> float:
        """Shorter than the lease, between it and the heartbeat timeout, or longer (D-12)."""
        lease = self.config.lease
        hb = self.config.heartbeat_timeout
        r = self.rng.random()
        if r < 1 / 3:
            return self.rng.uniform(0.1, 0.8 * lease)
        if r < 2 / 3:
            return self.rng.uniform(1.1 * lease, 0.9 * hb)
        return self.rng.uniform(1.1 * hb, 2.0 * hb)

    # -- faults --------------------------------------------------------------------------------

    def _inject(self, kind: NemesisKind) -> None:
        if kind is NemesisKind.DISK:
            self._disk()
            return
        if kind is NemesisKind.RESTART:
            if self.rng.random() < RESTART_WHILE_WAITING:
                self._restart_while_waiting(WAITING_TRIES)
            else:
                self._restart()
            return
        target = self._target()
        if target is None:
            return
        if kind is NemesisKind.KILL:
            self._kill(target)
        elif kind is NemesisKind.PAUSE:
            self._pause(target)
        else:
            self._cut(target)
        self.injected[kind] += 1

    def _kill(self, worker: WorkerRef) -> None:
        self.engine.kill_worker(worker)
        self.live.pop(worker.id, None)
        self.log.faults.append(Fault("kill", now(), None, worker.id, worker.names))
        self.owed += 1
        self._later(self.rng.uniform(0.2, 1.5), self._replace)

    def _pause(self, worker: WorkerRef) -> None:
        self.engine.pause_worker(worker)
        since = now() + PAUSE_MARGIN
        self.faulted[worker.id] = ("pause", since, "")

        def resume() -> None:
            self.engine.resume_worker(worker)
            self.faulted.pop(worker.id, None)
            self.log.faults.append(Fault("pause", since, now(), worker.id, worker.names))

        self._later(self._duration(), resume)

    def _cut(self, worker: WorkerRef) -> None:
        mode = self.rng.choice(self.cuts)
        self.engine.cut(worker, mode)
        since = now()
        self.faulted[worker.id] = ("partition", since, mode.value)

        def heal() -> None:
            self.engine.heal(worker)
            self.faulted.pop(worker.id, None)
            self.log.faults.append(Fault(f"partition-{mode.value}", since, now(), worker.id,
                                         worker.names))

        self._later(self._duration(), heal)

    def _restart_while_waiting(self, tries: int) -> None:
        """Restart the server as soon as a call waits for approval, checking every tick for
        `tries` ticks; restart anyway after that (D-8 with an approval pending)."""
        if self.settling:
            return
        if tries <= 0 or self.waiting():
            self._restart()
        else:
            self._later(TICK, lambda: self._restart_while_waiting(tries - 1))

    def _restart(self) -> None:
        if self.server_down_since is not None:
            return
        at = now()
        self.engine.kill_server()
        self.injected[NemesisKind.RESTART] += 1
        self._close_window(at, "the server was killed and restarted during it", SERVER)
        self.barrier()
        boundary = now()
        self.log.restarts.append(boundary)
        self.server_down_since = at

        def start() -> None:
            self._start_server("restarted the server from its journal")
            self.log.faults.append(Fault("restart", at, now(), detail=f"down "
                                         f"{now() - at:.2f}s"))
            self.server_down_since = None

        self._later(self.rng.uniform(0.0, 0.4), start)

    def _disk(self) -> None:
        """Make the disk of the server or the ledger fail for a window (see the module
        docstring)."""
        engine = self.engine
        if (self.settling or self.server_down_since is not None or self.disk_on is not None
                or not isinstance(engine, DiskFaults)):
            return
        targets: dict[str, DiskFaults] = {SERVER: engine}
        if self.ledger is not None:
            targets[LEDGER] = self.ledger
        target = self.rng.choice(tuple(targets)) if len(targets) > 1 else SERVER
        fault = self.rng.choice(tuple(DiskFault))
        window = self.rng.uniform(*DISK_WINDOW)
        try:
            targets[target].disk_fault(fault)
        except SpecError:
            return
        number = next(self._windows)
        self.disk_on = (number, fault, now(), target)
        self.injected[NemesisKind.DISK] += 1
        self._later(window, lambda: self._disk_over(number))

    def _disk_over(self, number: int) -> None:
        """End window `number` if it is still on: the fault is cleared and its process, which
        lived through it, is killed and started again from its file. A process that is gone by
        now is left to `supervise`, which ends the window with its exit."""
        if self.disk_on is None or self.disk_on[0] != number:
            return
        fault, target = self.disk_on[1], self.disk_on[3]
        if target == LEDGER:
            ledger = self.ledger
            assert ledger is not None
            if not ledger.alive():
                return
            ledger.clear_disk_fault(fault)
            self._close_window(now(), "the ledger lived through it; killed and started again on "
                               "its file", LEDGER)
            ledger.kill()
            self._start_ledger(f"{fault.value} over: restarted the effect ledger on its file")
            return
        if not self.engine.server_alive():
            return
        engine = self.engine
        assert isinstance(engine, DiskFaults)
        engine.clear_disk_fault(fault)
        self._close_window(now(), "the server lived through it; killed and started again from "
                           "its journal", SERVER)
        self.engine.kill_server()
        self.barrier()
        self.log.restarts.append(now())
        self._start_server(f"{fault.value} over: restarted the server from its journal")

    def _close_window(self, at: float, how: str, target: str) -> None:
        """Log the disk window that is on, if any and if its target is `target`, as ended at
        `at`, and `how`."""
        if self.disk_on is not None and self.disk_on[3] == target:
            _, fault, since, _ = self.disk_on
            self.disk_on = None
            self.log.faults.append(Fault("disk", since, at, detail=f"{target} {fault.value}: "
                                         f"{how}", target=target))

    def _disk_exit(self, at: float) -> None:
        """The server stopped on a disk fault, as it must: log it and start it again from its
        journal, on a disk that works."""
        self.barrier()
        self.log.restarts.append(now())
        self.log.faults.append(Fault("disk-exit", at, None, detail="the server stopped on a "
                                     "disk fault", target=SERVER))
        self._close_window(at, "the server stopped on it", SERVER)
        self._start_server("the server stopped on a disk fault; started it again from its "
                           "journal")

    def _ledger_gone(self, ledger: Ledger) -> None:
        """The ledger is gone: stopped on a disk fault, as it must, or died on its own (an
        error of the run); either way it is started again on its file."""
        at = now()
        if ledger.died_of_disk_fault():
            self.log.faults.append(Fault("ledger-disk-exit", at, None, detail="the ledger "
                                         "stopped on a disk fault", target=LEDGER))
            self._close_window(at, "the ledger stopped on it", LEDGER)
            self._start_ledger("the effect ledger stopped on a disk fault; started it again on "
                               "its file")
            return
        self.log.faults.append(Fault("ledger-died", at, None, detail="not the nemesis",
                                     target=LEDGER))
        self.log.errors.append(f"the effect ledger died on its own at {at:.3f}")
        self._close_window(at, "the ledger died during it, not of the fault", LEDGER)
        self._start_ledger("the effect ledger died on its own; started it again on its file")

    def _start_ledger(self, what: str) -> None:
        assert self.ledger is not None
        try:
            started = self.ledger.start()
        except SpecError as error:
            self.log.errors.append(f"the effect ledger did not start again: {error}")
            raise EngineFailed(str(error)) from None
        self.say(f"{what} ({started})")
