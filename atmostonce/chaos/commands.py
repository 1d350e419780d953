"""The `chaos` and `reconcile` subcommands; `register` adds them to the `atmostonce` parser.

Exit codes: `chaos` 0 when the history broke no property and no record was lost, 1 otherwise,
2 for bad input; `reconcile` 0 when every outcome_unknown call of the session is reported,
1 when a check or a send failed and the job must be run again, 2 for bad input (a server or
ledger that cannot be reached and a session the server does not know included). Both print one
JSON object with `--json`; `chaos` tells on stderr what it does (processes started, faults,
the drain, files kept) and, on a terminal, shows its live progress there too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from atmostonce import arguments
from atmostonce.chaos.ledger_mutants import VARIANTS
from atmostonce.chaos.nemesis import DEFAULT_KINDS, NemesisKind
from atmostonce.check.executors import pipe
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_callable
from atmostonce.engines.adapter import DEFAULT_ENGINE, CutMode
from atmostonce.runtime.reconcile import (
    DEFAULT_SOURCE,
    OutcomeCheck,
    ReconcileRun,
    as_check,
    connected_ledger_check,
    report_unknown_outcomes,
)
from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1
SERVER_ENV = "ATMOSTONCE_SERVER"
LEDGER_ENV = "ATMOSTONCE_LEDGER"
TOKEN_ENV = "ATMOSTONCE_TOKEN_FILE"
DEFAULT_NEMESES = ",".join(k.value for k in DEFAULT_KINDS)


def register(subparsers: Any) -> None:
    """Add `chaos` and `reconcile` to the project's argparse subparsers."""
    chaos = subparsers.add_parser(
        "chaos", help="run agent sessions on the real runtime while a nemesis hurts it",
        description="Start the effect ledger and an engine (the reference runtime unless "
        "--engine names an adapter) on loopback, run agent sessions over its session API while "
        "a seeded nemesis kills workers (SIGKILL), pauses them (SIGSTOP/SIGCONT), cuts their "
        "connections, restarts the server from its journal and, when asked, fails its disk; "
        "then heal, let every call reach a record, reconcile, and check the history built "
        "from what the clients saw, the ledger, the server's journal and the faults with the "
        "simulator's checkers. Stops by itself after the duration plus a bounded drain and "
        "cleans up every process and file it started. Exit 0 clean, 1 on a violation or a "
        "lost record, 2 on bad input.")
    chaos.add_argument("--duration", type=arguments.positive, default=60.0, metavar="S",
                       help="seconds of faults and new sessions (default 60)")
    chaos.add_argument("--workers", type=arguments.whole, default=3, metavar="N",
                       help="worker processes (default 3)")
    chaos.add_argument("--nemesis", default=DEFAULT_NEMESES, metavar="KINDS",
                       help="comma-separated fault kinds: "
                       f"{','.join(k.value for k in NemesisKind)}, or 'none' for a run without "
                       f"faults (default {DEFAULT_NEMESES}; disk makes the server's fsyncs and "
                       "writes fail for a while, with libfiu's fiu-run, on the reference engine)")
    chaos.add_argument("--cuts", default="hold,drop", metavar="MODES",
                       help="how a partition cuts a worker's connection: hold (traffic waits), "
                       "drop (connections reset), or both (default hold,drop)")
    chaos.add_argument("--pace", type=arguments.positive, default=1.0, metavar="X",
                       help="faults come X times as often as by default (default 1)")
    chaos.add_argument("--min-faults", type=arguments.whole, default=0, metavar="N",
                       help="inject each kind of fault at least N times: when the duration is "
                       "over and a kind has had fewer (a busy machine fits fewer in the same "
                       "seconds), faults of that kind go on, for at most the duration again "
                       "(default 0)")
    chaos.add_argument("--seed", type=arguments.seed, default=0, metavar="S",
                       help="seed of the workload and the fault schedule (default 0)")
    chaos.add_argument("--fence", action="store_true",
                       help="run the executor with its fence on (D-6)")
    chaos.add_argument("--cancel-records-failed", action="store_true",
                       help="run the engine under D-4's other choice: a cancelled single "
                       "attempt records failed, 'may still be running' (F-7), and judge it so")
    chaos.add_argument("--engine", default=DEFAULT_ENGINE, metavar="MODULE:FACTORY",
                       help="the engine adapter: a factory taking an EngineSetup and returning "
                       f"an atmostonce.engines.adapter.Engine (default {DEFAULT_ENGINE})")
    chaos.add_argument("--executor", default=DEFAULT_EXECUTOR, metavar="MODULE:FACTORY",
                       help=f"the executor the engine's server runs (default {DEFAULT_EXECUTOR})")
    pipe.add_arguments(chaos)
    chaos.add_argument("--ledger-variant", default="", choices=sorted(VARIANTS),
                       help="run a broken effect ledger instead of the real one, the positive "
                       "control of the disk nemesis's ledger target: late-starts answers a "
                       "run's start before it is on disk")
    chaos.add_argument("--workdir", type=arguments.output_directory, metavar="DIR",
                       help="keep the journal, the ledger and the logs in DIR (default: a "
                       "temporary directory, removed afterwards unless the run failed: then its "
                       "path is printed)")
    chaos.add_argument("--json", action="store_true", help="print one JSON object")
    chaos.add_argument("--report", type=arguments.output_file, metavar="FILE.html",
                       help="also write a self-contained HTML page: records per effect class, "
                       "times to record, a timeline of calls and faults, the call machines "
                       "coloured by how often the history took each transition, and each "
                       "violation as a sequence chart (needs the report extra: pip install "
                       "'atmostonce[report]')")
    chaos.set_defaults(func=cmd_chaos)

    reconcile = subparsers.add_parser(
        "reconcile", help="report the real outcome of a session's outcome_unknown calls",
        description="Read the session's history, find its outcome_unknown calls no user message "
        "reports yet, rebuild each one's idempotency key, ask the effect ledger (or your "
        "--check) what happened, and send one report per call with send_user_message. Running "
        "it again sends nothing new, also after a crash between a send and its return; a send "
        "is never retried (TC-RCN-ONCE). Exit 0 when every call is reported, 1 when a check or "
        "a send failed (run it again), 2 on bad input (a server or ledger out of reach, a "
        "session the server does not know).")
    reconcile.add_argument("--session", required=True, metavar="ID", help="the session id")
    reconcile.add_argument("--server", metavar="HOST:PORT",
                           help=f"the server (default: ${SERVER_ENV})")
    reconcile.add_argument("--ledger", metavar="HOST:PORT",
                           help=f"the effect ledger to ask (default: ${LEDGER_ENV})")
    reconcile.add_argument("--token-file", metavar="PATH",
                           help="the server's token file (see serve --token-file; default: "
                           f"${TOKEN_ENV})")
    reconcile.add_argument("--ledger-token-file", metavar="PATH",
                           help="the ledger's token file (default: the --token-file)")
    reconcile.add_argument("--check", metavar="MODULE:FUNCTION",
                           help="ask your own service instead: a function (key, tool arguments "
                           "as JSON) -> finding text, plain or async")
    reconcile.add_argument("--source", metavar="TEXT",
                           help="who the note says it comes from (default: the effect ledger, "
                           "or your application with --check)")
    reconcile.add_argument("--include-cancelled", action="store_true",
                           help="also reconcile failed calls whose error says the tool may "
                           "still be running (a cancelled or timed-out single attempt, whose "
                           "write can land after its record); each report says which kind "
                           "its call was")
    reconcile.add_argument("--json", action="store_true", help="print one JSON object")
    reconcile.set_defaults(func=cmd_reconcile)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _stderr(line: str) -> None:
    print(f"atmostonce chaos: {line}", file=sys.stderr, flush=True)


def cmd_chaos(args: argparse.Namespace) -> int:
    """A chaos run; SIGTERM, like Ctrl-C, stops it after everything is cleaned up."""
    from atmostonce import progress
    from atmostonce.chaos.options import ChaosOptions
    from atmostonce.chaos.report import chaos_json, chaos_text
    from atmostonce.chaos.run import run_chaos

    pipe.chosen(args, DEFAULT_EXECUTOR)

    if args.report is not None:
        from atmostonce.report.libraries import require

        require()
    options = ChaosOptions(duration=args.duration, workers=args.workers,
                           nemesis=_nemeses(args.nemesis), seed=args.seed,
                           pace=args.pace, cuts=_cuts(args.cuts), min_faults=args.min_faults,
                           fence=args.fence,
                           cancel_records_failed=args.cancel_records_failed,
                           engine=args.engine, executor=args.executor,
                           ledger_variant=args.ledger_variant, workdir=args.workdir)
    signal.signal(signal.SIGTERM, _interrupt)
    with progress.board(args.json) as shown:
        meter = shown.meter("chaos", total=options.duration, unit="s")
        result = run_chaos(options, _stderr, meter)
        meter.finish()
    if args.report is not None:
        from atmostonce.chaos.report_page import write_chaos_page

        write_chaos_page(result, args.report)
    if args.json:
        print(json.dumps(chaos_json(result), indent=2))
    else:
        print(chaos_text(result))
    return EXIT_OK if result.ok else EXIT_FAILED


def cmd_reconcile(args: argparse.Namespace) -> int:
    from atmostonce.runtime.commands import peer
    from atmostonce.runtime.tokens import read_token
    from atmostonce.spec.keys import component_problem

    problem = component_problem(args.session)
    if problem is not None:
        raise SpecError(f"session id {args.session!r} {problem}")
    if args.source is not None and not args.source.strip():
        raise SpecError("--source must name who the note comes from, got an empty text")
    server = peer(_address(args.server, SERVER_ENV, "--server"), "--server")
    token_file = _address(args.token_file, TOKEN_ENV, "--token-file", "token file", "PATH")
    token = read_token(Path(token_file))
    asks: OutcomeCheck | tuple[str, int, str]
    if args.check is not None:
        asks = as_check(load_callable(args.check, "check", "myapp.orders:check_cancel"))
        source = args.source or "your application"
    else:
        ledger = peer(_address(args.ledger, LEDGER_ENV, "--ledger (or --check)"), "--ledger")
        ledger_token = read_token(Path(args.ledger_token_file)) if args.ledger_token_file \
            else token
        asks = (*ledger, ledger_token)
        source = args.source or DEFAULT_SOURCE
    run = asyncio.run(_reconcile(server, token, args.session, asks, source,
                                 args.include_cancelled))
    if args.json:
        print(json.dumps(run.as_json(), indent=2))
    else:
        cancelled = (f", {run.cancelled} failed call(s) that may still have been running"
                     if args.include_cancelled else "")
        print(f"session {run.session_id}: {run.unknown} outcome_unknown call(s){cancelled}, "
              f"{run.already_reported} reported before")
        for report in run.reports:
            print(f"  reported {report.key} [{report.kind.value}] "
                  f"({'accepted' if report.accepted else 'REFUSED'}): {report.text}")
        print(f"every {'unsettled' if args.include_cancelled else 'outcome_unknown'} call is "
              "reported" if run.complete else f"interrupted: {run.interrupted}")
    return EXIT_OK if run.complete else EXIT_FAILED


async def _reconcile(server: tuple[str, int], token: str, session_id: str,
                     asks: OutcomeCheck | tuple[str, int, str], source: str,
                     include_cancelled: bool = False) -> ReconcileRun:
    """Reach the server, then the effect ledger when `asks` is its address (SpecError, one
    line, for either out of reach), then run the job; an unknown session is bad input."""
    from atmostonce.runtime.client import AsyncClient

    close: Callable[[], None] | None = None
    try:
        async with AsyncClient(*server, token=token) as client:
            await client.connect()
            if isinstance(asks, tuple):
                check, close = await connected_ledger_check(*asks)
            else:
                check = asks
            return await report_unknown_outcomes(client, session_id, check, source,
                                                 require_session=True,
                                                 include_cancelled=include_cancelled)
    finally:
        if close is not None:
            close()


def _nemeses(text: str) -> tuple[NemesisKind, ...]:
    """`--nemesis`: fault kinds, or 'none' for no faults; an empty list is refused rather than
    read as either."""
    if text.strip() == "none":
        return ()
    known = [k.value for k in NemesisKind]
    return tuple(NemesisKind(n) for n in arguments.names(text, "--nemesis", "nemesis", known))


def _cuts(text: str) -> tuple[CutMode, ...]:
    known = [m.value for m in CutMode]
    return tuple(CutMode(n) for n in arguments.names(text, "--cuts", "cut", known))


def _address(given: str | None, env: str, flag: str, noun: str = "address",
             metavar: str = "HOST:PORT") -> str:
    """The flag's value, or else the environment variable's; SpecError when neither is set."""
    value = given if given is not None else os.environ.get(env)
    if value is None or not value.strip():
        raise SpecError(f"no {noun}: pass {flag} {metavar} or set ${env}")
    return value


