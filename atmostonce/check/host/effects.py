"""What an environment supplies to the host: the effect of each command the host carries out,
and what it does when the executor breaks one of the protocol's own rules."""

from __future__ import annotations

from typing import Protocol

from atmostonce.spec.protocol import (
    JSON,
    Cancel,
    Command,
    DropWorker,
    GoAhead,
    NoWork,
    Publish,
    Reply,
    StartTimer,
)


class Effects(Protocol):
    """One environment's effects, called by the host in the order of the executor's commands.
    The host has already judged the protocol's rules and keeps which timers run."""

    def persist(self, entry: dict[str, JSON]) -> bool:
        """Make `entry` durable; True when the environment's server dies right after it (the
        rest of the batch is then handed to `cut`)."""
        ...

    def start_timer(self, command: StartTimer) -> None:
        """Fire the timer after its delay (restarting it if it runs); the environment calls
        `Host.fire` when it is due."""
        ...

    def stop_timer(self, timer: str) -> None: ...

    def go_ahead(self, command: GoAhead, persisted: bool) -> None:
        """Tell the worker to start; `persisted` is the host's judgement of D-5."""
        ...

    def no_work(self, command: NoWork) -> None: ...

    def cancel(self, command: Cancel) -> None: ...

    def drop_worker(self, command: DropWorker) -> None: ...

    def publish(self, command: Publish) -> None: ...

    def reply(self, command: Reply) -> None: ...

    def cut(self, rest: list[Command], handed: list[GoAhead]) -> None:
        """The server died right after a `Persist` (`persist` said so): `rest` are the batch's
        later commands, never carried out, and `handed` the go-aheads among them whose
        hand-out the batch had persisted, which therefore count as reached (D-5)."""
        ...

    def broken(self, rule: str, text: str) -> None:
        """The executor broke the protocol's rule `rule` (an id of `atmostonce.check.host.rules`),
        worded by `text`: the environment reports it in its own way (raises, or lets its
        history show it) and the host then goes on."""
        ...
