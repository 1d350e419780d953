"""The one host: it carries out a batch in order through the environment's effects, keeps the
timers so each fires once per start and only while it runs, passes nothing to a dropped worker,
and judges the protocol's own rules (D-5, the cancel of a timed-out attempt, one reply per
request) once for every environment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from atmostonce.check.host import rules
from atmostonce.check.host.host import Host
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Cancel,
    Command,
    Connected,
    DropWorker,
    Event,
    GoAhead,
    NoWork,
    Persist,
    Poll,
    Publish,
    Reply,
    StartTimer,
    StopTimer,
    TimerFired,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished, ToolCallStatus

GO = GoAhead("w1", "s/t/c#1", "s/t/c", "tool", "{}", 5.0)
HANDED: dict[str, JSON] = {"type": "handed", "attempt": "s/t/c#1", "worker": "w1"}
RUN_TIMEOUT = StartTimer("run", 60.0, TimerKind.RUN_TIMEOUT, "s/t/c#1")
PUBLISH = Publish(ToolCallFinished("s", "t", "c", ToolCallStatus.SUCCEEDED))


class Scripted:
    """An executor that answers each event with the next batch of its script."""

    def __init__(self, *batches: list[Command]) -> None:
        self.batches = list(batches)
        self.events: list[Event] = []

    def handle(self, event: Event) -> list[Command]:
        self.events.append(event)
        return self.batches.pop(0) if self.batches else []

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        return self.batches.pop(0) if self.batches else []

    def snapshot(self, session_id: str) -> AgentSnapshot:
        return AgentSnapshot(session_id, (), ())


@dataclass
class Recorded:
    """Effects that note what the host passed on, and each breach it judged."""

    done: list[str] = field(default_factory=list)
    breaches: list[tuple[str, str]] = field(default_factory=list)
    cut_after: int | None = None
    """Die right after the persist of this many entries."""
    cuts: list[tuple[list[Command], list[GoAhead]]] = field(default_factory=list)

    def persist(self, entry: dict[str, JSON]) -> bool:
        self.done.append(f"persist {entry['type']}")
        persisted = sum(d.startswith("persist") for d in self.done)
        return self.cut_after is not None and persisted >= self.cut_after

    def start_timer(self, command: StartTimer) -> None:
        self.done.append(f"start {command.timer}")

    def stop_timer(self, timer: str) -> None:
        self.done.append(f"stop {timer}")

    def go_ahead(self, command: GoAhead, persisted: bool) -> None:
        self.done.append(f"go {command.attempt} to {command.worker} persisted={persisted}")

    def no_work(self, command: NoWork) -> None:
        self.done.append(f"no work to {command.worker}")

    def cancel(self, command: Cancel) -> None:
        self.done.append(f"cancel {command.attempt} at {command.worker}")

    def drop_worker(self, command: DropWorker) -> None:
        self.done.append(f"drop {command.worker}")

    def publish(self, command: Publish) -> None:
        self.done.append("publish")

    def reply(self, command: Reply) -> None:
        self.done.append(f"reply {command.request}")

    def cut(self, rest: list[Command], handed: list[GoAhead]) -> None:
        self.cuts.append((rest, handed))

    def broken(self, rule: str, text: str) -> None:
        self.breaches.append((rule, text))


def hosted(*batches: list[Command]) -> tuple[Host, Recorded]:
    effects = Recorded()
    return Host(effects, Scripted(*batches)), effects


def test_a_batch_is_carried_out_in_order() -> None:
    host, effects = hosted([Persist(HANDED), GO, RUN_TIMEOUT, StopTimer("run"), NoWork("w2")])
    host.feed(Poll(1.0, "w1"))
    assert effects.done == ["persist handed", "go s/t/c#1 to w1 persisted=True", "start run",
                            "stop run", "no work to w2"]
    assert effects.breaches == []


@pytest.mark.clause("D-5")
@pytest.mark.parametrize("before", [
    [],
    [Persist({"type": "handed", "attempt": "s/t/c#1"})],
    [Persist({"type": "note", "text": "s/t/c#1 goes to w1"})],
], ids=["nothing persisted", "worker not named", "named only inside a text"])
def test_a_go_ahead_needs_an_entry_of_its_batch_naming_its_attempt_and_worker(
        before: list[Command]) -> None:
    host, effects = hosted([*before, GO])
    host.feed(Poll(1.0, "w1"))
    assert effects.breaches == [(rules.GO_AHEAD_PERSISTED,
                                 "go-ahead for s/t/c#1 sent before its hand-out was persisted "
                                 "(D-5)")]
    assert effects.done[-1] == "go s/t/c#1 to w1 persisted=False"


@pytest.mark.clause("D-5")
def test_an_entry_of_an_earlier_batch_does_not_count_for_d5() -> None:
    host, effects = hosted([Persist(HANDED)], [GO])
    host.feed(Poll(1.0, "w1"))
    host.feed(Poll(2.0, "w1"))
    assert [rule for rule, _ in effects.breaches] == [rules.GO_AHEAD_PERSISTED]


@pytest.mark.clause("D-5")
def test_an_entry_naming_both_at_any_depth_counts() -> None:
    host, effects = hosted([Persist({"type": "handed", "to": {"ids": ["s/t/c#1", "w1"]}}), GO])
    host.feed(Poll(1.0, "w1"))
    assert effects.breaches == []


def started_and_handed() -> tuple[Host, Recorded, Scripted]:
    effects = Recorded()
    executor = Scripted([Persist(HANDED), GO, RUN_TIMEOUT])
    host = Host(effects, executor)
    host.feed(Poll(1.0, "w1"))
    return host, effects, executor


@pytest.mark.clause("TC-AMO-3")
@pytest.mark.parametrize(("answer", "broken"), [
    ([Cancel("w1", "s/t/c#1")], False),
    ([], True),
    ([Cancel("w2", "s/t/c#1")], True),
    ([Cancel("w1", "s/t/c#2")], True),
], ids=["cancelled at its worker", "no cancel", "at another worker", "another attempt"])
def test_the_answer_to_a_run_timeout_cancels_the_attempt_at_its_worker(
        answer: list[Command], broken: bool) -> None:
    host, effects, executor = started_and_handed()
    executor.batches.append(answer)
    assert host.fire("run", 61.0) == answer
    assert [rule for rule, _ in effects.breaches] == ([rules.CANCEL_ON_TIMEOUT] if broken else [])


def test_a_timer_fires_once_per_start_and_only_while_it_runs() -> None:
    host, _, executor = started_and_handed()
    executor.batches += [[Cancel("w1", "s/t/c#1")], [], [RUN_TIMEOUT, StopTimer("run")], []]
    assert host.fire("run", 61.0) is not None
    assert host.fire("run", 62.0) is None
    assert host.fire("never", 62.0) is None
    host.feed(Poll(63.0, "w1"))
    host.feed(Poll(64.0, "w1"))
    assert host.fire("run", 65.0) is None
    assert [type(e).__name__ for e in executor.events] == ["Poll", "TimerFired", "Poll", "Poll"]


def test_a_restart_loses_the_timers() -> None:
    host, _, _ = started_and_handed()
    host.restart(Scripted([]), [HANDED], 70.0)
    assert host.timers == {}
    assert host.fire("run", 71.0) is None


def test_a_dropped_worker_gets_nothing_until_it_connects_again() -> None:
    host, effects = hosted([DropWorker("w1")], [NoWork("w1"), Cancel("w1", "a"),
                                                 Persist(HANDED), GO], [], [NoWork("w1")])
    host.feed(TimerFired(1.0, "heartbeat"))
    host.feed(Poll(2.0, "w1"))
    host.feed(Connected(3.0, "w1"))
    host.feed(Poll(4.0, "w1"))
    assert effects.done == ["drop w1", "persist handed", "no work to w1"]
    assert host.handed == {"s/t/c#1": "w1"}


@pytest.mark.parametrize(("answer", "problem"), [
    ([Reply("r1", True)], None),
    ([], "request r1 got no reply (one reply per request)"),
    ([Reply("r1", True), Reply("r1", False)],
     "request r1 got 2 replies, to r1, r1 (one reply per request)"),
    ([Reply("r9", True)], "request r1 got 1 replies, to r9 (one reply per request)"),
], ids=["one", "none", "two", "to another request"])
def test_a_request_gets_one_reply(answer: list[Command], problem: str | None) -> None:
    for event in (Answer(1.0, "r1", "s/t/c", True), UserMessage(1.0, "r1", "s", "hello")):
        host, effects = hosted(list(answer))
        host.feed(event)
        assert [text for _, text in effects.breaches][:1] == ([] if problem is None
                                                               else [problem])


def test_a_reply_in_a_batch_that_answers_no_request_is_a_breach() -> None:
    host, effects = hosted([Reply("r1", True)])
    host.feed(Poll(1.0, "w1"))
    assert effects.breaches == [(rules.ONE_REPLY, "a reply to r1 in a batch that answers no "
                                                  "such request (one reply per request)")]
    assert "reply r1" not in effects.done


def test_a_request_s_reply_can_be_carried_out_before_the_rest_of_its_batch() -> None:
    host, effects = hosted([Persist({"type": "approval"}), Reply("r1", True), PUBLISH])
    reply = host.request(Answer(1.0, "r1", "s/t/c", True))
    assert reply == Reply("r1", True)
    assert effects.done == ["reply r1", "persist approval", "publish"]


@pytest.mark.clause("D-5", "D-8")
def test_a_server_that_dies_after_a_persist_hands_the_rest_of_the_batch_to_cut() -> None:
    other = GoAhead("w2", "s/t/d#1", "s/t/d", "tool", "{}", 5.0)
    batch: list[Command] = [Persist(HANDED), GO, other, PUBLISH]
    for cuttable, cuts in ((False, []), (True, [(batch[1:], [GO])])):
        effects = Recorded(cut_after=1)
        Host(effects, Scripted(list(batch))).feed(Poll(1.0, "w1"), cuttable)
        assert effects.cuts == cuts
        assert ("go s/t/c#1 to w1 persisted=True" in effects.done) is not cuttable


def test_anything_but_a_protocol_command_is_refused() -> None:
    host, _ = hosted([object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="is not a protocol command"):
        host.feed(Poll(1.0, "w1"))
