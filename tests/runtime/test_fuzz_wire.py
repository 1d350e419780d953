"""Hostile frames on the real server and ledger processes: bytes that are not JSON, JSON that is
not an object, truncated lines, a line longer than the bound, fields of the wrong type, unknown
ops, ops out of order, a worker that claims another worker's attempt or name, a reader that
writes. Each connection gets an error or is closed; the process keeps serving everyone else;
the journal passes SQLite's integrity check with every entry it held unchanged and a fresh
executor still recovers from it (a restart would work), the ledger's
writes likewise, and the call a real worker is running keeps its worker and its status.

The CI profile tries about ATMOSTONCE_FUZZ_EXAMPLES cases per process (default 150), spread
over every way of opening a connection; the longer form
is the same test with more, e.g. `ATMOSTONCE_FUZZ_EXAMPLES=3000 pytest tests/runtime/
test_fuzz_wire.py -s`, which prints how many cases were sent."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atmostonce.executor import reference
from atmostonce.runtime.journal import read_journal
from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.wire import MAX_LINE, WIRE_VERSION, connect, encode, hello
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.session import ToolCallStatus
from tests.load import patience
from tests.runtime.conftest import CONFIG, LIMIT, eventually

EXAMPLES = int(os.environ.get("ATMOSTONCE_FUZZ_EXAMPLES", "150"))
SESSION = "fuzz-victim"
FIELDS = ("type", "op", "id", "n", "wire", "role", "token", "worker", "workers", "incarnation",
          "running", "attempt", "key", "tool", "ok", "output", "end", "payload", "deadline",
          "session_id", "turn_id", "tool_call_id", "arguments", "approve", "text", "sub",
          "past", "policy", "hints", "default_effect", "lease")
KINDS = ("hello", "poll", "started", "heartbeat", "finished", "welcome", "ack", "error")
OPS = ("set_policy", "open_session", "ask", "answer", "user_message", "snapshot", "subscribe",
       "unsubscribe", "stats", "run_started", "run_ended", "write", "runs", "writes", "lookup",
       "bogus")


@dataclass
class Target:
    """The running cluster, the call a real worker runs, and what must never change."""

    cluster: Cluster
    victim_key: str
    victim_attempt: str
    victim_worker: str
    cases: dict[str, int] = field(default_factory=dict)


VICTIM_CONFIG = replace(CONFIG, heartbeat_timeout=20.0, lease=10.0, run_timeout=86_400.0)
"""The victim call must stay running however long the fuzzing takes and however loaded the
machine is: its run never times out, and its worker is not declared lost for a slow beat."""


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    with Cluster(config=VICTIM_CONFIG, workers=1) as cluster:
        with cluster.client() as client, cluster.ledger_client() as ledger:
            client.set_policy("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE,
                                                         requires_approval=False))
            key = client.ask(SESSION, "t1", "c1", "cancel_order", {"duration": 3600})
            [run] = eventually("the victim call runs", lambda: ledger.runs(key))
        found = Target(cluster, key, run.attempt, run.worker)
        yield found
        print(f"\nfuzzed wire cases sent: {found.cases}")


def scalars() -> st.SearchStrategy[Any]:
    return (st.none() | st.booleans() | st.integers(-2**70, 2**70)
            | st.floats(allow_nan=True, allow_infinity=True)
            | st.text(max_size=24) | st.sampled_from(list(KINDS + OPS)))


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


values = st.recursive(scalars(), containers, max_leaves=8)


SCHEMAS: dict[tuple[str, str], tuple[str, ...]] = {
    ("op", "set_policy"): ("tool", "policy", "hints"),
    ("op", "open_session"): ("session_id", "default_effect"),
    ("op", "ask"): ("session_id", "turn_id", "tool_call_id", "tool", "arguments"),
    ("op", "answer"): ("key", "approve"),
    ("op", "user_message"): ("session_id", "text"),
    ("op", "snapshot"): ("session_id",),
    ("op", "subscribe"): ("session_id", "sub", "past"),
    ("op", "unsubscribe"): ("sub",),
    ("op", "stats"): (),
    ("op", "run_started"): ("worker", "attempt", "key", "tool"),
    ("op", "run_ended"): ("worker", "attempt", "end", "output"),
    ("op", "write"): ("worker", "attempt", "key", "tool", "payload", "deadline"),
    ("op", "runs"): ("key",),
    ("op", "writes"): ("key",),
    ("op", "lookup"): ("key",),
    ("type", "poll"): ("n",),
    ("type", "started"): ("attempt", "n"),
    ("type", "heartbeat"): ("attempt", "n"),
    ("type", "finished"): ("attempt", "ok", "output"),
}


def well_typed(target: Target) -> dict[str, st.SearchStrategy[Any]]:
    """For each field, values of the type the wire expects, many of them naming the victim."""
    names = st.sampled_from(["fuzz", "t1", "c1", "s", SESSION, target.victim_key,
                             target.victim_attempt, target.victim_worker, "fuzz-worker",
                             "a/b", "", "x" * 300])
    tools = st.sampled_from(["lookup_order", "refund", "cancel_order", "notify_customer",
                             "nobody's tool"])
    effects = st.sampled_from(["read", "idempotent_write", "non_idempotent_write",
                               "unclassified", "teleport"])
    flags = st.none() | st.booleans()
    return {
        "session_id": names, "turn_id": names, "tool_call_id": names, "key": names,
        "attempt": names, "worker": names, "sub": names, "tool": tools,
        "arguments": st.sampled_from(["{}", '{"duration": 0.01}', "[]", "not json"]),
        "text": st.text(max_size=40), "output": st.text(max_size=40),
        "payload": st.text(max_size=40), "end": st.sampled_from(["returned", "tool_failed",
                                                                  "stopped", "exploded"]),
        "approve": st.booleans(), "past": st.booleans(), "ok": st.booleans(),
        "n": st.integers(-1, 10), "deadline": st.none() | st.floats(allow_nan=True),
        "default_effect": st.none() | effects,
        "policy": st.none() | st.fixed_dictionaries({"effect": effects,
                                                     "requires_approval": flags}),
        "hints": st.none() | st.fixed_dictionaries({"read_only": flags, "idempotent": flags,
                                                    "destructive": flags}),
    }


def messages(target: Target) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects shaped like this wire's messages: an op or type with its fields, each of
    the right type or not, some missing; or free-form objects of hostile fields."""
    typed = well_typed(target)

    def shaped(head: tuple[str, str]) -> st.SearchStrategy[dict[str, Any]]:
        fields = {name: st.one_of(typed[name], values) for name in SCHEMAS[head]}
        extra = {"id": st.integers(0, 9)} if head[0] == "op" else {}
        return st.fixed_dictionaries({head[0]: st.just(head[1]), **extra},
                                     optional=fields)

    free = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6)
    return st.one_of(st.sampled_from(sorted(SCHEMAS)).flatmap(shaped), free)


def frames(target: Target) -> st.SearchStrategy[bytes]:
    """One chunk of what a hostile peer sends."""
    objects = messages(target).map(encode)
    return st.one_of(
        objects,
        objects.flatmap(lambda line: st.integers(1, max(1, len(line) - 1)).map(
            lambda cut: line[:cut])),
        st.binary(max_size=64).map(lambda b: b + b"\n"),
        st.sampled_from([b"\n", b"[1,2]\n", b"42\n", b'"hello"\n', b"null\n", b"{\n",
                         b'{"type": "hello"}\n', b"\xff\xfe\n"]),
    )


SERVER_OPENINGS = ("none", "client", "approver", "worker", "victim's name", "victim's attempt",
                   "wrong token", "no token", "no role")
LEDGER_OPENINGS = ("none", "reader", "worker", "victim's name", "wrong token", "no token",
                   "no role")


def opening(target: Target, service: str, name: str) -> list[bytes]:
    """How the hostile peer opens: not at all, with a wrong token or none, or properly (so the
    frames reach what only a welcomed peer reaches), under its own name or the victim's."""
    token = target.cluster.token
    victim = target.victim_worker
    if service == "server":
        table = {
            "client": hello("client", token),
            "approver": hello("client", target.cluster.approver_token),
            "worker": hello("worker", token, worker="fuzz-worker", incarnation="fuzz",
                            running=[]),
            "victim's name": hello("worker", token, worker=victim, incarnation="impostor",
                                   running=[]),
            "victim's attempt": hello("worker", token, worker="fuzz-worker",
                                      incarnation="fuzz", running=[target.victim_attempt]),
            "wrong token": hello("client", "wrong"),
            "no token": hello("worker", "", worker="x", incarnation="x"),
        }
    else:
        table = {
            "reader": hello("reader", token),
            "worker": hello("worker", token, workers=["fuzz-worker"], incarnation="fuzz"),
            "victim's name": hello("worker", token, workers=[victim], incarnation="impostor"),
            "wrong token": hello("reader", "wrong"),
            "no token": hello("worker", "", workers=["x"]),
        }
    table["no role"] = {"type": "hello", "wire": WIRE_VERSION}
    return [encode(table[name])] if name in table else []


async def hostile(port: int, chunks: list[bytes]) -> None:
    """Send `chunks` on one connection, then wait until the peer closes it or answers a
    final probe (which a peer still serving this connection answers)."""
    done = asyncio.Event()

    def heard(_: object, message: dict[str, Any]) -> None:
        if message.get("id") == "probe" or message.get("n") == 10**9:
            done.set()

    conn = await connect("127.0.0.1", port, heard, lambda _: done.set())
    assert conn.transport is not None
    for chunk in chunks:
        conn.transport.write(chunk)
    conn.transport.write(b"\n" + encode({"op": "stats", "id": "probe"})
                         + encode({"op": "runs", "id": "probe", "key": "none"})
                         + encode({"type": "heartbeat", "attempt": "none", "n": 10**9}))
    try:
        await asyncio.wait_for(done.wait(), LIMIT * patience())
    finally:
        conn.close()


def snapshot_of_truth(target: Target) -> tuple[list[Any], list[Any], list[Any]]:
    cluster = target.cluster
    with cluster.ledger_client() as ledger:
        writes = ledger.writes()
        runs = [r for r in ledger.runs() if r.worker != "fuzz-worker"]
    return read_journal(cluster.journal), writes, runs


def still_serving_and_unchanged(target: Target, before: tuple[list[Any], list[Any],
                                                              list[Any]]) -> None:
    cluster = target.cluster
    for process in (cluster.server, cluster.ledger, *cluster.workers):
        assert process is not None
        assert process.alive, f"{process.role} exited: {process.output()[-2000:]}"
    journal, writes, runs = snapshot_of_truth(target)
    assert journal[:len(before[0])] == before[0]
    reference(cluster.config).recover(journal, 0.0)
    assert writes[:len(before[1])] == before[1]
    assert runs == before[2]
    with cluster.client() as client:
        [call] = client.get_agent_snapshot(SESSION).tool_calls
        assert call.status is ToolCallStatus.RUNNING
        assert target.victim_worker in client.stats()["workers"]


def fuzz(target: Target, service: str, opening: list[bytes], chunks: list[bytes]) -> None:
    cluster = target.cluster
    assert cluster.ledger is not None
    port = cluster.server_port if service == "server" else int(cluster.ledger.info["port"])
    before = snapshot_of_truth(target)
    asyncio.run(hostile(port, opening + chunks))
    target.cases[service] = target.cases.get(service, 0) + 1
    still_serving_and_unchanged(target, before)


OPENINGS = [(service, how) for service, hows in (("server", SERVER_OPENINGS),
                                                  ("ledger", LEDGER_OPENINGS)) for how in hows]


@pytest.mark.parametrize(("service", "how"), OPENINGS)
@settings(max_examples=max(10, 2 * EXAMPLES // len(OPENINGS)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(chunks=st.data())
def test_hostile_frames_change_nothing_and_the_process_keeps_serving(
        target: Target, service: str, how: str, chunks: st.DataObject) -> None:
    fuzz(target, service, opening(target, service, how),
         chunks.draw(st.lists(frames(target), max_size=8)))


@pytest.mark.parametrize("service", ["server", "ledger"])
def test_a_line_longer_than_the_bound_closes_only_that_connection(
        target: Target, service: str) -> None:
    fuzz(target, service, [], [b"{" + b" " * (MAX_LINE + 16)])


def test_a_worker_that_claims_another_workers_attempt_or_name_changes_nothing(
        target: Target) -> None:
    token = target.cluster.token
    attempt = target.victim_attempt
    claims = [encode(hello("worker", token, worker="fuzz-worker", incarnation="fuzz",
                           running=[attempt])),
              encode({"type": "started", "attempt": attempt, "n": 2}),
              encode({"type": "heartbeat", "attempt": attempt, "n": 3}),
              encode({"type": "finished", "attempt": attempt, "ok": True, "output": "{}"})]
    fuzz(target, "server", [], claims)
    impostor = [encode(hello("worker", token, worker=target.victim_worker,
                             incarnation="impostor", running=[]))]
    fuzz(target, "server", [], impostor)
    ledger = [encode(hello("worker", token, workers=["fuzz-worker"], incarnation="fuzz")),
              encode({"op": "run_ended", "id": 1, "worker": target.victim_worker,
                      "attempt": attempt, "end": "returned", "output": "forged"}),
              encode({"op": "write", "id": 2, "worker": target.victim_worker, "attempt": attempt,
                      "key": target.victim_key, "tool": "cancel_order", "payload": "{}"})]
    fuzz(target, "ledger", [], ledger)
    forged_end = ledger[1]
    fuzz(target, "ledger", [], [encode(hello("worker", token, workers=[target.victim_worker],
                                             incarnation="impostor")), forged_end])
    with target.cluster.ledger_client() as truth:
        [run] = truth.runs(target.victim_key)
        assert run.end is None
        assert truth.applied(target.victim_key) == 1


def test_the_frames_hypothesis_draws_include_every_kind_of_hostility(target: Target) -> None:
    """The strategy is not vacuous: it reaches truncated lines, non-objects, wrong tokens and
    victim-naming fields."""
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(frames(target), min_size=1, max_size=4))
    def classify(chunks: list[bytes]) -> None:
        for chunk in chunks:
            if not chunk.endswith(b"\n"):
                seen.add("truncated")
                continue
            try:
                parsed = json.loads(chunk)
            except ValueError:
                seen.add("not json")
                continue
            if not isinstance(parsed, dict):
                seen.add("not an object")
            elif any(v in json.dumps(parsed) for v in (target.victim_key,
                                                       target.victim_worker)):
                seen.add("names the victim")

    classify()
    assert seen == {"truncated", "not json", "not an object", "names the victim"}
