"""`atmostonce replay --trace FILE [--name NAME] [--runtime]`: `extend_replay` gives the
simulator's `replay` command these options, since replaying a trace on the runtime needs this
layer. Exit 0 when no step diverged, 1 at the first divergence, 2 for a bad file or option.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from atmostonce.check.executors import pipe
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.check.lockstep.trace_replay import load, replay_core
from atmostonce.runtime.trace_replay import replay_runtime
from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1


def extend_replay(replay: argparse.ArgumentParser) -> None:
    """Add --trace, --name and --runtime to `replay`; without --trace it runs as before."""
    replay.description = (replay.description or "") + (
        " With --trace FILE it replays a counterexample or witness that `atmostonce check "
        "--out` saved instead: on the executor core in lockstep with the model (--executor), "
        "or with --runtime on the real runtime (a server on a SQLite journal, worker "
        "processes, the effect ledger) with the trace's faults scripted, and prints for each "
        "step whether the implementation did what the model did.")
    group = replay.add_argument_group("replaying a model trace")
    group.add_argument("--trace", type=Path, metavar="FILE",
                       help="a trace file `atmostonce check --out FILE` wrote; instead of SEED")
    group.add_argument("--name", metavar="NAME",
                       help="with --trace: the trace to replay, by the property it breaks or "
                       "witnesses, such as S-DOUBLE-RUN (default: the file's first)")
    group.add_argument("--runtime", action="store_true",
                       help="with --trace: replay on real processes on 127.0.0.1 instead of "
                       "the executor core; --executor then names the server's executor")
    seed_replay: Callable[[argparse.Namespace], int] = replay.get_default("func")

    def run(args: argparse.Namespace) -> int:
        if args.trace is None:
            for flag, given in (("--name", args.name is not None), ("--runtime", args.runtime)):
                if given:
                    raise SpecError(f"{flag} needs --trace FILE")
            return seed_replay(args)
        return cmd_replay_trace(args)

    replay.set_defaults(func=run)


def cmd_replay_trace(args: argparse.Namespace) -> int:
    for flag, given in (("SEED", args.seed is not None), ("--profile", args.profile),
                        ("--scenario", args.scenario), ("--set", args.set),
                        ("--faults", args.faults is not None),
                        ("--call", args.call is not None)):
        if given:
            raise SpecError(f"give --trace FILE or {flag}, not both: a trace carries its own "
                            "steps")
    trace = load(args.trace, args.name)
    pipe.chosen(args, DEFAULT_EXECUTOR)
    if args.runtime:
        executor = None if args.executor == DEFAULT_EXECUTOR else args.executor
        if executor is not None:
            load_factory(executor)
        quiet = args.json or not sys.stderr.isatty()
        replay = replay_runtime(trace, executor, None if quiet else _said)
    else:
        replay = replay_core(trace, load_factory(args.executor), args.executor)
    print(json.dumps(replay.as_json(), indent=2) if args.json else replay.render())
    return EXIT_OK if replay.ok else EXIT_FAILED


def _said(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)
