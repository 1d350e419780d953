"""`atmostonce worker --tools MODULE:REGISTRY` runs a user's own tool functions on real
processes: each gets the call's idempotency key and arguments, its result or reported failure
becomes the call's record, and its writes reach the service with the key; a registry that is
not one is one line of bad input."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from atmostonce.runtime.client import Client
from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.registry import Tool, load_registry, registry_of
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.session import ToolCallStatus
from examples.my_tools import TOOLS
from tests.runtime.conftest import CONFIG, finished

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = "examples.my_tools:TOOLS"


@pytest.fixture(scope="module")
def user_cluster() -> Iterator[Cluster]:
    with Cluster(config=CONFIG, workers=0) as started:
        started.start_worker(extra=["--tools", REGISTRY])
        yield started


@pytest.fixture
def client(user_cluster: Cluster) -> Iterator[Client]:
    with user_cluster.client() as opened:
        for tool in TOOLS:
            opened.set_policy(tool.name, tool.policy)
        yield opened


@pytest.mark.clause("TC-KEY-1", "TC-KEY-PASS", "TC-REC-SUCC")
def test_a_user_tool_gets_the_key_and_its_write_reaches_the_service_with_it(
        user_cluster: Cluster, client: Client) -> None:
    key = client.ask("own", "t1", "c1", "add_comment", {"ticket": "T-9", "text": "on it"})
    assert finished(client, "own", "c1").status is ToolCallStatus.SUCCEEDED
    messages = client.get_agent_snapshot("own").messages
    assert messages[-1].tool_output == "comment added to T-9"
    with user_cluster.ledger_client() as ledger:
        assert [(w.key, w.payload) for w in ledger.writes(key)] == [(key, "on it")]
        assert [r.end for r in ledger.runs(key)] == ["returned"]
    client.ask("own", "t1", "c2", "look_up_ticket", {"ticket": "T-9"})
    assert finished(client, "own", "c2").status is ToolCallStatus.SUCCEEDED
    assert client.get_agent_snapshot("own").messages[-1].tool_output == \
        '{"state": "open", "ticket": "T-9"}'


@pytest.mark.clause("D-3", "TC-REC-FAIL")
def test_a_failure_the_user_tool_reports_is_the_calls_failed_record(client: Client) -> None:
    client.ask("own-fail", "t1", "c1", "add_comment", {"ticket": "T-9"})
    event = finished(client, "own-fail", "c1")
    assert event.status is ToolCallStatus.FAILED
    assert "add_comment needs a non-empty 'text'" in event.error


def test_a_worker_of_user_tools_does_not_run_the_demo_tools(client: Client) -> None:
    client.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
    client.ask("own-demo", "t1", "c1", "lookup_order", {})
    event = finished(client, "own-demo", "c1")
    assert event.status is ToolCallStatus.FAILED
    assert "no tool named 'lookup_order'" in event.error


async def _noop(_call: object) -> None:
    return None


@pytest.mark.parametrize(("path", "says"), [
    ("examples.my_tools", "give it as MODULE:ATTRIBUTE"),
    ("no_such_module_here:TOOLS", "cannot import no_such_module_here"),
    ("examples.my_tools:MISSING", "has no MISSING"),
    ("examples.my_tools:look_up_ticket", "is a function that takes arguments"),
    ("examples.my_tools:__name__", "is str, not a mapping or a list of Tool"),
])
def test_a_registry_that_is_not_one_is_refused_in_one_line(path: str, says: str) -> None:
    with pytest.raises(SpecError) as refused:
        load_registry(path)
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_tool_named_twice_is_refused() -> None:
    with pytest.raises(SpecError, match="names tool 'x' twice"):
        registry_of([Tool("x", None, _noop), Tool("x", None, _noop)])


def test_the_worker_command_refuses_a_bad_registry_with_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "worker", "--server", "127.0.0.1:1", "--ledger",
         "127.0.0.1:1", "--token-file", "/nonexistent", "--tools", "examples.my_tools:MISSING"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "atmostonce: error: --tools 'examples.my_tools:MISSING': examples.my_tools has no "
        "MISSING"]
