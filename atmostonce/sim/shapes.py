"""Input shapes a run reached, counted from its history: the coverage line of a simulation or
chaos run. A shape a workload is meant to reach and never does over a campaign is a blind
spot of the workload, as an unwitnessed sometimes-property is one of the model."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

from atmostonce.check.history import entries as h
from atmostonce.check.history.policies import PolicyBook
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.protocol import TimerKind

APPROVAL_DEADLINE = TimerKind.APPROVAL_DEADLINE
_PAST_DEADLINE = REPLY_TEXT[ApprovalReply.DEADLINE_PASSED]


class Shape(enum.Enum):
    """A shape of input, with what it counts."""

    POLICY_AND_HINTS = ("policy+hints", "calls")
    """Calls of a tool registered with both a ToolPolicy and framework hints (D-1)."""
    UNREGISTERED = ("unregistered", "calls")
    """Calls of a tool no policy or hints were ever set for (TC-APR-5)."""
    SESSION_DEFAULT = ("session default", "sessions")
    """Sessions opened with a default effect (D-1)."""
    FLOOR = ("D-22 floor", "sessions")
    """Sessions whose default effect framework metadata may not lower (D-22)."""
    CALL_DEADLINE = ("per-call deadline", "calls")
    """Calls whose ask set their own approval deadline (D-32)."""
    THREE_ATTEMPTS = ("3+ attempts", "calls")
    """Calls handed out three times or more (TC-REC-RETRY)."""
    TWO_WAITING = ("2 waiting in a turn", "turns")
    """Turns in which two calls waited for approval at once."""
    RESTART_WAITING = ("restart while waiting", "restarts")
    """Server restarts while a call waited for approval (D-8)."""
    LATE_ANSWER = ("answer past a late timer", "answers")
    """Answers refused as past the call's kept deadline before its deadline's timer fired,
    which only the clock tells (D-32)."""

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def unit(self) -> str:
        return self.value[1]

    @property
    def key(self) -> str:
        """The shape's name in JSON output."""
        return self.name.lower()


SHAPES: tuple[Shape, ...] = tuple(Shape)
NO_SHAPES: tuple[int, ...] = (0,) * len(SHAPES)
_INDEX = {shape: i for i, shape in enumerate(SHAPES)}


class ShapeCounter:
    """Counts the shapes of one history, entry by entry (`observe`), in O(1) per entry."""

    __slots__ = ("_both", "_counts", "_due", "_handed", "_judges", "_policies", "_turn_of",
                 "_waiting", "_waiting_in_turn")

    def __init__(self) -> None:
        self._counts = [0] * len(SHAPES)
        self._policies = PolicyBook()
        self._both: dict[str, bool] = {}
        """Registered tools: whether the tool has both a policy and hints."""
        self._handed: dict[str, int] = {}
        self._waiting: dict[str, tuple[str, str]] = {}
        """Calls waiting for approval now, with their (session, turn)."""
        self._waiting_in_turn: dict[tuple[str, str], int] = {}
        self._turn_of: set[tuple[str, str]] = set()
        """Turns already counted as two waiting."""
        self._due: set[str] = set()
        """Calls whose approval deadline's timer runs."""
        self._judges: dict[type[h.Entry], Callable[[Any], None]] = {
            h.PolicySet: self._policy_set,
            h.SessionOpened: self._session_opened,
            h.CallAsked: self._call_asked,
            h.ApprovalAnswered: self._answered,
            h.HandedOut: self._handed_out,
            h.RecordPublished: self._recorded,
            h.SnapshotSeen: self._recorded,
            h.ServerRestarted: self._restarted,
            h.TimerStarted: self._timer_started,
            h.TimerFired: self._timer_fired,
        }

    def observe(self, entry: h.Entry) -> None:
        judge = self._judges.get(type(entry))
        if judge is not None:
            judge(entry)

    def observe_all(self, entries: Iterable[h.Entry]) -> ShapeCounter:
        for entry in entries:
            self.observe(entry)
        return self

    def counts(self) -> tuple[int, ...]:
        """How often each shape of `SHAPES` occurred, in that order."""
        return tuple(self._counts)

    def _add(self, shape: Shape) -> None:
        self._counts[_INDEX[shape]] += 1

    def _policy_set(self, e: h.PolicySet) -> None:
        self._both[e.tool] = e.policy is not None and e.hints is not None
        self._policies.set_policy(e.tool, e.policy, e.hints)

    def _session_opened(self, e: h.SessionOpened) -> None:
        self._policies.set_default(e.session_id, e.default_effect, e.hints_may_lower is not False)
        if e.default_effect is not None:
            self._add(Shape.SESSION_DEFAULT)
            if e.hints_may_lower is False:
                self._add(Shape.FLOOR)

    def _call_asked(self, e: h.CallAsked) -> None:
        both = self._both.get(e.tool)
        if both is None:
            self._add(Shape.UNREGISTERED)
        elif both:
            self._add(Shape.POLICY_AND_HINTS)
        if e.approval_deadline is not None:
            self._add(Shape.CALL_DEADLINE)
        if e.key in self._waiting or e.key in self._handed:
            return
        if self._policies.now(e.tool, e.session_id).requires_approval:
            turn = (e.session_id, e.turn_id)
            self._waiting[e.key] = turn
            n = self._waiting_in_turn.get(turn, 0) + 1
            self._waiting_in_turn[turn] = n
            if n == 2 and turn not in self._turn_of:
                self._turn_of.add(turn)
                self._add(Shape.TWO_WAITING)

    def _stop_waiting(self, key: str) -> None:
        turn = self._waiting.pop(key, None)
        if turn is not None:
            self._waiting_in_turn[turn] -= 1

    def _answered(self, e: h.ApprovalAnswered) -> None:
        if e.ok:
            self._stop_waiting(e.key)
        elif e.key in self._due and e.text == _PAST_DEADLINE:
            self._add(Shape.LATE_ANSWER)

    def _timer_started(self, e: h.TimerStarted) -> None:
        if e.kind is APPROVAL_DEADLINE:
            self._due.add(e.key)

    def _timer_fired(self, e: h.TimerFired) -> None:
        if e.kind is APPROVAL_DEADLINE:
            self._due.discard(e.key)

    def _handed_out(self, e: h.HandedOut) -> None:
        self._stop_waiting(e.call)
        n = self._handed.get(e.call, 0) + 1
        self._handed[e.call] = n
        if n == 3:
            self._add(Shape.THREE_ATTEMPTS)

    def _recorded(self, e: h.RecordPublished | h.SnapshotSeen) -> None:
        if e.status.final:
            self._stop_waiting(e.key)

    def _restarted(self, _e: h.ServerRestarted) -> None:
        if self._waiting:
            self._add(Shape.RESTART_WAITING)
        self._due.clear()  # the restarted executor starts its timers again


def shapes_line(counts: tuple[int, ...]) -> str:
    """The coverage line: how often each shape occurred."""
    return "shapes: " + ", ".join(f"{shape.label} {n:,} {shape.unit}"
                                  for shape, n in zip(SHAPES, counts, strict=True))


def shapes_json(counts: tuple[int, ...]) -> dict[str, int]:
    return {shape.key: n for shape, n in zip(SHAPES, counts, strict=True)}


def add_counts(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))
