"""Random programs of events, restarts included, never crash the executor nor break the safety
properties a history shows on its own: the hand-out is durable first, one worker per attempt,
one attempt for single-attempt calls, one key per call, one record per call, no attempt before
approval or after a record, and the did-not-run wording only for calls never handed out."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.executor import reference
from atmostonce.spec.policy import EffectClass, retries_allowed
from atmostonce.spec.protocol import (
    Command,
    ExecutorConfig,
    GoAhead,
    Persist,
    Publish,
)
from atmostonce.spec.records import DID_NOT_RUN_PREFIX
from atmostonce.spec.session import ToolCallStatus
from tests.executor.driver import Driver

TOOLS = (("read", EffectClass.READ, None), ("idem", EffectClass.IDEMPOTENT_WRITE, True),
         ("write", EffectClass.NON_IDEMPOTENT_WRITE, False),
         ("other", EffectClass.UNCLASSIFIED, None))
WORKERS = ("w0", "w1", "w2")

Action = tuple[str, int, int, bool]
actions = st.tuples(
    st.sampled_from(["ask", "ask", "answer", "poll", "poll", "poll", "start", "finish",
                     "finish", "fire", "fire", "policy", "restart", "connect", "beat"]),
    st.integers(0, 5), st.integers(0, 2), st.booleans(),
)


@dataclass
class History:
    """What the program did, and what the executor answered, in order."""

    driver: Driver
    keys: list[str] = field(default_factory=list)
    given: dict[str, list[GoAhead]] = field(default_factory=dict)

    def play(self, action: Action) -> None:
        kind, a, b, flag = action
        d = self.driver
        d.now += 1.0
        worker = WORKERS[b]
        if kind == "ask":
            name, _, _ = TOOLS[a % len(TOOLS)]
            self.keys.append(d.ask(name, f"c{len(self.keys)}"))
        elif kind == "answer" and self.keys:
            d.answer(self.keys[a % len(self.keys)], flag)
        elif kind == "poll":
            go = d.poll(worker)
            if go is not None:
                self.given.setdefault(worker, []).append(go)
        elif kind in ("start", "finish", "beat") and self.given.get(worker):
            go = self.given[worker][-1 - a % len(self.given[worker])]
            if kind == "start":
                d.start(worker, go.attempt)
            elif kind == "beat":
                d.beat(worker, go.attempt)
            else:
                d.finish(worker, go.attempt, flag)
        elif kind == "fire" and d.timers:
            started = sorted(d.timers.values(), key=lambda t: t.timer)[a % len(d.timers)]
            d.fire_timer(started.timer)
        elif kind == "policy":
            name, effect, approval = TOOLS[a % len(TOOLS)]
            flipped = (EffectClass.READ if effect is not EffectClass.READ
                       else EffectClass.NON_IDEMPOTENT_WRITE)
            d.policy(name, flipped if flag else effect, approval)
        elif kind == "restart" and flag:
            d.restart()
        elif kind == "connect":
            d.connect(worker)


def start(fence: bool) -> History:
    d = Driver(ExecutorConfig(max_attempts=2, fence=fence))
    d.open()
    for name, effect, approval in TOOLS:
        d.policy(name, effect, approval)
    return History(d)


def check(history: History) -> None:
    d = history.driver
    asked = {e["key"]: e for e in d.journal if e["type"] == "ask"}
    handed_entries: set[tuple[object, object]] = set()
    go_aheads: dict[str, str] = {}
    attempts: dict[str, set[str]] = {}
    recorded: dict[str, int] = {}
    published: dict[str, int] = {}
    approved: set[object] = set()
    batch: list[Command] = []
    for command in d.log:
        batch.append(command)
        if isinstance(command, Persist):
            entry = command.entry
            if entry["type"] == "handed":
                handed_entries.add((entry["attempt"], entry["worker"]))
            elif entry["type"] == "approval" and entry["state"] == "approved":
                approved.add(entry["key"])
            elif entry["type"] == "record":
                key = str(entry["key"])
                recorded[key] = recorded.get(key, 0) + 1
                if str(entry["error"]).startswith(DID_NOT_RUN_PREFIX):
                    assert not attempts.get(key), f"{key} ran, yet did not run"
        elif isinstance(command, GoAhead):
            key = command.attempt.rpartition("#")[0]
            assert (command.attempt, command.worker) in handed_entries, "D-5"
            assert command.attempt not in go_aheads, "TC-AMO-1"
            go_aheads[command.attempt] = command.worker
            assert command.key == key, "TC-KEY-1"
            assert key not in recorded, "no attempt after the record"
            ask = asked[key]
            assert not ask["requires_approval"] or key in approved, "no attempt before approval"
            attempts.setdefault(key, set()).add(command.attempt)
            if not retries_allowed(EffectClass(ask["effect"])):
                assert command.attempt.endswith("#1"), "one attempt for single-attempt calls"
        elif isinstance(command, Publish):
            event = command.event
            key = f"{event.session_id}/{event.turn_id}/{event.tool_call_id}"
            published[key] = published.get(key, 0) + 1
    assert all(n == 1 for n in recorded.values()), "TC-REC-1"
    assert recorded.keys() >= published.keys()
    assert all(n == 1 for n in published.values())


def recovered_agrees(history: History) -> None:
    """A restart now keeps every record and the history written so far (D-8)."""
    d = history.driver
    fresh = reference(d.config)
    fresh.recover(list(d.journal), d.now)
    now, then = d.snapshot(), fresh.snapshot("s1")
    views = {v.idempotency_key: v for v in then.tool_calls}
    for view in now.tool_calls:
        if view.status.final:
            assert views[view.idempotency_key] == view
        elif view.status is ToolCallStatus.AWAITING_APPROVAL:
            assert views[view.idempotency_key].status is ToolCallStatus.AWAITING_APPROVAL
    assert then.messages[: len(now.messages)] == now.messages


@pytest.mark.clause("D-5", "TC-AMO-1", "TC-KEY-1", "TC-REC-1", "TC-REC-NOTRUN", "TC-APR-2",
                    "TC-EFF-NONIDEM", "TC-RCN-1", "D-8")
@pytest.mark.parametrize("fence", [False, True], ids=["no-fence", "fence"])
@given(program=st.lists(actions, min_size=5, max_size=80))
def test_random_programs_keep_the_safety_properties(fence: bool,
                                                    program: list[Action]) -> None:
    history = start(fence)
    for action in program:
        history.play(action)
    check(history)
    recovered_agrees(history)
