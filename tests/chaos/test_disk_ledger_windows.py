"""The disk nemesis's bookkeeping when the effect ledger is a target, on stand-ins (no
processes): windows fall on the server and on the ledger by the seed; a ledger window is logged
once with its target however it ends (the ledger stops on the fault, or lives through it and
is killed and started again), its fault is only ever cleared in the ledger process it was
turned on in, a server restart leaves it on, and a ledger that died otherwise is an error."""

from __future__ import annotations

from typing import cast

from atmostonce.chaos.nemesis import LEDGER, SERVER, Fault, Ledger, Nemesis, NemesisKind
from atmostonce.engines.adapter import Engine
from atmostonce.runtime.disk_faults import DISK_FAULT_EXIT
from atmostonce.runtime.fiu import DiskFault
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig
from tests.chaos.test_disk_windows import Stand


class LedgerStand:
    """A ledger that is a number (its incarnation) and an exit status; a new one cannot start
    while the old one runs (it holds the address)."""

    def __init__(self) -> None:
        self.process = 1
        self.exit: int | None = None
        self.on: dict[int, DiskFault] = {}
        self.cleared: list[tuple[int, DiskFault]] = []

    def alive(self) -> bool:
        return self.exit is None

    def kill(self) -> None:
        self.exit = -9

    def start(self) -> str:
        if self.alive():
            raise SpecError(f"ledger {self.process} still holds the address")
        self.process += 1
        self.exit = None
        return f"ledger {self.process}"

    def disk_fault(self, fault: DiskFault) -> None:
        self.on[self.process] = fault

    def clear_disk_fault(self, fault: DiskFault) -> None:
        if self.on.pop(self.process, None) is not fault:
            raise SpecError(f"ledger {self.process} never had {fault.value} on")
        self.cleared.append((self.process, fault))

    def died_of_disk_fault(self) -> bool:
        return self.exit == DISK_FAULT_EXIT


def nemesis(stand: Stand, ledger: LedgerStand, seed: int = 3) -> Nemesis:
    return Nemesis(cast(Engine, stand), (NemesisKind.DISK, NemesisKind.RESTART), seed,
                   ExecutorConfig(), 0, lambda: None, set, lambda line: None,
                   ledger=cast(Ledger, ledger))


def windows(log: list[Fault]) -> list[Fault]:
    return [f for f in log if f.kind == "disk"]


def ledger_window(stand: Stand, ledger: LedgerStand) -> Nemesis:
    """A nemesis whose first window is on the ledger: the first seed that draws it."""
    for seed in range(100):
        hurt = nemesis(stand, ledger, seed)
        hurt._disk()
        if hurt.disk_on is not None and hurt.disk_on[3] == LEDGER:
            return hurt
        if hurt.disk_on is not None:
            hurt._disk_over(hurt.disk_on[0])
    raise AssertionError("no seed of 100 put a window on the ledger")


def test_windows_fall_on_both_the_server_and_the_ledger() -> None:
    stand, ledger = Stand(), LedgerStand()
    hurt = nemesis(stand, ledger)
    for _ in range(40):
        hurt._disk()
        assert hurt.disk_on is not None
        hurt._disk_over(hurt.disk_on[0])
    targets = [f.target for f in windows(hurt.log.faults)]
    assert len(targets) == 40
    assert {SERVER, LEDGER} == set(targets)
    assert all(f.detail.startswith(f"{f.target} ") for f in windows(hurt.log.faults))
    assert hurt.log.disk_windows() == {LEDGER: targets.count(LEDGER),
                                       SERVER: targets.count(SERVER)}


def test_a_window_the_ledger_lives_through_is_cleared_in_it_and_restarts_only_it() -> None:
    stand, ledger = Stand(), LedgerStand()
    hurt = ledger_window(stand, ledger)
    servers, restarts = stand.server, len(hurt.log.restarts)
    assert hurt.disk_on is not None
    hurt._disk_over(hurt.disk_on[0])
    assert [process for process, _ in ledger.cleared] == [1]
    assert ledger.process == 2
    assert (stand.server, len(hurt.log.restarts)) == (servers, restarts)
    last = windows(hurt.log.faults)[-1]
    assert (last.target, last.end is not None) == (LEDGER, True)
    assert "the ledger lived through it" in last.detail
    assert hurt.disk_on is None


def test_a_ledger_that_stops_on_the_fault_ends_its_window_once_and_is_started_again() -> None:
    stand, ledger = Stand(), LedgerStand()
    hurt = ledger_window(stand, ledger)
    assert hurt.disk_on is not None
    number = hurt.disk_on[0]
    ledger.exit = DISK_FAULT_EXIT
    hurt._disk_over(number)
    hurt.supervise()
    hurt._disk_over(number)
    assert ledger.cleared == []
    assert ledger.process == 2
    assert [f.kind for f in hurt.log.faults if f.target == LEDGER] == [
        "ledger-disk-exit", "disk"]
    assert hurt.log.consequences() == {"ledger-disk-exit": 1}
    assert hurt.log.errors == []


def test_a_server_restart_during_a_ledger_window_leaves_the_window_on() -> None:
    stand, ledger = Stand(), LedgerStand()
    hurt = ledger_window(stand, ledger)
    assert hurt.disk_on is not None
    number = hurt.disk_on[0]
    hurt._restart()
    assert hurt.disk_on is not None
    assert hurt.disk_on[0] == number
    hurt.settle()
    assert hurt.disk_on is None
    assert [process for process, _ in ledger.cleared] == [1]
    assert len(windows(hurt.log.faults)) == 1


def test_a_ledger_that_died_otherwise_is_an_error_and_is_started_again() -> None:
    stand, ledger = Stand(), LedgerStand()
    hurt = nemesis(stand, ledger)
    ledger.exit = 1
    hurt.supervise()
    assert ledger.process == 2
    assert [f.kind for f in hurt.log.faults] == ["ledger-died"]
    assert len(hurt.log.errors) == 1
    assert "ledger died on its own" in hurt.log.errors[0]


def test_no_worker_starts_while_a_ledger_window_is_on() -> None:
    stand, ledger = Stand(), LedgerStand()
    hurt = ledger_window(stand, ledger)
    started = stand.workers_started
    hurt.owed = 1
    hurt._replace()
    assert stand.workers_started == started
    assert hurt.disk_on is not None
    hurt._disk_over(hurt.disk_on[0])
    hurt._replace()
    assert stand.workers_started == started + 1
