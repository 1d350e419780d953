"""An application process: `python -m atmostonce.engines.dbos.worker --variant NAME ...`, the
worker of a DBOS variant. It launches DBOS on the shared SQLite system database with its
executor id and the one application version, registers the session workflow (`app`) and the
`sessions` queue it takes workflows from, and is what the chaos harness kills and pauses.

On launch DBOS recovers the PENDING workflows of this executor id and application version:
a process started with the executor id of one that was killed resumes that one's sessions,
replaying their checkpointed steps and running again what was not checkpointed.

The effect ledger's connection lives on the process's own event loop; the workflows, which
DBOS runs on its own threads, run their tools on it (`RunContext.on_loop`). Readiness: one
`atmostonce-ready` line once the ledger is reached, before DBOS is launched, except for the
first process (`--migrate`), which creates DBOS's tables first. A launch needs SQLite's write
lock, which a paused process may hold for as long as it is paused: the harness, which resumes
paused processes from the same thread that starts new ones, must not wait for it. A launch
that fails (the lock held past SQLite's busy timeout) ends the process, and the harness starts
another in its place, with the same executor id. SIGTERM ends the process within a second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from dbos import DBOS, DBOSConfig

from atmostonce.engines.appstore import AppStore
from atmostonce.engines.dbos.app import QUEUE, RunContext, register
from atmostonce.engines.dbos.mapping import VARIANTS, WORKER, Variant
from atmostonce.engines.guards import journal_guard
from atmostonce.engines.notes import Notes
from atmostonce.engines.worker_main import add_process_arguments, worker_main
from atmostonce.runtime.ledger_client import worker_ledger
from atmostonce.runtime.options import add_config_arguments, config_from_args
from atmostonce.runtime.processes import leave
from atmostonce.runtime.tokens import read_token
from atmostonce.runtime.tools import behaviours
from atmostonce.runtime.wire import ready_line
from atmostonce.spec.protocol import ExecutorConfig

APP_NAME = "atmostonce"
APP_VERSION = "atmostonce-dbos-1"
"""Every application process runs this version: DBOS recovers only workflows of its own."""
POLL = 0.05
"""Seconds between two looks of DBOS for messages and events."""
QUEUE_POLL = 1.0
"""Seconds between two looks of a process at the queue (DBOS's default): each look is a write
transaction, and SQLite has one writer at a time for every process."""
CONNECT_FOR = 30.0


def dbos_config(system_database: Path, executor_id: str, migrate: bool) -> DBOSConfig:
    """DBOS on the SQLite file at `system_database`, as the executor `executor_id`; only a
    process that `migrate`s creates DBOS's tables (the first one started): the others only
    check them, so a launch needs no write lock that a paused process may hold."""
    return DBOSConfig(name=APP_NAME, system_database_url=f"sqlite:///{system_database}",
                      executor_id=executor_id, application_version=APP_VERSION,
                      log_level="WARNING", notification_listener_polling_interval_sec=POLL,
                      use_listen_notify=False, run_migrations=migrate)


Register = Callable[[RunContext, Variant, ExecutorConfig], None]
"""What registers a variant's session workflow with DBOS, before it is launched."""


def _launch(args: argparse.Namespace, ctx: RunContext, variant: Variant,
            config: ExecutorConfig, register_app: Register) -> None:
    DBOS(config=dbos_config(Path(args.system_database), args.executor_id, args.migrate))
    register_app(ctx, variant, config)
    DBOS.launch()
    DBOS.register_queue(QUEUE, polling_interval_sec=QUEUE_POLL)


async def run(args: argparse.Namespace, variant: Variant, config: ExecutorConfig,
              register_app: Register = register) -> NoReturn:
    name = f"{args.name}-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    ledger = await worker_ledger(args.ledger, read_token(Path(args.token_file)), name,
                                  CONNECT_FOR)
    guard = journal_guard(Path(args.guard_journal), config) if args.guard_journal else None
    ctx = RunContext(name, AppStore(Path(args.store)), ledger, loop,
                     Notes(Path(args.events), name), behaviours(), guard)
    if args.migrate:
        await asyncio.to_thread(_launch, args, ctx, variant, config, register_app)
    print(ready_line("worker", names=[name], pid=os.getpid()), flush=True)
    if not args.migrate:
        await asyncio.to_thread(_launch, args, ctx, variant, config, register_app)
    await stop.wait()
    leave(0)


def parser_of(module: str, variants: Mapping[str, Variant]) -> argparse.ArgumentParser:
    """The command line of an application process of `variants` run as `module`."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("--variant", required=True, choices=sorted(variants))
    parser.add_argument("--store", required=True, metavar="PATH")
    parser.add_argument("--system-database", required=True, metavar="PATH")
    parser.add_argument("--executor-id", required=True)
    parser.add_argument("--guard-journal", metavar="PATH",
                        help="the guard's journal, shared by every process (guarded)")
    parser.add_argument("--migrate", action="store_true",
                        help="create DBOS's tables (the first process started)")
    add_process_arguments(parser)
    add_config_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> NoReturn:
    worker_main("dbos worker", parser_of(WORKER, VARIANTS),
                _work, argv)


def _work(args: argparse.Namespace) -> Coroutine[Any, Any, object]:
    return run(args, VARIANTS[args.variant], config_from_args(args))


if __name__ == "__main__":
    main()
