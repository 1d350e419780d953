"""The runtime server: an executor's sans-IO core driven by asyncio, a durable journal and real
connections. The executor is the reference one unless `serve` gets another factory (any
`atmostonce.spec.protocol.Executor`, such as a mutant under test: `atmostonce serve --executor
MODULE:FACTORY`); the server relies on the protocol alone.

On start (`serve`) the server reads its journal and calls `recover` (D-8); connections never
survive a restart, so attempts that were out at a worker are handled as lost to it. `driver`
hands each event to the executor and carries out its commands, and stops the server when the
executor fails; `server_wire` speaks the wire protocol with workers and clients (its docstring
documents it).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from atmostonce.check.executors import guard
from atmostonce.check.executors.guard import ProtocolBreach
from atmostonce.executor import reference
from atmostonce.runtime.disk_faults import disk_fault, fault_line, stop_now
from atmostonce.runtime.driver import ExecutorFailed, refused_input
from atmostonce.runtime.durability import GroupCommit
from atmostonce.runtime.journal import Entry, open_journal
from atmostonce.runtime.liveness_log import LivenessLog
from atmostonce.runtime.server_wire import Server
from atmostonce.runtime.tokens import ServerTokens, check_token, ensure_token
from atmostonce.runtime.wire import bind, listen, ready_line
from atmostonce.spec.protocol import Command, ExecutorConfig, ExecutorFactory

log = logging.getLogger("atmostonce.server")


def last_time(entries: Sequence[Entry]) -> float:
    """The latest `at` in the journal, so a restarted clock can continue from it."""
    latest = 0.0
    for entry in entries:
        at = entry.get("at")
        if isinstance(at, int | float) and not isinstance(at, bool) and at > latest:
            latest = float(at)
    return latest


async def serve(journal: Path, host: str, port: int, config: ExecutorConfig,
                stop: asyncio.Event, announce: Callable[[str], None] | None = None,
                factory: ExecutorFactory = reference,
                tokens: tuple[Path, Path] | None = None,
                liveness_log: Path | None = None) -> int:
    """Take the port, recover from the journal, and serve until `stop` is set, running the
    executor `factory` builds; 0 on a clean stop, 1 when the journal could not be written or
    the executor failed (logged with its traceback); a disk fault under the journal ends the
    process at once (`atmostonce.runtime.disk_faults`). SpecError for a bad journal, bad options
    or a port that cannot be had, which leaves the journal as it was (or absent). `tokens`
    names the deployment's and the approver's token files (default: beside the journal, each
    made when missing); `liveness_log`, a file to append each hello and heartbeat to
    (`atmostonce.runtime.liveness_log`)."""
    loop = asyncio.get_running_loop()
    executor = guard.build(factory, config, json_entries=True)
    deployment_file, approver_file = tokens or token_files(journal)
    sock = bind(host, port)
    try:
        check_token(deployment_file)
        check_token(approver_file)
    except BaseException:
        sock.close()
        raise

    def recover(entries: list[Entry]) -> tuple[float, int, list[Command]]:
        offset = max(0.0, last_time(entries) - loop.time())
        try:
            commands = executor.recover(entries, loop.time() + offset)
        except ProtocolBreach as breach:
            refused_input(breach)
            raise ExecutorFailed(f"the executor failed: {breach}") from breach.__cause__
        return offset, len(entries), commands

    try:
        journal_file, (offset, recovered, commands) = open_journal(journal, recover)
    except ExecutorFailed as error:
        sock.close()
        log.error("stopping: %s", error, exc_info=error.__cause__)
        return 1
    except BaseException:
        sock.close()
        raise
    try:
        accepted = ServerTokens(ensure_token(deployment_file), ensure_token(approver_file))
    except BaseException:
        sock.close()
        journal_file.close()
        raise
    failed: list[BaseException] = []

    def fatal(error: BaseException) -> None:
        fault = disk_fault(error)
        if fault is not None:
            stop_now(log, fault_line("journal", journal, error, fault))
        log.error("stopping: %s", error)
        failed.append(error)
        stop.set()

    commit = GroupCommit(journal_file, fatal)
    server = Server(executor, config, commit, offset, fatal, accepted)
    if liveness_log is not None:
        server.liveness = LivenessLog(liveness_log)
    try:
        server.carry_out(commands)
    except Exception as error:
        log.error("stopping: the executor's commands after recovery cannot be carried out: "
                  "%s: %s", type(error).__name__, error, exc_info=error)
        failed.append(error)
        stop.set()
    await commit.drain()
    listener, bound_host, bound_port = await listen(server.connection, sock)
    log.info("listening on %s:%s, journal %s (%d entries recovered)", bound_host, bound_port,
             journal, recovered)
    if announce is not None and not failed:
        announce(ready_line("server", host=bound_host, port=bound_port, journal=str(journal),
                            pid=os.getpid(), recovered=recovered,
                            token_file=str(deployment_file),
                            approver_token_file=str(approver_file)))
    try:
        await stop.wait()
    finally:
        listener.close()
        await server.close()
        await listener.wait_closed()
        commit.close()
        if server.liveness is not None:
            server.liveness.close()
    return 1 if failed else 0


def token_files(journal: Path) -> tuple[Path, Path]:
    """Where a server on `journal` keeps its token files unless told otherwise: beside it."""
    return (journal.with_name(journal.name + ".token"),
            journal.with_name(journal.name + ".approver-token"))

