"""The runtime's subcommands: `serve`, `worker`, `ledger` and `demo`; `register` adds them to the
`atmostonce` parser.

Long-running commands stop cleanly on SIGTERM and SIGINT (the server makes its journal durable
first, a worker finishes the runs in hand). Bad input, a corrupt or foreign journal included,
is a SpecError the CLI prints on one line with exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from atmostonce import arguments
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.runtime.options import (
    add_config_arguments,
    add_tool_arguments,
    config_from_args,
)
from atmostonce.runtime.wire import LOOPBACK, parse_address, parse_port
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Executor, ExecutorConfig, ExecutorFactory

EXIT_OK = 0
GIVE_UP_AFTER = 60.0
"""Seconds a worker keeps trying to reach a server or ledger that is gone, by default."""
MAX_SLOTS = 256
"""The most slots one worker process runs: each is a connection and a tool run of its own."""


def register(subparsers: Any) -> None:
    """Add `serve`, `worker`, `ledger` and `demo` to the project's argparse subparsers."""
    serve = subparsers.add_parser(
        "serve", help="run the executor server on a journal",
        description="Run an executor (the reference one unless --executor names another) as a "
        "server: workers and clients connect to one "
        "TCP port and speak newline-delimited JSON; every record is journalled in an fsynced "
        "SQLite file before anyone can see it, and a restart recovers from it (D-5, D-8). "
        "Exit 0 on SIGTERM/SIGINT, 1 when the journal cannot be written or the executor "
        "fails, 2 on bad input "
        "(a corrupt or foreign journal included).")
    serve.add_argument("--journal", required=True, type=arguments.output_file, metavar="PATH",
                       help="the journal file (created when missing)")
    serve.add_argument("--executor", default=DEFAULT_EXECUTOR, metavar="MODULE:FACTORY",
                       help="the executor the server drives: a factory taking an "
                       "ExecutorConfig and returning an atmostonce.spec.protocol.Executor "
                       f"(default {DEFAULT_EXECUTOR})")
    _listen_arguments(serve)
    add_config_arguments(serve)
    serve.add_argument("--token-file", type=Path, metavar="PATH",
                       help="the deployment's token file, which workers and clients present "
                       "(default: JOURNAL.token beside the journal, made with mode 0600 when "
                       "missing)")
    serve.add_argument("--approver-token-file", type=Path, metavar="PATH",
                       help="the token file whose holder alone may approve or reject a call "
                       "(default: JOURNAL.approver-token, made when missing)")
    serve.add_argument("--liveness-log", type=arguments.output_file, metavar="PATH",
                       help="append each worker hello and heartbeat the executor takes to PATH, "
                       "one JSON line each at the executor's clock, so an observer can tell a "
                       "worker declared lost while it was still heard from (default: none)")
    serve.set_defaults(func=cmd_serve)

    worker = subparsers.add_parser(
        "worker", help="run a worker process that runs the demo tools or your own (--tools)",
        description="Connect to the server, poll for work, run a tool only on its go-ahead, "
        "heartbeat while it runs; exit at once (status 3) when the lease runs out with no word "
        "from the server (D-12). Each slot is one worker named NAME-PID (NAME-PID-I with "
        "several slots).")
    worker.add_argument("--server", required=True, metavar="HOST:PORT")
    worker.add_argument("--ledger", required=True, metavar="HOST:PORT")
    worker.add_argument("--name", default="worker", help="worker name prefix (default worker)")
    worker.add_argument("--slots", type=arguments.CountUpTo(MAX_SLOTS), default=1,
                        metavar="N", help="tool runs at a time, each a worker of its own, at "
                        f"most {MAX_SLOTS} (default 1)")
    worker.add_argument("--heartbeat-interval", type=arguments.positive, default=None,
                        metavar="S", help="seconds between heartbeats (default: a quarter of "
                        "the lease)")
    worker.add_argument("--token-file", required=True, type=Path, metavar="PATH",
                        help="the server's token file (see serve --token-file)")
    worker.add_argument("--ledger-token-file", type=Path, metavar="PATH",
                        help="the ledger's token file (default: the --token-file)")
    worker.add_argument("--give-up-after", type=arguments.positive, default=GIVE_UP_AFTER,
                        metavar="S", help="exit 1 when the server or the ledger stays out of "
                        f"reach this many seconds (default {GIVE_UP_AFTER:g})")
    worker.add_argument("--tools", metavar="MODULE:REGISTRY",
                        help="run your own tool functions instead of the demo tools: a "
                        "mapping or list of atmostonce.runtime.registry.Tool (each an async "
                        "function of the call, with its ToolPolicy), or a function returning "
                        "one; see examples/my_tools.py")
    add_tool_arguments(worker)
    worker.set_defaults(func=cmd_worker)

    ledger = subparsers.add_parser(
        "ledger", help="run the effect ledger service",
        description="Record every write the tools send (dropping a repeated key for keyed "
        "services) and every run's start and end: the ground truth of what ran.")
    ledger.add_argument("--db", required=True, type=arguments.output_file, metavar="PATH",
                        help="the ledger's SQLite file (created when missing)")
    _listen_arguments(ledger)
    ledger.add_argument("--keyed", action="append", default=[], metavar="TOOL",
                        help="TOOL's service drops a repeated idempotency key (TOOL: one of "
                        "the demo tools)")
    ledger.add_argument("--plain", action="append", default=[], metavar="TOOL",
                        help="TOOL's service applies every write")
    ledger.add_argument("--token-file", type=Path, metavar="PATH",
                        help="the token file workers and readers present (default: DB.token "
                        "beside the file, made with mode 0600 when missing)")
    ledger.set_defaults(func=cmd_ledger)

    demo = subparsers.add_parser(
        "demo", help="run an agent session end to end on loopback and explain it",
        description="Start a ledger, a server and two workers on loopback, run a small session "
        "(policies, a read, an approval, a worker killed mid-call, reconcile), print what "
        "happened and clean up.")
    demo.set_defaults(func=cmd_demo)


def _listen_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=LOOPBACK, help=f"address to listen on "
                        f"(default {LOOPBACK})")
    parser.add_argument("--port", default="0", metavar="N",
                        help="TCP port (default 0: a free one, printed when ready)")


def _announce(line: str) -> None:
    print(line, flush=True)


def _logging(role: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format=f"%(asctime)s {role} %(message)s")


def _until_signalled(main: Callable[[asyncio.Event], Awaitable[int]]) -> int:
    """Run `main(stop)` on a fresh loop; SIGTERM and SIGINT set `stop`."""
    async def runner() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        return await main(stop)

    return asyncio.run(runner())


def peer(text: str, flag: str) -> tuple[str, int]:
    """The address of a process to connect to, `HOST:PORT`; SpecError naming `flag` for a
    malformed one or port 0, which picks a free port only when listening."""
    try:
        host, port = parse_address(text)
    except SpecError as error:
        raise SpecError(f"{flag}: {error}") from None
    if port == 0:
        raise SpecError(f"{flag} {text}: port 0 only means 'any free port' when listening; "
                        "give the port the process listens on")
    return host, port


def cmd_serve(args: argparse.Namespace) -> int:
    from atmostonce.runtime.server import serve, token_files

    config = config_from_args(args)
    port = parse_port(args.port)
    factory = load_factory(args.executor)
    _built(factory, config, args.executor)
    journal: Path = args.journal
    _logging("server")
    tokens = token_files(journal)
    tokens = (args.token_file or tokens[0], args.approver_token_file or tokens[1])
    return _until_signalled(lambda stop: serve(journal, args.host, port, config, stop,
                                               _announce, factory, tokens,
                                               args.liveness_log))


def _built(factory: ExecutorFactory, config: ExecutorConfig, path: str) -> Executor:
    """One executor with the server's options, so bad options fail before anything listens."""
    try:
        return factory(config)
    except SpecError:
        raise
    except Exception as error:
        raise SpecError(f"executor factory {path!r} refused the options: "
                        f"{type(error).__name__}: {error}") from None


def cmd_worker(args: argparse.Namespace) -> int:
    from atmostonce.runtime.registry import load_registry
    from atmostonce.runtime.tokens import read_token
    from atmostonce.runtime.tools import behaviours
    from atmostonce.runtime.worker import WorkerProcess

    registry = None
    if args.tools is not None:
        for flag in ("duration", "write_at", "fail", "stop_on_cancel"):
            if getattr(args, flag):
                raise SpecError(f"--{flag.replace('_', '-')} tunes a demo tool; your own "
                                "tools (--tools) behave as their functions say")
        registry = load_registry(args.tools)
    token = read_token(args.token_file)
    ledger_token = read_token(args.ledger_token_file) if args.ledger_token_file else token
    process = WorkerProcess(peer(args.server, "--server"), peer(args.ledger, "--ledger"),
                            args.name, args.slots,
                            behaviours(args.duration, args.write_at, args.fail,
                                       args.stop_on_cancel),
                            args.heartbeat_interval, token=token, ledger_token=ledger_token,
                            give_up_after=args.give_up_after, tools=registry)
    _logging("worker")
    return _until_signalled(lambda stop: process.run(stop, _announce))


def cmd_ledger(args: argparse.Namespace) -> int:
    from atmostonce.runtime.ledger import serve_ledger, services_with
    from atmostonce.runtime.tools import TOOLS

    for flag, tools in (("--keyed", args.keyed), ("--plain", args.plain)):
        for name in tools:
            if name not in TOOLS:
                raise SpecError(f"{flag}: unknown tool {name!r} (the ledger serves the demo "
                                f"tools: {', '.join(TOOLS)})")
    both = sorted(set(args.keyed) & set(args.plain))
    if both:
        raise SpecError(f"tool {both[0]!r} is given both --keyed and --plain: its service "
                        "either drops a repeated key or applies every write")
    db: Path = args.db
    port = parse_port(args.port)
    services = services_with(args.keyed, args.plain)
    _logging("ledger")
    return _until_signalled(lambda stop: serve_ledger(db, args.host, port, services, stop,
                                                      _announce, args.token_file))


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo; SIGTERM, like Ctrl-C, stops it after its processes are cleaned up."""
    from atmostonce.runtime.demo import run_demo

    signal.signal(signal.SIGTERM, _interrupt)
    return run_demo()
