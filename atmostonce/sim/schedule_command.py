"""`atmostonce replay --schedule "..." [--fence] [--cancel-records-failed]`: `extend_replay`
gives the `replay` command these options, to rerun one schedule of model steps, as a
conformance disagreement prints it, on an executor step by step
(`atmostonce.check.lockstep.schedule_replay`). Exit 0 when every step agrees, 1 at the first
disagreement, 2 for bad notation or a step the model does not allow.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from atmostonce.check.executors import pipe
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.check.lockstep import schedule_replay
from atmostonce.model.check import DEFAULT
from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1


def extend_replay(replay: argparse.ArgumentParser) -> None:
    """Add --schedule, --fence and --cancel-records-failed to `replay`; without --schedule it
    runs as before."""
    replay.description = (replay.description or "") + (
        " With --schedule it replays a schedule of model steps, as verify's conformance layer "
        "prints one, on the executor in lockstep with the model at verify's bound, and prints "
        "each step's sentence with the commands the executor returned beside it.")
    group = replay.add_argument_group("replaying a schedule of model steps")
    group.add_argument("--schedule", metavar="STEPS",
                       help="steps joined by '->', each KIND, KIND(N) or KIND(CALL, WORKER), "
                       "such as \"ask(1) -> expire(0) -> hand(0, 0) -> restart\"; KIND is one "
                       f"of {', '.join(schedule_replay.KINDS)}; instead of SEED")
    group.add_argument("--fence", action="store_true",
                       help="with --schedule: the executor's fence on (decision D-6)")
    group.add_argument("--cancel-records-failed", action="store_true",
                       help="with --schedule: D-4's other choice, a cancelled single attempt "
                       "that reached a worker records failed")
    earlier: Callable[[argparse.Namespace], int] = replay.get_default("func")

    def run(args: argparse.Namespace) -> int:
        if args.call is not None and args.json:
            raise SpecError("--call narrows the printed history; give it without --json, "
                            "whose history is whole")
        if args.schedule is None:
            for flag, given in (("--fence", args.fence),
                                ("--cancel-records-failed", args.cancel_records_failed)):
                if given:
                    raise SpecError(f"{flag} needs --schedule STEPS")
            return earlier(args)
        return cmd_replay_schedule(args)

    replay.set_defaults(func=run)


def cmd_replay_schedule(args: argparse.Namespace) -> int:
    for flag, given in (("SEED", args.seed is not None), ("--trace", args.trace is not None),
                        ("--profile", args.profile), ("--scenario", args.scenario),
                        ("--set", args.set), ("--faults", args.faults is not None),
                        ("--call", args.call is not None)):
        if given:
            raise SpecError(f"give --schedule or {flag}, not both: a schedule carries its own "
                            "steps")
    pipe.chosen(args, DEFAULT_EXECUTOR)
    labels = schedule_replay.parse(args.schedule)
    config = DEFAULT.with_(fence=args.fence, cancel_records_failed=args.cancel_records_failed)
    schedule_replay.walk(config, labels)
    shown = schedule_replay.replay(config, load_factory(args.executor), args.executor, labels)
    if args.json:
        print(pipe.shown(json.dumps(shown.as_json(), indent=2)))
    else:
        print(pipe.shown(shown.render()))
    return EXIT_OK if shown.ok else EXIT_FAILED
