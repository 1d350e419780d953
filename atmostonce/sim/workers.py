"""Worker processes: connect, poll when idle, run one tool at a time on a go-ahead, heartbeat
while it runs, write to the tool's service at a random moment, and report the result.

Cancellation is cooperative and this worker ignores it: a cancelled tool runs on (TC-AMO-3).
A worker whose lease runs out, because the server has heard nothing from it for `lease`
seconds, stops its run and comes back on a fresh connection (D-12); a crash kills the run and
the process comes back later as a fresh worker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from atmostonce.check.history import entries as h
from atmostonce.sim.faults import Fault, FaultKind
from atmostonce.sim.ledger import Ledger
from atmostonce.sim.loop import Loop
from atmostonce.sim.members import RUN_RETURNED, RUN_TOOL_FAILED
from atmostonce.sim.network import Conn, Network
from atmostonce.sim.workload import RunPlan
from atmostonce.spec import protocol as p

POLL_INTERVAL = (1.0, 3.0)
HEARTBEAT_INTERVAL = 1.5


class Asked(Protocol):
    """A call the agent's model asked, as the worker that runs its tool sees it."""

    @property
    def key(self) -> str:
        """The call's key: its session, turn and call ids."""
        ...

    def next_run(self) -> RunPlan:
        """How the next run of the call's tool goes."""
        ...


class SimulatedRun:
    """One run of a tool at a worker, as the ledger knows it."""

    __slots__ = ("attempt", "conn", "ends_at", "gen", "id", "key", "live", "plan", "tool")

    def __init__(self, run_id: int, conn: Conn, attempt: str, key: str, tool: str,
                 plan: RunPlan, ends_at: float) -> None:
        self.id = run_id
        self.conn = conn
        self.attempt = attempt
        self.key = key
        self.tool = tool
        self.plan = plan
        self.ends_at = ends_at
        self.gen = 0
        self.live = True


class Worker:
    """A worker process; each connection it makes is a fresh worker to the executor."""

    __slots__ = ("accept", "alive", "beat", "calls", "conn", "cut", "cut_until", "extra",
                 "extra_until", "incarnation", "index", "lease", "ledger", "loop", "name",
                 "network", "paused_until", "run", "stall")

    def __init__(self, index: int, loop: Loop, network: Network,
                 accept: Callable[[Conn], None], calls: Mapping[str, Asked], ledger: Ledger,
                 lease: float, heartbeat_interval: float = HEARTBEAT_INTERVAL) -> None:
        """`accept` opens a connection at the server; `calls` are the calls the agent's model
        asked, by their arguments; `lease` is the executor's lease (D-12); a running tool
        heartbeats every `heartbeat_interval` seconds."""
        self.beat = heartbeat_interval
        self.loop = loop
        self.network = network
        self.accept = accept
        self.calls = calls
        self.ledger = ledger
        self.lease = lease
        self.index = index
        self.name = f"w{index}"
        self.incarnation = 0
        self.alive = True
        self.conn: Conn | None = None
        self.run: SimulatedRun | None = None
        self.cut = False
        self.cut_until = 0.0
        self.extra = 0.0
        self.extra_until = 0.0
        self.stall = 0.0
        self.paused_until = 0.0
        """An outage: the worker asks for no work until then."""

    # -- connecting and polling -------------------------------------------------------------------

    def start_up(self, _a: object = None, _b: object = None) -> None:
        self.alive = True
        self.connect()

    def connect(self) -> None:
        """A fresh connection, named `w<index>.<incarnation>`."""
        loop = self.loop
        self.incarnation += 1
        conn = Conn(f"{self.name}.{self.incarnation}", self, loop.now)
        self.conn = conn
        self.accept(conn)
        loop.record(h.WorkerConnected(loop.now, conn.id))
        self.network.up(conn, p.Connected, (conn.id,))
        self.poll(conn)

    def poll(self, conn: Conn, _b: object = None) -> None:
        if conn is not self.conn or not conn.worker_open or self.run is not None:
            return
        loop = self.loop
        if self.paused_until > loop.now:
            loop.at(self.paused_until + 0.5 * loop.rnd(), self.poll, conn)
            return
        self.network.up(conn, p.Poll, (conn.id,))

    def receive(self, conn: Conn, cmd: p.Command) -> None:
        """A command arrived on `conn`; Cancel is ignored, as cooperative cancellation allows."""
        if isinstance(cmd, p.NoWork):
            loop = self.loop
            low, high = POLL_INTERVAL
            loop.at(loop.now + low + (high - low) * loop.rnd(), self.poll, conn)
        elif isinstance(cmd, p.GoAhead) and conn is self.conn and self.run is None and self.alive:
            self._start(conn, cmd)

    # -- running a tool ---------------------------------------------------------------------------

    def _start(self, conn: Conn, cmd: p.GoAhead) -> None:
        """D-5: the tool starts only on the go-ahead; the ledger records who ran what."""
        loop = self.loop
        now = loop.now
        attempt, key, tool = cmd.attempt, cmd.key, cmd.tool
        call = self.calls.get(cmd.arguments)
        plan = call.next_run() if call is not None else RunPlan(0.1, True, 0.5)
        ledger = self.ledger
        run_id = ledger.next_run()
        duration = plan.duration + self.stall
        self.stall = 0.0
        ends_at = now + duration
        run = SimulatedRun(run_id, conn, attempt, key, tool, plan, ends_at)
        self.run = run
        loop.record(h.RunStarted(now, run_id, conn.id, attempt, key, tool,
                                 call.key if call is not None else key))
        self.network.up(conn, p.Started, (conn.id, attempt))
        at = loop.at
        at(ends_at, self._end, run, 0)
        if ledger.writes(tool):
            at(now + plan.apply_at * duration, self._apply, run)
        beat = self.beat
        if duration > beat:
            at(now + beat, self._beat, run)
        deadline = conn.last_receipt + self.lease
        if ends_at > deadline:
            at(deadline, self._lease, run)

    def _apply(self, run: SimulatedRun, _b: object) -> None:
        if run.live:
            loop = self.loop
            applied = self.ledger.write(run.tool, run.key)
            loop.record(h.EffectApplied(loop.now, run.id, run.key, applied))

    def _beat(self, run: SimulatedRun, _b: object) -> None:
        if run.live:
            self.network.up(run.conn, p.Heartbeat, (run.conn.id, run.attempt))
            loop = self.loop
            loop.at(loop.now + self.beat, self._beat, run)

    def _end(self, run: SimulatedRun, gen: int) -> None:
        if not run.live or gen != run.gen:
            return
        run.live = False
        self.run = None
        ok = run.plan.ok
        loop = self.loop
        output = f"result of {run.tool}" if ok else f"{run.tool} failed"
        loop.record(h.RunEnded(loop.now, run.id, RUN_RETURNED if ok else RUN_TOOL_FAILED,
                               output))
        conn = run.conn
        self.network.up(conn, p.Finished, (conn.id, run.attempt, ok, output))
        self._idle()

    def _lease(self, run: SimulatedRun, _b: object) -> None:
        """D-12: stop the run once the server has heard nothing for `lease` seconds."""
        if not run.live:
            return
        loop = self.loop
        deadline = run.conn.last_receipt + self.lease
        if deadline > loop.now:
            loop.at(deadline, self._lease, run)
            return
        run.live = False
        self.run = None
        loop.record(h.RunEnded(loop.now, run.id, h.RunEnd.STOPPED))
        self._abandon(run.conn)
        self._idle()

    def _idle(self) -> None:
        conn = self.conn
        if conn is not None and conn.worker_open:
            self.poll(conn)
        elif self.alive and not self.cut:
            self.connect()

    def _abandon(self, conn: Conn) -> None:
        conn.worker_open = False
        conn.drop_held()

    def closed(self, conn: Conn, _b: object = None) -> None:
        """The worker learns that the server closed `conn`; a run on it goes on until the lease
        runs out, then the worker comes back fresh."""
        if conn is not self.conn or not conn.worker_open:
            return
        self._abandon(conn)
        if self.run is None and self.alive and not self.cut:
            self.connect()

    # -- faults -----------------------------------------------------------------------------------

    def fault(self, fault: Fault) -> None:
        loop = self.loop
        kind = fault.kind
        if kind is FaultKind.CRASH:
            self._crash(fault.duration)
        elif kind is FaultKind.PARTITION:
            until = loop.now + fault.duration
            if until > self.cut_until:
                self.cut_until = until
                loop.at(until, self._heal, until)
            if not self.cut:
                self.cut = True
                loop.record(h.WorkerCut(loop.now, self._label()))
        elif kind is FaultKind.DELAY:
            self.extra = fault.extra
            self.extra_until = loop.now + fault.duration
        elif kind is FaultKind.STALL:
            run = self.run
            if run is not None and run.live:
                run.gen += 1
                run.ends_at += fault.extra
                loop.at(run.ends_at, self._end, run, run.gen)
                loop.at(run.conn.last_receipt + self.lease, self._lease, run)
                loop.at(loop.now + self.beat, self._beat, run)
            else:
                self.stall = fault.extra

    def _label(self) -> str:
        return self.conn.id if self.conn is not None else self.name

    def _crash(self, down_for: float) -> None:
        if not self.alive:
            return
        loop = self.loop
        self.alive = False
        loop.record(h.WorkerCrashed(loop.now, self._label()))
        run = self.run
        if run is not None and run.live:
            run.live = False
            loop.record(h.RunEnded(loop.now, run.id, h.RunEnd.KILLED))
        self.run = None
        if self.conn is not None:
            self._abandon(self.conn)
        loop.at(loop.now + down_for, self._come_back)

    def _come_back(self, _a: object, _b: object) -> None:
        if not self.alive:
            self.alive = True
            if not self.cut:
                self.connect()

    def _heal(self, until: float, _b: object) -> None:
        if not self.cut or until != self.cut_until:
            return
        self.heal()

    def heal(self) -> None:
        loop = self.loop
        self.cut = False
        loop.record(h.WorkerHealed(loop.now, self._label()))
        conn = self.conn
        if conn is None or not self.alive:
            return
        if conn.worker_open and conn.server_open:
            self.network.flush(conn)
        elif conn.worker_open:
            self.closed(conn)
        elif self.run is None:
            self.connect()

    def pause(self, until: float) -> None:
        """An outage: ask for no work until `until`, or a later outage's end."""
        self.paused_until = max(self.paused_until, until)

    def settle(self) -> None:
        """Quiescence: end an outage, heal the link and end a slow one."""
        self.paused_until = 0.0
        self.extra_until = 0.0
        if self.cut:
            self.heal()
