"""The session API over Temporal's client: what the chaos harness (and an application) calls.

| session API           | Temporal                                                        |
| --------------------- | --------------------------------------------------------------- |
| `set_policy`          | `set_policy` update of the `ToolPolicies` workflow               |
| `open_session`        | start the `AgentSession` workflow (id: the session id; one only) |
| `ask`                 | `statement` query of the registry, then the `ask` update, its id  |
|                       | made from the call's key so that asking again is the same ask    |
| `approve`, `reject`   | `answer` update: its result is the reply of D-7's table          |
| `get_agent_snapshot`  | `snapshot` query                                                |
| `send_user_message`   | `user_message` update                                           |
| `events`              | the `events_after` query, polled: the stream follows the workflow |

An update's answer comes once it is in the workflow's history, so an ask, an answer or a user
message acknowledged here is durable (TC-REC-1). A call that cannot reach the server, or whose
answer does not come within the request timeout, raises `ServerUnavailable`: its outcome is
unknown, and asking again is safe (asks by their update id; answers and user messages are
judged by their effect). A request the workflow refuses is bad input (`SpecError`). A query
that finds the session's workflow no longer replays (Temporal's nondeterminism error) raises
`Wedged`, and the client tells its owner which session, with the error (`wedged`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RetryConfig, RPCError, RPCStatusCode

from atmostonce.engines.temporal import mapping
from atmostonce.engines.temporal.payloads import (
    AnswerInput,
    AskInput,
    EventView,
    PolicyChange,
    SessionStart,
    Settings,
    event_of,
    snapshot_of,
    statement_of,
)
from atmostonce.engines.temporal.workflows import AgentSession, ToolPolicies
from atmostonce.runtime.client import AnswerReply, ServerUnavailable
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import build_key, parse_key
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished

T = TypeVar("T")

POLL = 0.25
"""Seconds between two reads of a session's events."""
RETRY = RetryConfig(initial_interval_millis=50, max_interval_millis=400,
                    max_elapsed_time_millis=1500, max_retries=4)
UNPROCESSED = "UnprocessedUpdate"
"""The server's failure type for an update it dropped because the workflow task that carried it
ended without the workflow taking it (a restart or a lost worker in between): never in the
history, so sending it again is safe."""
_BUSY = RPCStatusCode.RESOURCE_EXHAUSTED
"""What a query to a workflow gets while too many queries wait for it."""
_TASK_FAILED = "unexpected workflow task failure"
"""What an update gets while the workflow's last task failed and the server retries it (found
after a restart: the session worker sent the acceptance of an update the server had completed
already); the update was not taken, so sending it again is safe."""
_QUERY_TASK_FAILED = "Workflow Task in failed state"
"""What a query gets at the same moment: the workflow's last task failed and the server retries
it; the query read nothing, so asking again is safe (seen when the workers that run the
workflows are the ones killed, as in the Pydantic AI mapping)."""
NONDETERMINISM = "[TMPRL1100]"
"""How Temporal's nondeterminism error begins: the worker that took the query replayed the
workflow's history and the workflow's commands did not match it. Every worker without the run in
its cache replays it the same way, so the session is wedged, not busy (docs/engines.md, P-7)."""
_GONE = {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED,
         RPCStatusCode.UNKNOWN, RPCStatusCode.INTERNAL, RPCStatusCode.ABORTED,
         RPCStatusCode.RESOURCE_EXHAUSTED}
"""Statuses of a call whose outcome is unknown: the server is down, restarting, or slow."""


class NotFound(SpecError):
    """The server knows no such workflow."""


class Busy(ServerUnavailable):
    """The workflow has too many queries waiting; try again in a moment."""


class Wedged(ServerUnavailable):
    """The session's workflow no longer replays (NONDETERMINISM): a finding about the engine.
    Only a worker that still holds the run in its cache can answer, so asking again later is
    the most the harness can do, and its owner reports the session as wedged."""


_QUIET: list[Runtime] = []


def quiet_runtime() -> Runtime:
    """The Temporal runtime of this process's clients, logging only errors: a client whose
    server restarts would otherwise warn of every retried call on stderr."""
    if not _QUIET:
        _QUIET.append(Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(
            filter=TelemetryFilter(core_level="ERROR", other_level="ERROR")))))
    return _QUIET[0]


async def connect(target: str) -> Client:
    """A client of the server at `target`, with short retries of its own (RETRY)."""
    return await Client.connect(target, namespace=mapping.NAMESPACE, retry_config=RETRY,
                                runtime=quiet_runtime())


class TemporalSessions:
    """The session API on one Temporal client, connected on first use (see the module
    docstring). Used from one event loop."""

    workflow = "AgentSession"
    """The session workflow's type: another mapping's workflow with the same updates and
    queries (a subclass says which) is driven the same way."""
    task_queue = mapping.SESSIONS_QUEUE
    """The task queue the session workflows and the policy registry run on."""

    def __init__(self, target: str, settings: Settings, *, connect_timeout: float = 5.0,
                 request_timeout: float = 10.0,
                 opened: Callable[[str], None] = lambda session_id: None,
                 wedged: Callable[[str, str], None] = lambda session_id, line: None) -> None:
        self.target = target
        self.settings = settings
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.opened = opened
        """Called with each session id this client opens, so the engine can read its history."""
        self.wedged = wedged
        """Called with a session id and the error each time a query finds its workflow no
        longer replays (`Wedged`), so the engine can report it."""
        self._client: Client | None = None

    async def _connected(self) -> Client:
        if self._client is None:
            try:
                self._client = await asyncio.wait_for(connect(self.target),
                                                      self.connect_timeout)
            except Exception as error:
                raise ServerUnavailable(f"cannot reach the Temporal server at {self.target}: "
                                        f"{type(error).__name__}: {error}") from None
        return self._client

    async def _call(self, what: str, request: Callable[[Client], Awaitable[T]],
                    session_id: str = "") -> T:
        """Run one request, its outcome unknown (ServerUnavailable) when the server does not
        answer in time; `session_id` names the workflow a query reads, for `Wedged`."""
        client = await self._connected()
        sent = asyncio.ensure_future(request(client))
        sent.add_done_callback(_retrieved)
        try:
            return await asyncio.wait_for(sent, self.request_timeout)
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError) as error:
            raise ServerUnavailable(f"{what}: no answer from {self.target} in time "
                                    f"({type(error).__name__})") from None
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == UNPROCESSED:
                raise ServerUnavailable(f"{what}: the server dropped the update before the "
                                        f"workflow took it ({cause})") from None
            raise SpecError(f"{what}: the workflow refused it: {cause or error}") from None
        except WorkflowQueryFailedError as error:
            if NONDETERMINISM not in str(error):
                raise
            line = (f"session {session_id or '?'}: its workflow no longer replays on a "
                    f"Temporal worker (nondeterminism error {error})")
            self.wedged(session_id, line)
            raise Wedged(f"{what}: {line}") from None
        except RPCError as error:
            if error.status is _BUSY:
                raise Busy(f"{what}: {error}") from None
            if error.status in _GONE:
                raise ServerUnavailable(f"{what}: {error.status.name}: {error}") from None
            if error.status is RPCStatusCode.NOT_FOUND:
                raise NotFound(f"{what}: {error}") from None
            if error.status is RPCStatusCode.FAILED_PRECONDITION and (
                    _TASK_FAILED in str(error) or _QUERY_TASK_FAILED in str(error)):
                raise ServerUnavailable(f"{what}: the workflow's task failed and is being "
                                        f"retried ({error})") from None
            raise SpecError(f"{what}: {error.status.name if error.status else '?'}: "
                            f"{error}") from None

    def _rpc(self) -> timedelta:
        return timedelta(seconds=self.request_timeout)

    def _session(self, client: Client, session_id: str) -> WorkflowHandle[AgentSession, None]:
        return client.get_workflow_handle_for(AgentSession.run, session_id)

    async def start_registry(self) -> None:
        """Start the tool policy registry unless it runs already."""
        await self._call("start the registry", lambda c: c.start_workflow(
            ToolPolicies.run, id=mapping.REGISTRY_ID, task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, rpc_timeout=self._rpc()))

    async def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                         hints: ToolHints | None = None) -> None:
        change = PolicyChange(tool, statement_of(policy, hints))
        await self._call("set_policy", lambda c: c.get_workflow_handle(
            mapping.REGISTRY_ID).execute_update(
            ToolPolicies.set_policy, change, rpc_timeout=self._rpc()))

    async def open_session(self, session_id: str,
                           default_effect: EffectClass | None = None) -> None:
        start = SessionStart(session_id, default_effect.value if default_effect else None,
                             self.settings)
        await self._call("open_session", lambda c: c.start_workflow(
            self.workflow, start, id=session_id, task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING, rpc_timeout=self._rpc()))
        self.opened(session_id)

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: str = "{}") -> str:
        key = build_key(session_id, turn_id, tool_call_id)
        statement = await self._call("ask (the tool's policy)", lambda c: c.get_workflow_handle(
            mapping.REGISTRY_ID).query(ToolPolicies.statement, tool, rpc_timeout=self._rpc()))
        ask = AskInput(turn_id, tool_call_id, tool, arguments, statement)
        return await self._call("ask", lambda c: self._session(c, session_id).execute_update(
            AgentSession.ask, ask, id=f"ask {key}", rpc_timeout=self._rpc()))

    async def _answer(self, key: str, approve: bool) -> AnswerReply:
        session_id = parse_key(key).flow_id
        given = AnswerInput(key, approve)
        out = await self._call("approve" if approve else "reject",
                               lambda c: self._session(c, session_id).execute_update(
                                   AgentSession.answer, given, id=f"answer {uuid.uuid4()}",
                                   rpc_timeout=self._rpc()))
        return AnswerReply(out.accepted, out.text)

    async def approve(self, key: str) -> AnswerReply:
        return await self._answer(key, True)

    async def reject(self, key: str) -> AnswerReply:
        return await self._answer(key, False)

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's snapshot; an empty one for a session never opened."""
        try:
            view = await self._call("get_agent_snapshot", lambda c: self._session(
                c, session_id).query(AgentSession.snapshot, rpc_timeout=self._rpc()), session_id)
        except NotFound:
            return AgentSnapshot(session_id, (), ())
        return snapshot_of(view)

    async def send_user_message(self, session_id: str, text: str) -> bool:
        accepted: bool = await self._call("send_user_message", lambda c: self._session(
            c, session_id).execute_update(AgentSession.user_message, text,
                                          rpc_timeout=self._rpc()))
        return accepted

    async def events(self, session_id: str, past: bool = True
                     ) -> AsyncIterator[ToolCallFinished]:
        """The session's AgentEvents stream, read from the workflow every POLL seconds; each
        event once per subscription. A busy workflow is read again later; ServerUnavailable
        ends the stream: subscribe again."""
        seen = 0
        if not past:
            seen = len(await self._events(session_id, 0))
        while True:
            try:
                views = await self._events(session_id, seen)
            except Busy:
                views = []
            for view in views:
                seen += 1
                yield event_of(view)
            await asyncio.sleep(POLL)

    async def _events(self, session_id: str, seen: int) -> list[EventView]:
        return await self._call("events", lambda c: self._session(c, session_id).query(
            AgentSession.events_after, seen, rpc_timeout=self._rpc()), session_id)

    async def close(self) -> None:
        self._client = None


def _retrieved(sent: asyncio.Future[Any]) -> None:
    """Take a request's exception even when nobody waits for it any more: an update cancelled
    with the call that sent it ends in Temporal's own timeout error, which asyncio would print
    as a traceback on stderr."""
    if not sent.cancelled():
        sent.exception()
