"""`simulate --scenario FILE [--sweep NAME=V1,...] [--set NAME=V]` and `replay SEED --scenario
FILE`: everything the command line and the files say is read and checked first (every value
of a sweep included), then the seeds run. Exit 0 when no property broke, 1 otherwise."""

from __future__ import annotations

import argparse
import json
import shlex

from atmostonce import progress
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.sim import overrides
from atmostonce.sim.campaign import shown_on
from atmostonce.sim.report import replay_json, replay_text
from atmostonce.sim.scenario import ScenarioFile, load
from atmostonce.sim.scenario_draw import build, check_size
from atmostonce.sim.scenario_report import scenario_json, scenario_text
from atmostonce.sim.scenario_run import ScenarioResult, run_one, simulate, sweep
from atmostonce.sim.scenario_sweep_report import sweep_json, sweep_text
from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1


def settings(args: argparse.Namespace) -> list[overrides.Override]:
    return [overrides.parse_assignment(text, "--set") for text in args.set or ()]


def cmd_simulate(args: argparse.Namespace) -> int:
    given = settings(args)
    sweeps = args.sweep or []
    if len(sweeps) > 1:
        raise SpecError("--sweep is given more than once: a sweep varies one setting")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    if not sweeps:
        spec = load(args.scenario, given)
        check_size(spec)
        factory = load_factory(args.executor)
        with progress.board(args.json) as shown:
            meter = shown.meter(f"simulate {spec.name}", total=len(seeds), unit="seeds")
            result = simulate(spec, seeds, factory, args.executor, shown_on(meter))
            meter.finish()
        if args.report is not None:
            from atmostonce.report.page import write
            from atmostonce.sim.scenario_page import scenario_page

            write(scenario_page(result, factory, _command(args)), args.report)
        print(json.dumps(scenario_json(result), indent=2) if args.json else
              scenario_text(result))
        return EXIT_OK if result.ok else EXIT_FAILED
    name, values = overrides.parse_sweep(sweeps[0])
    if any(key == name for key, _ in given):
        raise SpecError(f"--set {name} and --sweep {name}: give the setting once")
    specs: list[tuple[str, ScenarioFile]] = []
    for value in values:
        try:
            spec = load(args.scenario, [*given, (name, value)])
            check_size(spec)
            specs.append((value, spec))
        except SpecError as error:
            raise SpecError(f"--sweep {name}={value}: {error}") from None
    factory = load_factory(args.executor)
    with progress.board(args.json) as shown:
        meter = shown.meter(f"sweep {name}", total=len(specs), unit="values")
        done: list[str] = []

        def said(setting: str, result: ScenarioResult, seconds: float) -> None:
            c = result.campaign
            done.append(setting)
            meter.update(len(done), note=f"{setting}: {len(c.seeds)} seeds, {c.totals.calls:,} "
                         f"calls, {c.violations} violations, {seconds:.1f} s")

        rows = sweep(name, specs, seeds, factory, args.executor, said)
        meter.finish()
    if args.report is not None:
        from atmostonce.report.page import write
        from atmostonce.sim.scenario_page import sweep_page

        write(sweep_page(name, rows, factory, _command(args)), args.report)
    print(json.dumps(sweep_json(name, rows), indent=2) if args.json else sweep_text(name, rows))
    return EXIT_OK if all(row.result.ok for row in rows) else EXIT_FAILED


def _command(args: argparse.Namespace) -> str:
    """The simulate command line as the report shows it."""
    words = ["atmostonce", "simulate", "--scenario", args.scenario, "--seeds", str(args.seeds),
             "--first-seed", str(args.first_seed)]
    for text in args.set or ():
        words += ["--set", text]
    for text in args.sweep or ():
        words += ["--sweep", text]
    if args.executor != DEFAULT_EXECUTOR:
        words += ["--executor", args.executor]
    return shlex.join([*words, "--report", str(args.report)])


def cmd_replay(args: argparse.Namespace) -> int:
    spec = load(args.scenario, settings(args))
    check_size(spec)
    factory = load_factory(args.executor)
    only: tuple[int, ...] | None = args.faults
    if only is not None:
        count = len(build(spec, args.seed).faults)
        wrong = [i for i in only if i >= count]
        if wrong:
            raise SpecError(f"fault index {wrong[0]} is out of range: seed {args.seed} of "
                            f"{args.scenario} has {count} faults")
    run, _ = run_one(spec, args.seed, factory, args.executor, only, keep_history=True)
    print(json.dumps(replay_json(run), indent=2) if args.json else replay_text(run, args.call))
    return EXIT_OK if run.ok else EXIT_FAILED
