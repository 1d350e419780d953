"""The run's effect ledger as a process the nemesis may hurt: started on its SQLite file, and
started again on the same file, port and token after it stopped, since the engine's workers
know it by its address; with disk faults asked for, under libfiu's `fiu-run -x`, so its
fdatasync and pwrite can be made to fail (`atmostonce.runtime.fiu`). `LedgerReader` is the
harness's own connection to it for queries, opened again after the ledger restarted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from atmostonce.chaos import ledger_mutants
from atmostonce.runtime import fiu
from atmostonce.runtime.disk_faults import DISK_FAULT_EXIT
from atmostonce.runtime.fiu import DiskFault
from atmostonce.runtime.ledger_client import LedgerClient, LedgerRun, Write
from atmostonce.runtime.processes import MODULE, Managed, start, stop_all
from atmostonce.runtime.wire import LOOPBACK
from atmostonce.spec.errors import SpecError

READY = 20.0
"""Seconds a ledger may take to serve."""
REBIND = 5.0
"""Seconds a ledger started again keeps trying for its old port (a connection on its way
out may hold it for a moment)."""


class LedgerProcess:
    """The effect ledger at `workdir`/ledger.db on loopback (see the module docstring)."""

    def __init__(self, workdir: Path, token_file: Path, disk_faults: bool = False,
                 variant: str = "") -> None:
        """`variant` names a broken ledger of `atmostonce.chaos.ledger_mutants` to run
        instead of the real one."""
        self.db = workdir / "ledger.db"
        self.variant = variant
        self.workdir = workdir
        self.token_file = token_file
        self.disk_faults = disk_faults
        self.control = workdir / "ledger-fiu"
        """Where libfiu's control fifos of a ledger started for disk faults go."""
        if disk_faults and (why := fiu.missing()) is not None:
            raise SpecError(why)
        self.port = 0
        self.started: list[Managed] = []

    @property
    def process(self) -> Managed:
        if not self.started:
            raise SpecError("the effect ledger was never started")
        return self.started[-1]

    @property
    def pid(self) -> int:
        return self.process.pid

    def pids(self) -> list[int]:
        return [p.pid for p in self.started]

    def start(self) -> str:
        """Start the ledger on its file (on its old port once it had one) and wait until it
        serves; what was started, such as `pid 123`. SpecError when it does not serve."""
        deadline = time.monotonic() + REBIND
        while True:
            process = self._spawn()
            try:
                process.wait_ready(READY)
                break
            except SpecError:
                if self.port == 0 or time.monotonic() > deadline or \
                        "cannot listen" not in process.output():
                    raise
                time.sleep(0.1)
        self.port = int(process.info["port"])
        return f"pid {process.pid}"

    def _spawn(self) -> Managed:
        number = len(self.started) + 1
        log = self.workdir / ("ledger.log" if number == 1 else f"ledger-{number}.log")
        program = [sys.executable, "-m", MODULE]
        if self.variant:
            program = [sys.executable, "-m", ledger_mutants.__name__, self.variant]
        argv = [*program, "ledger", "--db", str(self.db), "--host", LOOPBACK,
                "--port", str(self.port), "--token-file", str(self.token_file)]
        process = start("ledger", fiu.under_fiu(argv, self.control) if self.disk_faults
                        else argv, log)
        self.started.append(process)
        return process

    def alive(self) -> bool:
        return bool(self.started) and self.process.alive

    def kill(self) -> None:
        """SIGKILL the ledger, and wait until it is gone."""
        if self.started:
            self.process.kill()

    def stop(self) -> None:
        """Stop every ledger process the run started (the latest commits what it holds)."""
        stop_all(list(reversed(self.started)))

    # -- DiskFaults ----------------------------------------------------------------------------

    def disk_fault(self, fault: DiskFault) -> None:
        if not self.alive():
            raise SpecError("the effect ledger is not running")
        fiu.inject(self.pid, self.control, fault)

    def clear_disk_fault(self, fault: DiskFault) -> None:
        if self.alive():
            try:
                fiu.clear(self.pid, self.control, fault)
            except SpecError:
                if self.alive():
                    raise

    def died_of_disk_fault(self) -> bool:
        return bool(self.started) and self.process.returncode == DISK_FAULT_EXIT


class LedgerReader:
    """The harness's queries to the ledger of `ledger`, on a connection opened again when the
    ledger it was opened to is gone."""

    def __init__(self, ledger: LedgerProcess, token: str) -> None:
        self.ledger = ledger
        self.token = token
        self._client: LedgerClient | None = None

    def _connected(self) -> LedgerClient:
        if self._client is None:
            self._client = LedgerClient(LOOPBACK, self.ledger.port, token=self.token)
        return self._client

    def _retry(self) -> LedgerClient:
        self.close()
        return self._connected()

    def runs(self, key: str | None = None) -> list[LedgerRun]:
        """Every run on record (of one key); SpecError when the ledger cannot answer."""
        try:
            return self._connected().runs(key)
        except SpecError:
            return self._retry().runs(key)

    def writes(self) -> list[Write]:
        """Every write on record; SpecError when the ledger cannot answer."""
        try:
            return self._connected().writes()
        except SpecError:
            return self._retry().writes()

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()

    def __enter__(self) -> LedgerReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
