"""One chaos run, start to finish: the effect ledger and the engine on loopback, agents and the
nemesis for the chosen duration, a bounded drain, the history built and checked, and every
process, proxy and file the run started cleaned up, also on errors and Ctrl-C. What a run is
asked to do is its `options.ChaosOptions`; what it found, its `result.ChaosResult`.

    result = run_chaos(ChaosOptions(duration=30, nemesis=(NemesisKind.KILL,)), say=print)
    result.ok, result.violations, result.lost, result.double_runs

The drain stops the faults, heals everything and lets every call reach a record; reconcile
then runs twice for every session, every session's snapshot is read once more, and the run
waits for every tool run still going to end, so the eventually-properties are judged on a
quiescent run (E-EVERY-CALL-RECORDED, E-RECONCILE-ONCE).

When the engine's server stops because the executor under test failed (`ExecutorFailure`), the
run stops there: the result names the executor and quotes the server log's line, the history so
far is judged on the always-properties only (the run never became quiescent), and the run's
files are kept, their directory printed, so the logs can be read. A run that found anything
else (a violation, a lost record, an engine error) keeps its files too; a clean run removes its
temporary directory.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.chaos.agents import ChaosAgents
from atmostonce.chaos.judge import judge
from atmostonce.chaos.ledger_process import LedgerProcess, LedgerReader
from atmostonce.chaos.lost import lost_records
from atmostonce.chaos.nemesis import EngineFailed, FaultLog, Nemesis, NemesisKind
from atmostonce.chaos.observations import Observations
from atmostonce.chaos.options import ChaosOptions
from atmostonce.chaos.result import ChaosResult
from atmostonce.check.executors.loading import load_factory
from atmostonce.engines.adapter import (
    DiskFaults,
    Engine,
    EngineSetup,
    ExecutorFailure,
    Limits,
    ServerLog,
    built,
    limits_of,
    load_engine,
)
from atmostonce.progress import QUIET, Meter
from atmostonce.runtime.ledger_client import LedgerRun, Write
from atmostonce.runtime.loop import LoopThread
from atmostonce.runtime.reconcile import ledger_check
from atmostonce.runtime.tokens import ensure_token
from atmostonce.runtime.wire import LOOPBACK
from atmostonce.sim.shapes import ShapeCounter
from atmostonce.sim.stats import run_stats
from atmostonce.spec.errors import SpecError

RUNS_OVER = 15.0
"""Seconds the drain waits for tool runs still going after their call's record."""
PROGRESS_EVERY = 0.5
"""Seconds between two counts of the calls for the live display (each asks the agents' loop)."""
BUSY_PROBES = 40
"""In-flight calls the nemesis asks the ledger about to find workers running a tool."""

Say = Callable[[str], None]


@dataclass
class _Collected:
    """What a run gathered before its processes were stopped."""

    obs: Observations = field(default_factory=Observations)
    faults: FaultLog = field(default_factory=FaultLog)
    log: ServerLog = field(default_factory=ServerLog)
    runs: list[LedgerRun] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    engine: str = ""
    pids: list[int] = field(default_factory=list)
    drained: bool = False
    errors: list[str] = field(default_factory=list)
    failed: list[ExecutorFailure] = field(default_factory=list)
    """Failures of the executor under test that stopped the run."""
    limits: Limits = field(default_factory=Limits)

    def executor_failures(self) -> list[ExecutorFailure]:
        """Every failure of the executor under test: those the server log lists, and any
        that stopped the run without being listed there."""
        listed = self.log.executor_failures
        seen = {(f.line, f.log) for f in listed}
        return [*listed, *(f for f in self.failed if (f.line, f.log) not in seen)]


def run_chaos(options: ChaosOptions, say: Say = lambda line: None, meter: Meter = QUIET
              ) -> ChaosResult:
    """Run, check and clean up (see the module docstring); SpecError for bad options, an engine
    path or an executor path that cannot be loaded, or an engine that cannot start. `say` hears
    what happens (processes started, faults, the drain, files kept); `meter` shows the seconds
    of faults towards the duration, with the calls and faults so far."""
    options.check()
    factory = load_engine(options.engine)
    load_factory(options.executor)
    started = time.monotonic()
    workdir = options.workdir
    own = workdir is None
    if workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="atmostonce-chaos-"))
    elif workdir.exists() and (not workdir.is_dir() or any(workdir.iterdir())):
        raise SpecError(f"--workdir {workdir} must be an empty directory or not exist yet: a "
                        "journal or ledger left there would become part of this run")
    else:
        workdir.mkdir(parents=True, exist_ok=True)
    got = _Collected()
    meter.update(note="starting the effect ledger and the engine")
    try:
        _run(options, factory, workdir, got, say, meter)
        meter.update(note="checking the history")
        end = time.monotonic()
        failures = got.executor_failures()
        judged = judge(got.obs, got.faults, got.log, got.runs, got.writes, options.config,
                       got.limits, end, quiescent=not failures)
    except BaseException:
        if got.executor_failures():
            say(f"the executor under test failed: kept the run's files in {workdir}")
        elif own:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    entries, history = judged.entries, judged.history
    violations = judged.violations
    lost = lost_records(got.obs, got.log, got.writes, got.runs, entries)
    errors = got.errors + got.faults.errors + got.obs.errors
    kept: Path | None = None
    if failures:
        kept = workdir
        say(f"the executor under test failed: kept the run's files in {workdir}")
    elif violations or lost or errors:
        kept = workdir
        say(f"the run found a problem: kept the run's files in {workdir}")
    elif own:
        shutil.rmtree(workdir, ignore_errors=True)
    notes = list(got.log.notes)
    notes += [f"{kind.value} faults not injected: {got.limits.no_target[kind.value]}"
              for kind in options.nemesis if kind.value in got.limits.no_target]
    notes += judged.notes()
    if failures:
        notes.append("the executor under test failed, so the run stopped before it was "
                     "quiescent: the eventually-properties were not judged")
    checker = history.checker
    stats = run_stats(checker.summaries(), checker.double_runs, checker.witnessed,
                      len(got.faults.restarts), len(entries), end - started,
                      checker.call_edges(), ShapeCounter().observe_all(entries).counts())
    return ChaosResult(options, got.engine, entries, violations, lost, stats,
                       got.faults, got.obs, notes, got.pids, end - started, got.drained,
                       errors, failures, kept, dict(got.limits.not_checkable),
                       dict(got.limits.held_by_mapping))


def _run(options: ChaosOptions, factory: Callable[[EngineSetup], Engine], workdir: Path,
         got: _Collected, say: Say, meter: Meter) -> None:
    ledger: LedgerProcess | None = None
    engine: Engine | None = None
    io: LoopThread | None = None
    disk = NemesisKind.DISK in options.nemesis
    try:
        token_file = workdir / "token"
        token = ensure_token(token_file)
        ledger = LedgerProcess(workdir, token_file, disk_faults=disk,
                               variant=options.ledger_variant)
        try:
            ledger.start()
        finally:
            got.pids.extend(ledger.pids())
        port = ledger.port
        (workdir / "engine").mkdir(exist_ok=True)
        setup = EngineSetup(workdir / "engine", f"{LOOPBACK}:{port}", options.config,
                            options.workers, options.executor, token_file=token_file,
                            disk_faults=disk)
        engine = built(factory, setup, options.engine)
        got.limits = _with_disk(limits_of(engine), engine)
        _check_targets(got.limits)
        got.engine = engine.describe()
        try:
            try:
                engine.start()
            finally:
                got.pids.extend(engine.pids())
        except ExecutorFailure as failure:
            _stopped(options, failure, got, say)
        else:
            got.engine = engine.describe()
            say(f"started the effect ledger (pid {ledger.pid}) and {got.engine}; pids "
                f"{' '.join(str(p) for p in [ledger.pid, *engine.pids()])}")
            io = LoopThread("atmostonce-chaos")
            with LedgerReader(ledger, token) as reader:
                _drive(options, engine, io, (port, token), ledger, reader, got, say, meter)
                got.runs = reader.runs()
                got.writes = reader.writes()
        engine.close()
        got.pids = sorted(set(got.pids) | set(engine.pids()) | set(ledger.pids()))
        got.log = engine.server_log()
    finally:
        if io is not None:
            io.close()
        if engine is not None:
            got.pids = sorted(set(got.pids) | set(engine.pids()))
            engine.close()
        if ledger is not None:
            got.pids = sorted(set(got.pids) | set(ledger.pids()))
            ledger.stop()


def _with_disk(limits: Limits, engine: Engine) -> Limits:
    """`limits` with `disk` as no target when the engine cannot fail its disk."""
    if isinstance(engine, DiskFaults) or NemesisKind.DISK.value in limits.no_target:
        return limits
    return dataclasses.replace(limits, no_target={
        **limits.no_target, NemesisKind.DISK.value: "the engine cannot fail its server's disk "
        "(its adapter has no DiskFaults methods)"})


def _check_targets(limits: Limits) -> None:
    """SpecError for an engine whose `no_target` names a kind of fault the nemesis has not."""
    unknown = sorted(set(limits.no_target) - {kind.value for kind in NemesisKind})
    if unknown:
        raise SpecError(f"the engine's limits() name kinds of fault the nemesis has not: "
                        f"{', '.join(unknown)}")


def _drive(options: ChaosOptions, engine: Engine, io: LoopThread, ledger_at: tuple[int, str],
           ledger_process: LedgerProcess, ledger: LedgerReader, got: _Collected, say: Say,
           meter: Meter) -> None:
    """The agents and the nemesis for the duration, then the drain; `ledger_at` is the
    ledger's port and token, for the reconcile job's check; the ledger's disk fails too when
    the server's does (the nemesis's `disk`)."""
    check, close_check = io.call(lambda: ledger_check(LOOPBACK, *ledger_at))
    sessions = options.sessions or 4 * options.workers
    agents = io.call(lambda: ChaosAgents(engine.client(), engine.client(), got.obs,
                                         options.config, options.seed, check, sessions))
    running = io.submit(agents.run())
    rng = random.Random(f"atmostonce-chaos:{options.seed}:busy")

    def busy() -> set[str]:
        keys = io.call(agents.in_flight)
        names: set[str] = set()
        try:
            for key in rng.sample(keys, min(BUSY_PROBES, len(keys))):
                names.update(r.worker for r in ledger.runs(key) if r.ended is None)
        except SpecError:
            pass  # the ledger is down for a disk fault: no worker is known to be busy
        return names

    kinds = tuple(k for k in options.nemesis if k.value not in got.limits.no_target)
    hurt_ledger = NemesisKind.DISK in kinds and isinstance(engine, DiskFaults)
    nemesis = Nemesis(engine, kinds, options.seed, options.config, options.workers,
                      io.drain, busy, say, options.pace, options.cuts,
                      lambda: bool(io.call(lambda: len(agents.awaiting))),
                      ledger_process if hurt_ledger else None)
    got.faults = nemesis.log
    began = time.monotonic()
    shown = [began - PROGRESS_EVERY]
    meter.update(0, total=options.duration)

    def progress() -> None:
        if meter.live and time.monotonic() - shown[0] >= PROGRESS_EVERY:
            shown[0] = time.monotonic()
            asked, recorded = io.call(lambda: (len(agents.calls), sum(
                1 for c in agents.calls.values() if c.status is not None)))
            meter.update(min(shown[0] - began, options.duration),
                         note=f"{asked} calls asked, {recorded} recorded; faults "
                         f"{_counts(nemesis.log)}")

    try:
        nemesis.run(options.duration, progress, options.min_faults)
        meter.update(options.duration, note="drain: healing, waiting for every call's record")
        say(f"drain: faults stopped after {time.monotonic() - began:.1f}s "
            f"({_counts(nemesis.log)}); healing, waiting for every call's record")
        _drain(options, nemesis, agents, io, got, say, meter)
        _runs_over(engine, ledger, min(RUNS_OVER, options.drain))
    except EngineFailed as failure:
        say(f"the engine failed ({failure}); stopping the run")
        io.call(agents.abandon.set)
    except ExecutorFailure as failure:
        _stopped(options, failure, got, say)
        io.call(agents.abandon.set)
    io.call(close_check)
    running.cancel()
    io.run(agents.close(), timeout=10.0)


def _stopped(options: ChaosOptions, failure: ExecutorFailure, got: _Collected,
             say: Say) -> None:
    """The engine's server stopped because the executor under test failed: note it, say it."""
    got.failed.append(failure)
    say(f"the executor under test {options.executor} failed in the server: {failure.quoted()}; "
        "stopping the run")


def _drain(options: ChaosOptions, nemesis: Nemesis, agents: ChaosAgents, io: LoopThread,
           got: _Collected, say: Say, meter: Meter) -> None:
    """Heal, wait for every call's record, then reconcile and read the final snapshots."""
    io.call(agents.stop)
    nemesis.settle()
    settling = io.submit(agents.settle(options.drain))
    while not settling.done():
        nemesis.supervise()
        nemesis.settle()
        time.sleep(0.05)
    got.drained = settling.result()
    if not got.drained:
        got.errors.append(f"the drain did not end within {options.drain:g}s: some calls never "
                          "got a record")
    say("drain: reconcile twice for every session, final snapshots")
    meter.update(note="drain: reconcile twice for every session, final snapshots")
    try:
        io.run(agents.finish(), timeout=options.drain + 30.0)
    except TimeoutError:
        io.call(agents.abandon.set)
        got.errors.append("the final reconcile runs and snapshots did not end in time")


def _runs_over(engine: Engine, ledger: LedgerReader, limit: float) -> None:
    """Wait until no tool run at a live worker is still going (a cancelled run may go on after
    its record, TC-AMO-3), for at most `limit` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        live = {name for w in engine.workers() for name in w.names}
        if not any(r.ended is None and r.worker in live for r in ledger.runs()):
            return
        time.sleep(0.2)


def _counts(log: FaultLog) -> str:
    counts = {**log.counts(), **log.consequences()}
    return ", ".join(f"{kind} {n}" for kind, n in counts.items()) or "none yet"
