"""A worker process of the Restate mapping: `python -m atmostonce.engines.restate.worker ...`
serves the mapping's services (`services.SERVICES`) with hypercorn (HTTP/2 without TLS, as
Restate's server speaks to a deployment) on a loopback port, after connecting to the effect
ledger. It prints the `atmostonce-ready` line once it serves. The chaos harness kills, pauses
and cuts it; SIGTERM ends it, a run still going reported to the ledger as stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import hypercorn.asyncio
import hypercorn.config
import restate

from atmostonce.engines.restate import tools
from atmostonce.engines.restate.services import SERVICES
from atmostonce.engines.worker_main import add_process_arguments, worker_main
from atmostonce.runtime.ledger_client import worker_ledger
from atmostonce.runtime.processes import leave
from atmostonce.runtime.tokens import read_token
from atmostonce.runtime.tools import behaviours
from atmostonce.runtime.wire import ready_line

CONNECT_FOR = 30.0
"""Seconds the worker keeps trying to reach the ledger at start."""


async def serve(args: argparse.Namespace) -> NoReturn:
    name = f"{args.name}-{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    ledger = await worker_ledger(args.ledger, read_token(Path(args.token_file)), name,
                                 CONNECT_FOR)
    worker = tools.Worker(name, ledger, tools.EventsFile(Path(args.events), name), behaviours())
    tools.install(worker)
    config = hypercorn.config.Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.loglevel = "WARNING"
    config.graceful_timeout = 0.5
    app = restate.app(list(SERVICES))
    serving = asyncio.create_task(hypercorn.asyncio.serve(
        app, config, shutdown_trigger=stop.wait))
    await _listening(args.host, args.port, serving)
    print(ready_line("worker", names=[name], pid=os.getpid()), flush=True)
    await serving
    notices = [ledger.request({"op": "run_ended", "worker": name, "attempt": attempt,
                               "end": "stopped",
                               "output": "stopped by its worker: the worker was told to stop"})
               for attempt in worker.runs]
    if notices:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*notices), 0.3)
    ledger.close()
    leave(0)


async def _listening(host: str, port: int, serving: asyncio.Task[None]) -> None:
    """Return once the port takes connections (hypercorn binds after its task starts)."""
    while not serving.done():
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            await asyncio.sleep(0.02)
            continue
        writer.close()
        return
    serving.result()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m atmostonce.engines.restate.worker")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    add_process_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> NoReturn:
    worker_main("restate worker", _parser(), serve, argv)


if __name__ == "__main__":
    main()
