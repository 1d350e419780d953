"""A server whose executor fails shows nothing the failure led to: the client that sent the
event gets an error saying the executor failed, the server process exits 1 with the exception
and its traceback in its log, and the journal keeps exactly what was durable before."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from atmostonce.executor import reference
from atmostonce.runtime.client import Client
from atmostonce.runtime.journal import read_journal
from atmostonce.runtime.processes import Managed, spawn
from atmostonce.runtime.tokens import read_token
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import JSON, Ask, Command, Event, Executor, ExecutorConfig
from atmostonce.spec.session import AgentSnapshot

LIMIT = 20.0
HERE = "tests.runtime.test_executor_failure"


class _Broken:
    """The reference executor with one way of breaking the protocol, chosen by name."""

    def __init__(self, config: ExecutorConfig, how: str) -> None:
        self.inner = reference(config)
        self.how = how

    def handle(self, event: Event) -> list[Command]:
        if isinstance(event, Ask) and self.how == "raises":
            raise RuntimeError("lost track of the call table")
        commands = self.inner.handle(event)
        if isinstance(event, Ask) and self.how == "not_a_list":
            return None  # type: ignore[return-value]
        if isinstance(event, Ask) and self.how == "a_tuple":
            return tuple(commands)  # type: ignore[return-value]
        if isinstance(event, Ask) and self.how == "not_commands":
            return [*commands, "persist me"]  # type: ignore[list-item]
        return commands

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        if self.how == "recover_raises" and journal:
            raise KeyError("attempt")
        return self.inner.recover(journal, at)

    def snapshot(self, session_id: str) -> AgentSnapshot:
        if self.how == "bad_snapshot":
            return {"session_id": session_id}  # type: ignore[return-value]
        return self.inner.snapshot(session_id)


def raises(config: ExecutorConfig) -> Executor:
    return _Broken(config, "raises")


def not_a_list(config: ExecutorConfig) -> Executor:
    return _Broken(config, "not_a_list")


def a_tuple(config: ExecutorConfig) -> Executor:
    return _Broken(config, "a_tuple")


def not_commands(config: ExecutorConfig) -> Executor:
    return _Broken(config, "not_commands")


def bad_snapshot(config: ExecutorConfig) -> Executor:
    return _Broken(config, "bad_snapshot")


def recover_raises(config: ExecutorConfig) -> Executor:
    return _Broken(config, "recover_raises")


def start_server(tmp_path: Path, factory: str, journal: Path | None = None) -> Managed:
    journal = journal or tmp_path / "journal.db"
    server = spawn("serve", ["--journal", str(journal), "--port", "0",
                             "--executor", f"{HERE}:{factory}"], tmp_path / f"{factory}.log")
    server.wait_ready(LIMIT)
    return server


def client_of(server: Managed) -> Client:
    token = read_token(Path(server.info["token_file"]))
    return Client("127.0.0.1", int(server.info["port"]), token=token)


def exit_status(server: Managed) -> int:
    return server.wait(LIMIT)


def entry_kinds(journal: Path) -> list[str]:
    return [str(entry["type"]) for entry in read_journal(journal)]


@pytest.mark.parametrize(("factory", "says"), [
    ("raises", "raised RuntimeError: lost track of the call table"),
    ("not_a_list", "returned None, not a list of commands"),
    ("a_tuple", "returned a tuple"),
    ("not_commands", "returned a list whose item 2 is a str ('persist me'), not one of the "
                     "protocol's commands"),
])
def test_an_ask_the_executor_fails_on_is_refused_and_the_server_exits_1(
        tmp_path: Path, stopped: list[Managed], factory: str, says: str) -> None:
    server = start_server(tmp_path, factory)
    stopped.append(server)
    with client_of(server) as client:
        client.open_session("s")
        with pytest.raises(SpecError, match="the server is stopping") as refused:
            client.ask("s", "t1", "c1", "lookup_order")
    assert str(refused.value).startswith("the executor failed: handle(Ask(")
    assert says in str(refused.value)
    assert exit_status(server) == 1
    log = server.output()
    assert says in log
    assert ("Traceback" in log) == (factory == "raises")
    if factory == "raises":
        assert entry_kinds(tmp_path / "journal.db") == ["session"]


def test_a_snapshot_of_the_wrong_shape_is_refused_and_the_server_exits_1(
        tmp_path: Path, stopped: list[Managed]) -> None:
    server = start_server(tmp_path, "bad_snapshot")
    stopped.append(server)
    with client_of(server) as client:
        client.open_session("s")
        with pytest.raises(SpecError, match=r"the executor failed: snapshot\('s'\) returned a "
                           r"dict \(\{'session_id': 's'\}\), not an AgentSnapshot"):
            client.get_agent_snapshot("s")
    assert exit_status(server) == 1
    assert "not an AgentSnapshot" in server.output()


def test_an_executor_that_cannot_recover_stops_the_server_before_it_serves(
        tmp_path: Path, stopped: list[Managed]) -> None:
    journal = tmp_path / "journal.db"
    first = start_server(tmp_path, "raises", journal)
    stopped.append(first)
    with client_of(first) as client:
        client.open_session("s")
    assert first.stop() == 0
    second = spawn("serve", ["--journal", str(journal), "--port", "0", "--executor",
                             f"{HERE}:recover_raises"], tmp_path / "recover.log")
    stopped.append(second)
    with pytest.raises(SpecError, match="exited with status 1 before it was ready"):
        second.wait_ready(LIMIT)
    log = second.output()
    assert "the executor failed: recover(1 journal entries" in log
    assert "raised KeyError: 'attempt'" in log
    assert "Traceback" in log
    assert entry_kinds(journal) == ["session"]
