"""What the history checker tracks, and the base its judges share.

The checker (`atmostonce.check.history.checkers`) is one class assembled from a judge class per
concern (`approvals`, `attempts`, `records`, `runs`), each a `CheckerState`:
this module holds the state they all read and change, built once per history: each call
(`Call`), each of its attempts (`Attempt`) and each run of its tool in the ledger
(`HistoryRun`), with the policies in force, and the one way to report a violation (`_bad`). It
also holds what a harness reads off a finished checker about the runs that overlapped
(`DoubleRun`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from atmostonce.check.history import entries as h
from atmostonce.check.history.policies import PolicyBook
from atmostonce.spec.approval import initial_approval
from atmostonce.spec.policy import EffectivePolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus

# How the current attempt of a call stopped counting, as the executor learnt it.
GAVE_UP = "gave up"  # cancelled or timed out: the run may go on (TC-AMO-3)
LOST = "lost"  # its worker was declared lost (TC-REC-LOST)
RESTART = "restart"  # handed out before a server restart (D-8)


@dataclass(frozen=True, slots=True)
class DoubleRun:
    """Two runs of one single-attempt tool that overlapped: the run of `first` that the engine
    gave up on, still going, and the run of `second` that started meanwhile."""

    tool: str
    first: str
    second: str
    documented: bool
    fence: bool
    positions: tuple[int, int]


class Attempt:
    """One attempt of a call: queued (no worker yet) or handed out, and how it stopped
    counting as the call's current attempt."""

    __slots__ = ("call", "cause", "cause_pos", "epoch", "expired_pos", "id", "pos", "started",
                 "started_at", "worker")

    def __init__(self, call: Call, attempt_id: str) -> None:
        self.call = call
        self.id = attempt_id
        self.worker: str | None = None
        self.pos = -1
        self.epoch = -1
        self.cause: str | None = None
        self.cause_pos = -1
        self.started = False
        """Its worker's Started reached the executor."""
        self.started_at = 0.0
        """When that Started first reached it: the run timeout counts again from then."""
        self.expired_pos = -1
        """Where its queue timeout fired while no worker had it: it is over (D-10)."""


class Call:
    __slots__ = (
        "approval", "approval_at", "approval_pos", "asked_at", "asked_by", "attempts", "current",
        "deadline", "first_hand", "first_hand_at", "handed", "key", "lost_before", "policy", "pos",
        "published", "published_epoch", "published_pos", "record", "record_at", "record_error",
        "record_pos", "reports", "result_ok", "result_pos", "returned", "runs", "session",
        "single", "snap", "snap_pos", "tool", "tool_result", "tool_result_pos", "unreached_pos",
    )

    def __init__(self, key: str, tool: str, session: str, pos: int, at: float,
                 policy: EffectivePolicy) -> None:
        self.key = key
        self.tool = tool
        self.session = session
        self.pos = pos
        self.asked_at = at
        self.asked_by = at
        """The latest moment the engine can have taken the ask: its approval deadline has
        surely passed by the clock `deadline` seconds later (D-32, across restarts)."""
        self.policy = policy
        self.single = not policy.retries_allowed
        self.approval = initial_approval(policy.requires_approval)
        self.approval_pos = -1
        self.approval_at: float | None = None
        """When the approval left waiting: answered, or its deadline passed."""
        self.attempts: dict[str, Attempt] = {}
        self.handed = 0
        self.first_hand = -1
        self.first_hand_at: float | None = None
        """When its first attempt was handed to a worker: the go-ahead (D-5)."""
        self.current: Attempt | None = None
        self.lost_before = False
        self.result_ok: bool | None = None
        self.result_pos = -1
        self.returned = False
        self.runs: list[HistoryRun] = []
        self.record: ToolCallStatus | None = None
        """The call's record, as first seen in an event or a snapshot."""
        self.record_pos = -1
        self.record_at = 0.0
        self.record_error = ""
        self.published: ToolCallStatus | None = None
        self.published_pos = -1
        self.published_epoch = -1
        self.snap: ToolCallStatus | None = None
        self.snap_pos = -1
        self.reports = 0
        self.unreached_pos = -1
        """Where a snapshot of the recorded call showed a history with no reach (D-30)."""
        self.deadline = 0.0
        """The approval deadline the call kept from ask time (D-32)."""
        self.tool_result: str | None = None
        """The tool result a snapshot first showed for the call once it succeeded: it must be
        an output one of its runs returned (A-TOOL-RESULT, judged at quiescence)."""
        self.tool_result_pos = -1


class HistoryRun:
    __slots__ = ("attempt", "call", "failure", "live", "orphan", "orphan_ok", "output", "pos",
                 "returned", "worker")

    def __init__(self, call: Call, worker: str, attempt: Attempt | None, pos: int) -> None:
        self.call = call
        self.worker = worker
        self.attempt = attempt
        self.pos = pos
        self.live = True
        self.orphan = False
        """Still going when its call was recorded."""
        self.orphan_ok = False
        """...because the engine gave up on it while it could still run."""
        self.returned = False
        self.output: str | None = None
        """What the run returned, when the ledger says."""
        self.failure: str | None = None
        """The failure the tool reported, when it reported one and the ledger says which."""


class CheckerState:
    """What the checker knows of a history so far, and how it reports a violation: the base of
    every judge class, which only reads and changes this state."""

    def __init__(self, config: ExecutorConfig, attempts_survive_restart: bool = False) -> None:
        self.config = config
        self.attempts_survive_restart = attempts_survive_restart
        """The engine keeps attempts across a server restart: a restart ends none (D-8)."""
        self.violations: list[h.HistoryViolation] = []
        self.fresh: list[h.HistoryViolation] = []
        """The violations found since a caller last emptied this list (`take_fresh` does)."""
        self.witnessed: set[str] = set()
        self.double_runs: list[DoubleRun] = []
        self._seen: set[tuple[str, str, str]] = set()
        self._policies = PolicyBook()
        self._calls: dict[str, Call] = {}
        self._attempts: dict[str, Attempt] = {}
        self._worker_attempts: dict[str, list[Attempt]] = {}
        self._runs: dict[int, HistoryRun] = {}
        self._live_single: dict[str, list[HistoryRun]] = {}
        self._epoch = 0
        self._queue_timers = False
        self._cancels_due: dict[str, tuple[Attempt, int]] = {}
        """Attempts whose run timeout fired while out at a worker, by id, with the timer's
        position, until a `Cancelled` names them (A-CANCEL-ON-TIMEOUT)."""

    def take_fresh(self) -> list[h.HistoryViolation]:
        """The violations found since the last call, which empties `fresh`."""
        found = self.fresh[:]
        self.fresh.clear()
        return found

    # -- reporting -----------------------------------------------------------------------------

    def _bad(self, pid: str, c: Call | str, message: str, *positions: int) -> None:
        key = c if isinstance(c, str) else c.key
        mark = (pid, key, message)
        if mark in self._seen:
            return
        self._seen.add(mark)
        v = h.HistoryViolation(pid, key, message, tuple(sorted({p for p in positions if p >= 0})))
        self.violations.append(v)
        self.fresh.append(v)

    def _policy_now(self, c: Call) -> EffectivePolicy:
        return self._policies.now(c.tool, c.session)

    def _followed_later(self, c: Call, fits: Callable[[EffectivePolicy], bool],
                        what: str, *positions: int) -> None:
        """TC-SNAP-2: when a wrong behaviour is what a policy set after the ask would give,
        say so: the call did not keep the policy it was asked under."""
        later = self._policy_now(c)
        if later != c.policy and fits(later):
            self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                      f"{what}, as the tool's later policy ({policy_text(later)}) says, not "
                      f"the policy in force when it was asked ({policy_text(c.policy)})",
                      c.pos, *positions)


def policy_text(p: EffectivePolicy) -> str:
    return f"{p.effect.value}, {'with' if p.requires_approval else 'without'} approval"


def with_article(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"
