"""The protocol's own rules, as pure judgements the host applies to a batch of commands: a
go-ahead follows the journal entry that names its attempt and worker (D-5), an attempt whose
run timeout fires is cancelled at the worker it was handed to (TC-AMO-3), a request gets one
reply. (The host's own duties, that a timer fires once per start and only while it runs and
that a worker the executor dropped gets no command until it connects again, are kept by the
host itself.)"""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import JSON, Cancel, Command, GoAhead, Persist, Reply

GO_AHEAD_PERSISTED = "D-5"
"""A go-ahead comes only after a journal entry of its batch names its attempt and worker."""
CANCEL_ON_TIMEOUT = PropertyId.A_CANCEL_ON_TIMEOUT
"""An attempt whose run timeout fires is cancelled at the worker it was handed to."""
ONE_REPLY = "one reply per request"
"""An `Answer` or a `UserMessage` gets exactly one `Reply`, in the batch that answers it."""


def names(entry: dict[str, JSON], attempt: str, worker: str) -> bool:
    """Whether a journal entry holds both the attempt and the worker as values, at any depth."""
    values = entry.values()
    if attempt in values and worker in values:
        return True
    return _holds(entry, attempt) and _holds(entry, worker)


def _holds(value: object, text: str) -> bool:
    if isinstance(value, str):
        return value == text
    if isinstance(value, dict):
        return any(_holds(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, text) for v in value)
    return False


def persisted_before(commands: Sequence[Command], end: int, go: GoAhead) -> bool:
    """D-5: a `Persist` among `commands[:end]` names the go-ahead's attempt and worker."""
    attempt = go.attempt
    worker = go.worker
    for i in range(end):
        command = commands[i]
        if type(command) is Persist and names(command.entry, attempt, worker):
            return True
    return False


def go_ahead_unpersisted(go: GoAhead) -> str:
    return f"go-ahead for {go.attempt} sent before its hand-out was persisted (D-5)"


def cancel_missing(attempt: str, worker: str | None, commands: Sequence[Command]) -> str | None:
    """The breach when `commands`, the answer to `attempt`'s run timeout, hold no `Cancel` of
    it to `worker`, the worker it was handed to."""
    if any(type(c) is Cancel and c.attempt == attempt and c.worker == worker for c in commands):
        return None
    sent = [f"{c.attempt} to {c.worker}" for c in commands if isinstance(c, Cancel)]
    return (f"attempt {attempt} timed out at {worker} and was not cancelled there "
            f"({CANCEL_ON_TIMEOUT}, TC-AMO-3; cancels sent: {', '.join(sent) or 'none'})")


def replies_problem(request: str, replies: Sequence[Reply]) -> str | None:
    """The breach when the batch answering `request` holds other than one reply, to it."""
    if len(replies) == 1 and replies[0].request == request:
        return None
    if not replies:
        return f"request {request} got no reply ({ONE_REPLY})"
    named = ", ".join(r.request for r in replies)
    return f"request {request} got {len(replies)} replies, to {named} ({ONE_REPLY})"


def stray_reply(reply: Reply) -> str:
    return f"a reply to {reply.request} in a batch that answers no such request ({ONE_REPLY})"
