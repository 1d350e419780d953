"""The checks a mutant meets, cheapest first: the probes verify's conformance layer runs on
fresh executors (bad input, policies, the fence, restarts), short versions of its conformance
and simulation layers, then the layers themselves at verify's
defaults, then the chaos run on the real runtime (whose server and workers load the mutated
executor from the same path) and the operator's starts of that server with bad options and
foreign journals. A mutant is killed by the first check that fails; the later ones never run
for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from atmostonce.spec.protocol import ExecutorFactory


@dataclass(frozen=True)
class Verdict:
    killed: bool
    detail: str = ""


Check = Callable[[str, ExecutorFactory], Verdict]


@dataclass(frozen=True)
class Stage:
    name: str
    layer: str
    """The verify layer the stage is a version of: conformance, simulation or runtime."""
    check: Check


def _probes(path: str, factory: ExecutorFactory) -> Verdict:
    from atmostonce.check.lockstep.state import executor_config
    from atmostonce.check.probes.table import first_problems
    from atmostonce.model.check import DEFAULT

    verdict, problems = first_problems(factory, executor_config(DEFAULT))
    return Verdict(bool(problems), f"{verdict}: {problems[0]}" if problems else "")


def _conformance(depth: int) -> Check:
    def check(path: str, factory: ExecutorFactory) -> Verdict:
        from atmostonce.check.lockstep.conformance import replay_schedules
        from atmostonce.model.check import DEFAULT

        for config in (DEFAULT, DEFAULT.with_(fence=True)):
            result = replay_schedules(config, factory, depth, edges=True)
            for _, message in (*result.breaches, *result.disagreements)[:1]:
                fence = "on" if config.fence else "off"
                return Verdict(True, f"depth {depth}, fence {fence}: {message}")
        return Verdict(False)

    return check


def _simulation(seeds: int) -> Check:
    def check(path: str, factory: ExecutorFactory) -> Verdict:
        from atmostonce.sim.campaign import campaign

        result = campaign(range(seeds), "chaos", factory, path, shrink_first=0)
        for failure in result.failures[:1]:
            run = failure.run
            found = run.violations[0].line() if run.violations else f"error: {run.error}"
            return Verdict(True, f"seed {run.seed}: {found}")
        idle = result.totals.never_succeeded()
        if idle:
            return Verdict(True, f"no {', '.join(idle)} call succeeded in {seeds} seeds")
        return Verdict(False)

    return check


def _layer(name: str) -> Check:
    def check(path: str, factory: ExecutorFactory) -> Verdict:
        from atmostonce import verify

        runs: dict[str, Callable[[str, ExecutorFactory], verify.CheckResult]] = {
            "conformance": verify.check_conformance, "simulation": verify.check_simulation,
            "runtime": verify.check_chaos}
        result = runs[name](path, factory)
        return Verdict(not result.ok, "; ".join(result.details[:2]) or result.summary)

    return check


def _operator(path: str, factory: ExecutorFactory) -> Verdict:
    from atmostonce.mutation.operator import check

    problem = check(path)
    return Verdict(problem is not None, problem or "")


STAGES: tuple[Stage, ...] = (
    Stage("probes", "conformance", _probes),
    Stage("simulation-20", "simulation", _simulation(20)),
    Stage("conformance-5", "conformance", _conformance(5)),
    Stage("conformance-7", "conformance", _conformance(7)),
    Stage("simulation-300", "simulation", _layer("simulation")),
    Stage("conformance-9", "conformance", _layer("conformance")),
    Stage("runtime", "runtime", _layer("runtime")),
    Stage("operator", "runtime", _operator),
)
"""Every stage in the order a mutant meets them; `simulation-300`, `conformance-9` and
`runtime` are verify's executor layers at their defaults; `operator` starts the real server
with bad options and foreign journals (`atmostonce.mutation.operator`)."""
BY_NAME = {stage.name: stage for stage in STAGES}
BLACK_BOX: tuple[str, ...] = ("simulation-20", "operator", "simulation-300", "runtime")
"""The stages that judge only what an engine shows from outside (the histories of the
simulation and of the chaos run on the real runtime, and what its operator sees when starting
it), cheapest first: what a black-box engine is judged by."""
