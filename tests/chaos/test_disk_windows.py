"""The disk nemesis's bookkeeping, on an engine stand-in (no processes): each window is logged
once however it ends (the server stops on the fault, lives through it, or is restarted during
it), a fault is only ever cleared in the server it was turned on in, and no worker starts while
a window is on."""

from __future__ import annotations

from typing import cast

from atmostonce.chaos.nemesis import Fault, Nemesis, NemesisKind
from atmostonce.engines.adapter import Engine, WorkerRef
from atmostonce.runtime.disk_faults import DISK_FAULT_EXIT
from atmostonce.runtime.fiu import DiskFault
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig


class Stand:
    """A server that is a number (its incarnation) and an exit status, and no workers."""

    def __init__(self) -> None:
        self.server = 1
        self.exit: int | None = None
        self.on: dict[int, DiskFault] = {}
        self.cleared: list[tuple[int, DiskFault]] = []
        self.workers_started = 0

    def server_alive(self) -> bool:
        return self.exit is None

    def kill_server(self) -> None:
        self.exit = -9

    def start_server(self) -> None:
        self.server += 1
        self.exit = None

    def pids(self) -> list[int]:
        return [self.server]

    def workers(self) -> list[WorkerRef]:
        return []

    def start_worker(self) -> WorkerRef:
        self.workers_started += 1
        return WorkerRef(f"w{self.workers_started}", (), 0)

    def disk_fault(self, fault: DiskFault) -> None:
        self.on[self.server] = fault

    def clear_disk_fault(self, fault: DiskFault) -> None:
        if self.on.pop(self.server, None) is not fault:
            raise SpecError(f"server {self.server} never had {fault.value} on")
        self.cleared.append((self.server, fault))

    def died_of_disk_fault(self) -> bool:
        return self.exit == DISK_FAULT_EXIT


def nemesis(stand: Stand) -> Nemesis:
    return Nemesis(cast(Engine, stand), (NemesisKind.DISK, NemesisKind.RESTART), 3,
                   ExecutorConfig(), 0, lambda: None, set, lambda line: None)


def disk_faults(log: list[Fault]) -> list[Fault]:
    return [f for f in log if f.kind == "disk"]


def test_a_window_the_server_lives_through_is_cleared_in_it_and_restarts_it() -> None:
    stand = Stand()
    hurt = nemesis(stand)
    hurt._disk()
    assert hurt.disk_on is not None
    hurt._disk_over(hurt.disk_on[0])
    assert [server for server, _ in stand.cleared] == [1]
    assert stand.server == 2
    assert len(disk_faults(hurt.log.faults)) == 1
    assert hurt.disk_on is None


def test_a_server_that_stops_on_the_fault_ends_its_window_once() -> None:
    stand = Stand()
    hurt = nemesis(stand)
    hurt._disk()
    assert hurt.disk_on is not None
    number = hurt.disk_on[0]
    stand.exit = DISK_FAULT_EXIT
    hurt._disk_over(number)
    hurt.supervise()
    hurt._disk_over(number)
    assert stand.cleared == []
    assert stand.server == 2
    assert [f.kind for f in hurt.log.faults] == ["disk-exit", "disk"]
    assert hurt.log.errors == []


def test_a_restart_during_a_window_ends_it_and_clears_nothing_in_the_new_server() -> None:
    stand = Stand()
    hurt = nemesis(stand)
    hurt._disk()
    assert hurt.disk_on is not None
    number = hurt.disk_on[0]
    hurt._restart()
    hurt.settle()
    hurt._disk_over(number)
    assert stand.cleared == []
    assert len(disk_faults(hurt.log.faults)) == 1
    assert "restarted during it" in disk_faults(hurt.log.faults)[0].detail


def test_no_worker_starts_while_a_window_is_on() -> None:
    stand = Stand()
    hurt = nemesis(stand)
    hurt._disk()
    hurt.owed = 1
    hurt._replace()
    assert stand.workers_started == 0
    assert hurt.disk_on is not None
    hurt._disk_over(hurt.disk_on[0])
    hurt._replace()
    assert stand.workers_started == 1
