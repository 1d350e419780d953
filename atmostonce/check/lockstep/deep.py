"""Deep lockstep: a Hypothesis state machine that drives an executor and the model together at
bounds beyond the exhaustive depth, and shrinks a disagreement to its shortest program.

Each rule is a step the model can follow: one of the steps the model allows next (asks, answers,
hand-outs, runs, time-outs, crashes, cuts, restarts, reconciles), or a worker's heartbeat for a
run it has going, which the model takes as no step at all (only the first heartbeat of a run
changes its state) while the executor must restart that worker's heartbeat timeout (D-12). A
program is the list of steps taken; `replay` runs one again, and `program_text` prints it as a
test one can paste. `atmostonce.testing` is the public face; `run_deep` is verify's stage.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
    run_state_machine_as_test,
)

from atmostonce.check.executors import guard
from atmostonce.check.executors.loading import load_factory
from atmostonce.check.lockstep.conformance import Lockstep
from atmostonce.check.lockstep.state import Disagreement
from atmostonce.model import layout as m
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import State
from atmostonce.spec import protocol as p
from atmostonce.spec.step_kinds import StepKind

DEEP = ModelConfig(workers=2, calls=2, reasks=1, max_attempts=3, crashes=1, partitions=2,
                   restarts=2, timeouts=2, faults=5, policy_changes=1, reconcile_crashes=1)
"""The deep bounds: three attempts, two calls asked in one turn (so two may wait for approval
at once, and the server may restart while one waits and the other runs), two restarts, two
time-outs, two connection cuts and five faults on a path, every effect class."""
CALLS_PER_TURN = 2
T = TypeVar("T")

RENEW = "renew"
"""A program step the model does not take: worker `b` heartbeats for its run of call `a`."""

SHAPES = ("heartbeats", "restarts while a call waits", "two calls waiting", "third attempts")
"""What the exhaustive depth never reaches and a program may: each is counted per program."""

AGENT = frozenset({StepKind.ASK, StepKind.REASK, StepKind.CHANGE_POLICY})
PEOPLE = frozenset({StepKind.APPROVE, StepKind.REJECT, StepKind.DEADLINE})
WORK = frozenset({StepKind.HAND, StepKind.GO, StepKind.HEARTBEAT, StepKind.APPLY,
                  StepKind.FINISH_OK, StepKind.FINISH_FAIL})
RECONCILE = frozenset({StepKind.RECONCILE, StepKind.RECONCILE_CRASH})
ALL = frozenset(v for k, v in vars(StepKind).items() if k.isupper())
FAULTS = ALL - AGENT - PEOPLE - WORK - RECONCILE
"""The model's steps by who takes them, one rule each, so that Hypothesis spreads a program
over them instead of over the many kinds of fault."""
CHOICE = st.integers(min_value=0, max_value=10_000)

Step = tuple[str, int, int]
"""A program step: a model step label, or (RENEW, call, worker)."""


class DeepLock(Lockstep):
    """The lockstep with two calls a turn and the heartbeats the model leaves out."""

    calls_per_turn = CALLS_PER_TURN

    def __init__(self, config: ModelConfig, factory: p.ExecutorFactory) -> None:
        self.reached: set[str] = set()
        super().__init__(config, factory)
        self._enabled: tuple[State, list[Step]] = (self.state, self.enabled())

    def enabled_of(self, kinds: frozenset[str]) -> list[Step]:
        """The steps of `kinds` the model allows next."""
        if self._enabled[0] is not self.state:
            self._enabled = (self.state, self.enabled())
        return [label for label in self._enabled[1] if label[0] in kinds]

    def beating(self) -> list[Step]:
        """The heartbeats that can be sent now: one per run a worker has going and has
        reported started, while its connection is up or cut (a cut one is held)."""
        heard = {w.name: i for i, w in enumerate(self.workers) if w.connection in ("up", "cut")}
        return sorted((RENEW, call, heard[run.worker]) for (call, _), run in self.runs.items()
                      if run.started_sent and run.worker in heard)

    def renew(self, call: int, w: int) -> None:
        """Worker `w` heartbeats for its run of `call`: nothing the model shows changes, and a
        delivered heartbeat restarts the worker's heartbeat timeout (D-12)."""
        self.clock += 1.0
        worker = self.workers[w]
        run = self.runs[(call, worker.name)]
        self.log.append(f"{RENEW}({call}, {w})")
        self._from_worker(worker, p.Heartbeat(self.clock, worker.name, run.attempt))
        if worker.connection == "up":
            timer = self._timer(p.TimerKind.HEARTBEAT_TIMEOUT, subject=worker.name)
            if timer is None or self.timer_clock.get(timer) != self.clock:
                raise Disagreement(f"worker {worker.name} heartbeat for call {call} "
                                   f"({self.keys[call]}), and the executor did not restart its "
                                   "heartbeat timeout (D-12)")
        self.compare()

    def take(self, step: Step) -> None:
        """One program step on both sides, compared; `reached` notes the deep shapes seen."""
        waiting = self._waiting()
        if step[0] == RENEW:
            self.renew(step[1], step[2])
            self.reached.add(SHAPES[0])
        else:
            self.step(step)
            if step[0] == StepKind.RESTART and waiting:
                self.reached.add(SHAPES[1])
        if self._waiting() >= 2:
            self.reached.add(SHAPES[2])
        if any(m.hands(c[m.G]) >= 3 for c in self.system.calls_of(self.state)):
            self.reached.add(SHAPES[3])

    def _waiting(self) -> int:
        return sum(c[m.CS] == m.C_AWAIT for c in self.system.calls_of(self.state))


class ProgramFailed(AssertionError):
    """The executor disagreed with the model, or broke the protocol, on `program`."""

    def __init__(self, message: str, program: list[Step], breach: bool) -> None:
        super().__init__(message)
        self.program = program
        self.breach = breach


@functools.cache
def _loaded(path: str) -> p.ExecutorFactory:
    return load_factory(path)


def replay(executor: str | p.ExecutorFactory, program: Sequence[Step],
           config: ModelConfig = DEEP) -> None:
    """Run `program` on a fresh executor (`module:factory` or the factory) and the model;
    Disagreement or ProtocolBreach at the first step where they part."""
    factory = _loaded(executor) if isinstance(executor, str) else executor
    lock = DeepLock(config, factory)
    for step in program:
        lock.take(tuple(step))  # type: ignore[arg-type]


def _steps_of(kinds: frozenset[str], name: str, doc: str) -> Callable[..., None]:
    """A rule of the machine, called `name`: one of the steps of `kinds` the model allows."""
    def take_one(self: ExecutorMatchesModel, choice: int) -> None:
        labels = self.lock.enabled_of(kinds)
        self._take(labels[choice % len(labels)])

    take_one.__name__ = take_one.__qualname__ = name
    take_one.__doc__ = doc
    allowed: Callable[[ExecutorMatchesModel], bool] = lambda self: bool(  # noqa: E731
        self.lock.enabled_of(kinds))
    return precondition(allowed)(rule(choice=CHOICE)(take_one))


class ExecutorMatchesModel(RuleBasedStateMachine):
    """Drives `executor` (`module:factory`, or the factory) and the model under `config` in
    lockstep; Hypothesis shrinks a disagreement to the shortest program that shows it, and the
    failure's note is that program as a test one can paste. Subclass it naming your executor,
    and collect `YourClass.TestCase`; Hypothesis's `@settings` on the subclass sets how many
    programs of how many steps."""

    executor: ClassVar[str | p.ExecutorFactory] = "atmostonce.executor:reference"
    config: ClassVar[ModelConfig] = DEEP

    def __init__(self) -> None:
        super().__init__()
        self.program: list[Step] = []
        self.lock = self._guarded(lambda: DeepLock(self.config, self._factory()))
        self._guarded(self.lock.compare)
        self.started()

    def started(self) -> None:
        """A program starts (verify's stage counts them)."""

    def took(self) -> None:
        """A program took a step (verify's stage counts them)."""

    def reaches(self, shape: str) -> None:
        """A program reached one of the deep `SHAPES` for the first time."""

    def _factory(self) -> p.ExecutorFactory:
        executor = type(self).executor
        return _loaded(executor) if isinstance(executor, str) else executor

    def _guarded(self, run: Callable[[], T]) -> T:
        try:
            return run()
        except Disagreement as error:
            failed = ProgramFailed(str(error), list(self.program), False)
        except guard.ProtocolBreach as breach:
            failed = ProgramFailed(str(breach), list(self.program), True)
        failed.add_note(program_text(type(self).executor, failed.program, self.config))
        raise failed

    def _take(self, step: Step) -> None:
        self.program.append(step)
        self.took()
        before = set(self.lock.reached)
        self._guarded(lambda: self.lock.take(step))
        for shape in sorted(self.lock.reached - before):
            self.reaches(shape)

    agent = _steps_of(AGENT, "agent", "The agent's model asks, or asks again; the developer "
                      "changes a policy.")
    person = _steps_of(PEOPLE, "person", "A person approves or rejects a waiting call, or its "
                       "approval deadline passes.")
    work = _steps_of(WORK, "work", "A worker polls, gets its go-ahead, starts, applies an effect "
                     "or finishes.")
    fault = _steps_of(FAULTS, "fault", "A crash, a cut connection or its end, a worker declared "
                      "lost or back, a time-out, a queue time-out, a server restart.")
    reconcile = _steps_of(RECONCILE, "reconcile", "The reconcile job runs, or crashes after one "
                          "report.")

    @precondition(lambda self: not self.lock.enabled_of(ALL) and not self.lock.beating())
    @rule()
    def done(self) -> None:
        """Every call has its record and nothing more can happen: the program is over."""

    @precondition(lambda self: bool(self.lock.beating()))
    @rule(choice=CHOICE)
    def heartbeat(self, choice: int) -> None:
        """A worker heartbeats for a run it has going."""
        beats = self.lock.beating()
        self._take(beats[choice % len(beats)])


def executor_path(executor: str | p.ExecutorFactory) -> str:
    """The `module:factory` path of `executor`, as a test imports it."""
    if isinstance(executor, str):
        return executor
    return f"{executor.__module__}:{executor.__qualname__}"


def program_text(executor: str | p.ExecutorFactory, program: Sequence[Step],
                 config: ModelConfig = DEEP) -> str:
    """`program` as a pytest test that replays it on `executor` and fails where it failed."""
    lines = ["from atmostonce.testing import replay", "", "",
             "def test_the_executor_agrees_with_the_model() -> None:",
             f"    replay({executor_path(executor)!r}, ["]
    lines += [f"        {tuple(step)!r}," for step in program]
    bounds = "" if config == DEEP else ", config=CONFIG  # the bounds of your ExecutorMatchesModel"
    lines.append(f"    ]{bounds})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# verify's stage


DEEP_EXAMPLES = 300
"""Programs the stage runs before it shrinks (a fixed budget, so one seed gives one verdict)."""
DEEP_STEPS = 60
"""Steps of each program at most."""


@dataclass
class DeepResult:
    """What the deep stage ran and found."""

    seed: int
    programs: int = 0
    steps: int = 0
    seconds: float = 0.0
    failure: ProgramFailed | None = None
    reached: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SHAPES, 0))
    """How many programs reached each deep shape."""


def run_deep(executor: str | p.ExecutorFactory, run_seed: int, examples: int = DEEP_EXAMPLES,
             steps: int = DEEP_STEPS, config: ModelConfig = DEEP,
             progress: Callable[[int], None] | None = None) -> DeepResult:
    """Run the deep lockstep on `executor` from `run_seed` (derandomized by it, no example
    database, Hypothesis's default profile whatever profile is loaded), `examples` programs
    of at most `steps` steps, shrinking the first failure; `progress` hears the programs run
    so far as each starts."""
    result = DeepResult(run_seed)

    class Counted(ExecutorMatchesModel):
        def started(self) -> None:
            result.programs += 1
            if progress is not None:
                progress(result.programs)

        def took(self) -> None:
            result.steps += 1

        def reaches(self, shape: str) -> None:
            result.reached[shape] += 1

    Counted.executor = executor
    Counted.config = config
    seed(run_seed)(Counted)
    started = time.monotonic()
    try:
        run_state_machine_as_test(Counted, settings=settings(
            settings.get_profile("default"), max_examples=examples, stateful_step_count=steps,
            deadline=None, database=None,
            derandomize=False, verbosity=Verbosity.quiet, report_multiple_bugs=False,
            phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck)))
    except ProgramFailed as failed:
        result.failure = failed
    result.seconds = time.monotonic() - started
    return result
