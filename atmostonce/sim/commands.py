"""The `simulate` and `replay` subcommands; `register` adds them to the `atmostonce` parser.
With `--scenario FILE` they run a scenario file instead of a fault profile
(`scenario_commands`).

Exit codes: 0 no violation, 1 a violation, 2 bad input (a SpecError the CLI reports in one
line: an unknown profile, a malformed or unloadable --executor, a bad number, a scenario file
that does not check).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from atmostonce import arguments, progress
from atmostonce.check.executors import pipe
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.fanout import way as fanout
from atmostonce.sim import scenario_commands
from atmostonce.sim.campaign import campaign, shown_on
from atmostonce.sim.engine import scenario
from atmostonce.sim.faults import PROFILES
from atmostonce.sim.faults import profile as find_profile
from atmostonce.sim.report import campaign_json, campaign_text, replay_json, replay_text
from atmostonce.sim.run import run_seed
from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1
DEFAULT_PROFILE = "chaos"
MAX_SEEDS = 1_000_000
"""The most seeds one campaign runs: one core manages under a hundred seeds a second, so a
million take hours and a larger number is a slip of the keyboard, not a campaign."""


def register(subparsers: Any) -> None:
    """Add `simulate` and `replay` to the project's argparse subparsers."""
    profiles = ", ".join(f"{p.name} ({p.summary})" for p in PROFILES.values())
    simulate = subparsers.add_parser(
        "simulate", help="run a seeded fault-simulation campaign against an executor",
        description="Drive an executor through seeded simulations: workers that crash, lose "
        "their connection and come back, a server that restarts, tool runs that time out, "
        "people who answer late, a model that asks again. Every history is checked online "
        "against the spec's properties; prints which records appear per effect class, the "
        "double runs, retries, and every violation with the command that replays it. With "
        "--scenario FILE.toml it runs your own agent instead (your tools, their durations and "
        "failure rates, your executor settings and fault rates) and reports per tool; --sweep "
        "runs that scenario once per value of one setting. Exit 0 when no property broke, 1 "
        "otherwise, 2 on bad input.",
        epilog=f"Profiles: {profiles}.",
    )
    simulate.add_argument("--seeds", type=arguments.CountUpTo(MAX_SEEDS), default=100,
                          metavar="N", help=f"how many seeds to run, at most {MAX_SEEDS:,} "
                          "(default 100)")
    simulate.add_argument("--first-seed", type=arguments.seed, default=0, metavar="S",
                          help="the first seed (default 0)")
    _common(simulate)
    fanout.add_arguments(simulate)
    _scenario(simulate)
    simulate.add_argument("--sweep", action="append", metavar="NAME=V1,V2,...",
                          help="with --scenario: run the scenario once per value of the dotted "
                          "key NAME (such as executor.heartbeat_timeout) and print one row per "
                          "value")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.add_argument("--report", type=arguments.output_file, metavar="FILE.html",
                          help="also write a self-contained HTML page: records per effect "
                          "class, time-to-record distributions, the call machines coloured by "
                          "how often the histories took each transition, and the first failing "
                          "seed as a sequence chart and a timeline; with --scenario the same "
                          "per tool, failed records by reason, time to record and the wait "
                          "for a person, and a sweep's records and times against the value "
                          "(needs the report extra: pip install 'atmostonce[report]')")
    simulate.set_defaults(func=cmd_simulate)

    replay = subparsers.add_parser(
        "replay", help="rerun one seed and print its events and verdict",
        description="Rerun one seed exactly (same workload, same faults) and print the "
        "history the checkers judged, with the entries of each violation marked.",
    )
    replay.add_argument("seed", type=arguments.seed, metavar="SEED", nargs="?",
                        help="the seed to rerun (or --trace FILE instead)")
    _common(replay)
    _scenario(replay)
    replay.add_argument("--faults", type=_indexes, metavar="I,J,...",
                        help="keep only these faults of the seed's schedule (by index; "
                        "'none' for none), as a shrunk failure prints them")
    replay.add_argument("--call", metavar="KEY",
                        help="print only the history entries of the call with this idempotency "
                        "key (its asks, timers, hand-outs, runs and record), as a violation "
                        "names it")
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.set_defaults(func=cmd_replay)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", metavar="P",
                        help=f"fault profile: {', '.join(PROFILES)} (default {DEFAULT_PROFILE})")
    parser.add_argument("--executor", default=DEFAULT_EXECUTOR, metavar="MODULE:FACTORY",
                        help=f"the executor under test (default {DEFAULT_EXECUTOR})")
    pipe.add_arguments(parser)


def _scenario(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", metavar="FILE.toml",
                        help="a scenario file: your tools (or an MCP tools/list file it "
                        "names), their durations and failure rates, the executor's settings, "
                        "how people answer approvals and the fault rates; instead of --profile")
    parser.add_argument("--set", action="append", metavar="NAME=VALUE",
                        help="with --scenario: set the dotted key NAME over the file's value "
                        "(repeatable)")


def _profile_or_scenario(args: argparse.Namespace) -> bool:
    """Whether the command runs a scenario file; fills in the default profile otherwise."""
    if args.scenario is not None:
        if args.profile is not None:
            raise SpecError("give --profile or --scenario, not both: a scenario file sets its "
                            "own fault rates")
        return True
    for flag, value in (("--sweep", getattr(args, "sweep", None)), ("--set", args.set)):
        if value:
            raise SpecError(f"{flag} needs --scenario FILE.toml")
    args.profile = args.profile if args.profile is not None else DEFAULT_PROFILE
    return False


def cmd_simulate(args: argparse.Namespace) -> int:
    pipe.chosen(args, DEFAULT_EXECUTOR)
    if args.report is not None:
        from atmostonce.report.libraries import require

        require()
    way = fanout.chosen(args)
    if _profile_or_scenario(args):
        if not way.serial:
            raise SpecError("--processes and --ray fan out a profile's campaign; a --scenario "
                            "file's seeds run in this process")
        return scenario_commands.cmd_simulate(args)
    find_profile(args.profile)
    factory = load_factory(args.executor)
    with progress.board(args.json) as shown:
        meter = shown.meter(f"simulate {args.profile}", total=args.seeds, unit="seeds")
        result = campaign(range(args.first_seed, args.first_seed + args.seeds), args.profile,
                          factory, args.executor, shown_on(meter), way=way)
        meter.finish()
    if args.report is not None:
        from atmostonce.sim.report_page import write_campaign_page

        write_campaign_page(result, factory, _simulate_command(args), args.report)
    if args.json:
        print(json.dumps(campaign_json(result), indent=2))
    else:
        print(campaign_text(result))
    return EXIT_OK if result.ok else EXIT_FAILED


def _simulate_command(args: argparse.Namespace) -> str:
    command = (f"atmostonce simulate --seeds {args.seeds} --first-seed {args.first_seed} "
               f"--profile {args.profile}")
    if args.executor != DEFAULT_EXECUTOR:
        command += f" --executor {args.executor}"
    return f"{command} --report {args.report}"


def cmd_replay(args: argparse.Namespace) -> int:
    if args.seed is None:
        raise SpecError("replay needs a SEED to rerun, or --trace FILE")
    pipe.chosen(args, DEFAULT_EXECUTOR)
    if _profile_or_scenario(args):
        return scenario_commands.cmd_replay(args)
    chosen = find_profile(args.profile)
    factory = load_factory(args.executor)
    only: tuple[int, ...] | None = args.faults
    if only is not None:
        count = len(scenario(args.seed, chosen).faults)
        wrong = [i for i in only if i >= count]
        if wrong:
            raise SpecError(f"fault index {wrong[0]} is out of range: seed {args.seed} under "
                            f"profile {args.profile} has {count} faults")
    run = run_seed(args.seed, args.profile, factory, args.executor, only, keep_history=True)
    if args.json:
        print(json.dumps(replay_json(run), indent=2))
    else:
        print(replay_text(run, args.call))
    return EXIT_OK if run.ok else EXIT_FAILED


def _indexes(text: str) -> tuple[int, ...]:
    """`--faults`: fault indexes such as 0,3,5, or 'none'; an empty list or item is refused, so
    that a list emptied by mistake never quietly means 'none'."""
    if text.strip() == "none":
        return ()
    expected = "fault indexes such as 0,3,5 or 'none'"
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        what = "an empty list" if not text.strip() else "a list with an empty item"
        raise argparse.ArgumentTypeError(f"expected {expected}, got {what}: {text!r}")
    try:
        values = tuple(sorted({int(part) for part in parts}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"fault indexes are >= 0, got {text!r}")
    return values
