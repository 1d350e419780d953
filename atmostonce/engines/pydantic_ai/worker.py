"""A worker process of the Pydantic AI mapping: `python -m atmostonce.engines.pydantic_ai.worker
...`, as Pydantic AI's durable-execution guide runs one: a Temporal worker whose client has the
`PydanticAIPlugin`, serving the session workflow (whose `__pydantic_ai_agents__` register both
agents' activities) and the policy registry on one task queue. The chaos harness kills, pauses
and cuts off these processes; Temporal moves a lost worker's workflows to the others.

Readiness: one `atmostonce-ready` line once the worker is connected and polling. SIGTERM stops
the process within a second; the runs still going are reported to the ledger as stopped. The
process ends with `os._exit` (`atmostonce.runtime.processes.leave`), like the Temporal mapping's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import NoReturn

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.worker import Worker

from atmostonce.engines.pydantic_ai import mapping, tools
from atmostonce.engines.pydantic_ai.workflows import PydanticSession
from atmostonce.engines.temporal.worker import (
    CONNECT_FOR,
    RUNNER,
    STOP_GRACE,
    EventsFile,
    connect_client,
    stop_on_signals,
    until_stopped,
)
from atmostonce.engines.temporal.workflows import ToolPolicies
from atmostonce.engines.worker_main import add_process_arguments, worker_main
from atmostonce.runtime.ledger_client import worker_ledger
from atmostonce.runtime.processes import leave
from atmostonce.runtime.tokens import read_token
from atmostonce.runtime.tools import behaviours
from atmostonce.runtime.wire import ready_line


async def serve(args: argparse.Namespace) -> NoReturn:
    name = f"{args.name}-{os.getpid()}"
    stop = asyncio.Event()
    stop_on_signals(stop)
    ledger = await worker_ledger(args.ledger, read_token(Path(args.token_file)), name,
                                  CONNECT_FOR)
    process = tools.ToolProcess(name, ledger, EventsFile(Path(args.events), name),
                                behaviours())
    tools.serve(process)
    client = await connect_client(args.server, name, [PydanticAIPlugin()])
    worker = Worker(client, task_queue=mapping.TASK_QUEUE,
                    workflows=[PydanticSession, ToolPolicies], identity=name,
                    workflow_runner=RUNNER,
                    graceful_shutdown_timeout=timedelta(seconds=STOP_GRACE))
    running = asyncio.create_task(worker.run())
    print(ready_line("worker", names=[name], pid=os.getpid()), flush=True)
    await until_stopped(stop, running)
    await process.stopped()
    ledger.close()
    leave(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m atmostonce.engines.pydantic_ai.worker")
    parser.add_argument("--server", required=True, metavar="HOST:PORT")
    add_process_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> NoReturn:
    worker_main("pydantic-ai worker", _parser(), serve, argv)


if __name__ == "__main__":
    main()
