"""A skeleton executor to start your own from: it speaks the executor protocol
(`atmostonce.spec.protocol`: events in, commands out, no IO) and passes

    atmostonce verify --executor examples.my_executor:factory

from the repository's root. What each part of it is, and whose:

- **Written here**: the executor itself (`MyExecutor`, which takes the place of the reference's
  `atmostonce/executor/core.py`): the options it accepts, the dispatch of every protocol event
  and every timer to the rule that handles it, which queued attempt a polling worker gets
  (`next_attempt`), and what `get_agent_snapshot` shows.
- **The reference executor's** (`atmostonce/executor/*`, inherited): the tables it keeps
  (`state.py`), the journal entries it persists and reads back on a restart (`journal.py`,
  `facts.py`, `reader.py`, `recovery.py`), timer ids (`timers.py`), and the rules, one method
  each: policies and sessions (`policies.py`), attempts and records (`attempts.py`), asking and
  approval (`approvals.py`), workers (`workers.py`) and the restart (`restart.py`).
- **The specification's** (`atmostonce/spec/*`, which the reference's rules call): how a policy
  resolves, the idempotency key, the record an attempt history decides and its error text,
  approval answers, the fence. Keep these: they are what conformance compares against.

The places a builder replaces with their own are marked `REPLACE (what)`: scheduling, storage
(the journal's entry format and reading it back), timers, worker liveness. Whatever you replace,
`docs/executor-requirements.md` lists what the checks require of it (exact error texts, attempt
ids, JSON entries, what the snapshot must hold), each with the code that checks it.
"""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.executor.approvals import ApprovalRules
from atmostonce.executor.core import check_config
from atmostonce.executor.restart import RestartRules
from atmostonce.executor.state import Attempt, ExecutorState
from atmostonce.executor.timers import parse_timer
from atmostonce.executor.views import snapshot
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Ask,
    Command,
    Connected,
    Event,
    Executor,
    ExecutorConfig,
    Finished,
    Heartbeat,
    OpenSession,
    Poll,
    SetPolicy,
    Started,
    TimerFired,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot


class MyExecutor(RestartRules, ApprovalRules):
    """A sans-IO executor: the reference's rules, joined and scheduled here (D-5, D-6, D-8)."""

    def __init__(self, config: ExecutorConfig) -> None:
        # The lease must be shorter than the heartbeat timeout (D-12); a SpecError here is
        # bad input, and `atmostonce serve` refuses to start with it.
        check_config(config)
        self.config = config
        # REPLACE (storage): the reference's tables, rebuilt by `recover` from the entries it
        # persisted. Keep your own tables instead, but every fact a restart needs must go out
        # in a `Persist` (JSON only) before any command that depends on it.
        self.state = ExecutorState()
        self._resolved = {}
        self._decisions = {}

    # -- the protocol: events in, commands out ---------------------------------------------------

    def handle(self, event: Event) -> list[Command]:
        """Take one event; return the commands to carry out, in order. An event about a call,
        attempt or worker the executor does not know changes nothing."""
        match event:
            case SetPolicy():
                return self.on_set_policy(event)
            case OpenSession():
                return self.on_open_session(event)
            case Ask():
                return self.on_ask(event)
            case Answer():
                return self.on_answer(event)
            case UserMessage():
                return self.on_user_message(event)
            case Connected():
                return self.on_connected(event)
            case Poll():
                return self.on_poll(event)
            case Started():
                return self.on_started(event)
            case Heartbeat():
                return self.on_heartbeat(event)
            case Finished():
                return self.on_finished(event)
            case TimerFired():
                return self.on_timer(event)
        return []

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        """A restart: a fresh executor gets every entry it persisted, in order (D-8).

        REPLACE (storage): the reference reads its own entries back (`restart.py`,
        `recovery.py`); with your own entry format, read yours here. Attempts handed out before
        the restart end as lost to their worker, queued ones stay queued."""
        return RestartRules.recover(self, journal, at)

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """`get_agent_snapshot`: the session's calls (status, error, key, kept policy and
        deadline, attempt history) and its messages (TC-RCN-FIND, TC-SNAP-1, D-30, D-32)."""
        return snapshot(self.state, session_id, self.config.approval_deadline)

    # -- timers ----------------------------------------------------------------------------------

    def on_timer(self, event: TimerFired) -> list[Command]:
        """A timer this executor started fired.

        REPLACE (timers): the reference names a timer `{kind}:{subject}` (`timers.py`), so the
        id says what it is about; any id works if `StartTimer.key` names the call, or an
        attempt id starts with the call's key and '#'."""
        parsed = parse_timer(event.timer)
        if parsed is None:
            return []
        kind, subject = parsed
        if kind is TimerKind.APPROVAL_DEADLINE:
            return self.on_approval_deadline(subject, event.at)
        if kind is TimerKind.QUEUE_TIMEOUT:
            return self.on_queue_timeout(subject, event.at)
        if kind is TimerKind.RUN_TIMEOUT:
            return self.on_run_timeout(subject, event.at)
        if kind is TimerKind.HEARTBEAT_TIMEOUT:
            # REPLACE (worker liveness): a worker silent this long is lost, and so is the
            # attempt it held (TC-REC-LOST); its lease ran out first (D-12).
            return self.on_heartbeat_timeout(subject, event.at)
        return self.on_retry_backoff(subject, event.at)

    # -- scheduling ------------------------------------------------------------------------------

    def next_attempt(self) -> Attempt | None:
        """The queued attempt a polling worker gets, or None for no work.

        REPLACE (scheduling): this one takes the oldest queued attempt that the fence lets go
        (D-6). Any queued attempt is allowed; but conformance follows a schedule only while
        the executor hands out the attempt the schedule names (the oldest), and counts the
        others as diverged, so another choice is checked along fewer schedules."""
        for attempt in self.state.queue.values():
            if not self.fenced(attempt):
                return attempt
        return None


def factory(config: ExecutorConfig) -> Executor:
    """What `--executor examples.my_executor:factory` loads: one fresh executor per call."""
    return MyExecutor(config)
