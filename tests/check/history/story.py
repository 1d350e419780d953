"""A builder for hand-made histories: each method appends one entry a second after the last,
the way a harness would, so a test reads as the story of a run."""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.checkers import check_history
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig, TimerKind
from atmostonce.spec.reconcile import report_text
from atmostonce.spec.records import (
    OUTCOME_UNKNOWN_ERROR,
    AttemptEnd,
    FailureKind,
    failure_text,
    unknown_detail,
)
from atmostonce.spec.session import ToolCallStatus

S = ToolCallStatus
DID_NOT_RUN = failure_text(FailureKind.DID_NOT_RUN)
MAY_STILL_RUN = failure_text(FailureKind.MAY_STILL_BE_RUNNING)
MAY_HAVE_RUN = failure_text(FailureKind.MAY_HAVE_RUN)
TOOL_ERROR = failure_text(FailureKind.TOOL_ERROR)
UNKNOWN = f"{OUTCOME_UNKNOWN_ERROR}: {unknown_detail(AttemptEnd.WORKER_LOST)}"
UNKNOWN_CANCELLED = f"{OUTCOME_UNKNOWN_ERROR}: {unknown_detail(AttemptEnd.CANCELLED)}"
READ = EffectClass.READ
IDEM = EffectClass.IDEMPOTENT_WRITE
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE


class Story:
    def __init__(self, config: ExecutorConfig | None = None) -> None:
        self.config = config or ExecutorConfig()
        self.entries: list[h.Entry] = []
        self.t = 0.0
        self.runs = 0

    def add(self, entry: h.Entry) -> int:
        self.entries.append(entry)
        return len(self.entries) - 1

    def now(self) -> float:
        self.t += 1.0
        return self.t

    def wait(self, seconds: float) -> None:
        """Let `seconds` more pass before the next entry (which adds its own second)."""
        self.t += seconds

    def check(self) -> list[h.HistoryViolation]:
        return check_history(self.entries, self.config)

    def properties(self) -> set[str]:
        return {v.property for v in self.check()}

    # -- the agent and people -------------------------------------------------------------------

    def policy(self, tool: str, effect: EffectClass | None,
               approval: bool | None = None, hints: ToolHints | None = None) -> None:
        policy = ToolPolicy(effect, approval) if effect is not None else None
        self.add(h.PolicySet(self.now(), tool, policy, hints))

    def session(self, session_id: str = "s", default: EffectClass | None = None,
                hints_may_lower: bool | None = None) -> None:
        self.add(h.SessionOpened(self.now(), session_id, default, hints_may_lower))

    def ask(self, tool: str, call: str, turn: str = "t1", session: str = "s") -> str:
        key = f"{session}/{turn}/{call}"
        self.add(h.CallAsked(self.now(), key, session, turn, call, tool, "{}"))
        return key

    def answer(self, key: str, approve: bool, ok: bool, text: str = "") -> None:
        self.add(h.ApprovalAnswered(self.now(), key, approve, ok, text))

    def waits(self, key: str) -> None:
        self.add(h.TimerStarted(self.now(), TimerKind.APPROVAL_DEADLINE, key, key))

    def deadline(self, key: str) -> None:
        self.add(h.TimerFired(self.now(), TimerKind.APPROVAL_DEADLINE, key, key))

    def report(self, key: str, session: str = "s") -> None:
        text = report_text("the ledger", "the write went through", key)
        self.add(h.UserMessageSent(self.now(), session, text, True))

    # -- the executor's attempts --------------------------------------------------------------

    def queued(self, key: str, attempt: str) -> None:
        self.add(h.TimerStarted(self.now(), TimerKind.QUEUE_TIMEOUT, attempt, key))

    def hand(self, key: str, attempt: str, worker: str = "w1", tool: str = "tool",
             persisted: bool = True, sent_key: str | None = None) -> int:
        return self.add(h.HandedOut(self.now(), worker, attempt, sent_key or key, tool,
                                    persisted, key))

    def timed_out(self, key: str, attempt: str) -> None:
        self.add(h.TimerFired(self.now(), TimerKind.RUN_TIMEOUT, attempt, key))

    def cancel(self, worker: str, attempt: str) -> None:
        self.add(h.Cancelled(self.now(), worker, attempt))

    def started(self, worker: str, attempt: str) -> None:
        self.add(h.StartDelivered(self.now(), worker, attempt))

    def beat(self, worker: str, attempt: str) -> int:
        return self.add(h.HeartbeatDelivered(self.now(), worker, attempt))

    def result(self, worker: str, attempt: str, ok: bool) -> None:
        self.add(h.ResultDelivered(self.now(), worker, attempt, ok))

    def publish(self, key: str, status: ToolCallStatus, error: str = "") -> int:
        return self.add(h.RecordPublished(self.now(), key, status, error))

    def snapshot(self, key: str, status: ToolCallStatus, error: str = "",
                 shown_key: str | None = None, unreached: bool | None = None,
                 results: tuple[str, ...] | None = None) -> None:
        self.add(h.SnapshotSeen(self.now(), key, status, error, shown_key or key, unreached,
                                results))

    # -- the ledger ---------------------------------------------------------------------------

    def run(self, key: str, attempt: str, worker: str = "w1", tool: str = "tool") -> int:
        self.runs += 1
        self.add(h.RunStarted(self.now(), self.runs, worker, attempt, key, tool, key))
        return self.runs

    def apply(self, run: int, key: str) -> None:
        self.add(h.EffectApplied(self.now(), run, key, True))

    def end(self, run: int, how: h.RunEnd = h.RunEnd.RETURNED, output: str | None = None
            ) -> None:
        self.add(h.RunEnded(self.now(), run, how, output))

    # -- faults -------------------------------------------------------------------------------

    def lost(self, worker: str) -> int:
        return self.add(h.WorkerDeclaredLost(self.now(), worker))

    def connected(self, worker: str) -> None:
        self.add(h.WorkerConnected(self.now(), worker))

    def restart(self) -> None:
        self.add(h.ServerRestarted(self.now(), 0))

    # -- whole calls -----------------------------------------------------------------------------

    def succeeds(self, tool: str, call: str, worker: str = "w1") -> str:
        """A call that is queued, handed out, runs, returns and is recorded succeeded."""
        key = self.ask(tool, call)
        attempt = f"{key}#1"
        self.queued(key, attempt)
        self.hand(key, attempt, worker, tool)
        run = self.run(key, attempt, worker, tool)
        self.started(worker, attempt)
        self.end(run)
        self.result(worker, attempt, True)
        self.publish(key, S.SUCCEEDED)
        return key
