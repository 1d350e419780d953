"""The Tool Calls page on LangGraph, as pure rules: the variants, the tool result a call's
outcome gives the model, and the record a team reads back from a tool message. No LangGraph
import: the rules read plain values, which `tools` and `client` take out of LangChain's
messages, so the tool functions (which write a result) and the session API (which reads it)
never disagree.

| page                    | LangGraph                                                        |
| ----------------------- | ---------------------------------------------------------------- |
| session (Flow)          | a thread of the graph (thread id = session id), SQLite checkpoints |
| the model's tool calls  | one `AIMessage` per turn from the scripted chat model (`model`)   |
| tool call               | a LangChain tool run by the graph; key `{thread}/{turn}/{call}`   |
| `CallTool`              | LangGraph's `RetryPolicy` (tool_node) or LangChain's              |
|                         | `ToolRetryMiddleware` (create_agent), max_attempts attempts       |
| `CallSingleAttemptTool` | no retry policy: LangGraph's strongest at-most-once option        |
| record                  | the call's `ToolMessage`: its status and the text the model reads |
| approval                | `interrupt()` (tool_node) or `HumanInTheLoopMiddleware`           |
|                         | (create_agent), resumed with `Command(resume=...)`               |
| approval deadline       | none in LangGraph: the app's approval inbox judges by the clock   |
|                         | and the agent process resumes an expired call with a rejection    |
| worker                  | the agent process that runs the graph for its threads            |

A tool message reads as a record this way (`record_of`): `success` is succeeded; an error whose
text opens with a record's name is that record (`failed: ...`, `rejected: ...`, the outcome
unknown marker; a rejection's error is its whole text, which opens so already); LangChain's own
rejection (`HumanInTheLoopMiddleware`) is rejected, its error the reason the app gave; any other
error is failed, its whole text the error.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from atmostonce.spec.records import (
    OUTCOME_UNKNOWN_ERROR,
    AttemptProgress,
    FailureKind,
    Outcome,
    Record,
    RejectReason,
    failure_text,
    reject_text,
)
from atmostonce.spec.session import OUTCOME_UNKNOWN_TOOL_RESULT, ToolCallStatus, tool_result_text


class Graph(enum.Enum):
    """How the agent's graph is built."""

    CREATE_AGENT = "create_agent"
    """LangChain's `create_agent`: each tool call its own task (`Send`), approvals by
    `HumanInTheLoopMiddleware`, retries by `ToolRetryMiddleware`."""
    TOOL_NODE = "tool_node"
    """A hand-built `StateGraph`: every call of one model message in one `ToolNode` (one for the
    calls with retries, one for the others), approvals by `interrupt()` inside the tool."""


class Durability(enum.Enum):
    """LangGraph's `durability` of a run: when a step's checkpoint is written."""

    SYNC = "sync"
    """Before the next step starts."""
    ASYNC = "async"
    """While the next step runs: LangGraph's default."""


@dataclass(frozen=True)
class Variant:
    """One way a team builds the page on LangGraph; `kit` names the function that builds its
    tool functions and approval step (`kits.KITS`), the seam a guarded variant swaps."""

    name: str
    graph: Graph
    durability: Durability
    kit: str

    @property
    def approvals(self) -> str:
        return APPROVALS_BY_KIT[self.kit]


APPROVALS_BY_KIT = {"hitl": "HumanInTheLoopMiddleware", "interrupt": "interrupt() in the tool",
                    "guard": "the guard's approval step (interrupt() per call, the decision "
                             "kept in the guard's journal)"}


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("create_agent", Graph.CREATE_AGENT, Durability.ASYNC, "hitl"),
    Variant("create_agent_sync", Graph.CREATE_AGENT, Durability.SYNC, "hitl"),
    Variant("tool_node", Graph.TOOL_NODE, Durability.ASYNC, "interrupt"),
    Variant("tool_node_sync", Graph.TOOL_NODE, Durability.SYNC, "interrupt"),
    Variant("guarded", Graph.CREATE_AGENT, Durability.ASYNC, "guard"),
)}
"""Each variant by the name its factory has in `atmostonce.engines.langgraph`; the bare names
run LangGraph's default durability, "async"."""

SUCCESS = "success"
ERROR = "error"
"""A `ToolMessage`'s two statuses."""
HITL_REJECTED = "User rejected the tool call for"
"""How `HumanInTheLoopMiddleware`'s message for a rejected call opens."""
HITL_REASON = " with reason: "


@dataclass(frozen=True)
class ToolResult:
    """What a tool function gives the graph: the text the model reads and the message's status."""

    text: str
    status: str


def returned(output: str) -> ToolResult:
    """The tool returned `output` (TC-REC-SUCC)."""
    return ToolResult(output, SUCCESS)


def tool_failed(output: str) -> ToolResult:
    """The tool reported a failure (D-3): failed, never retried."""
    return _of(Outcome(Record.FAILED, failure_text(FailureKind.TOOL_ERROR, output)))


def rejected(reason: RejectReason) -> ToolResult:
    """A person rejected the call, or its deadline passed (TC-REC-REJ)."""
    return _of(Outcome(Record.REJECTED, reject_text(reason)))


def unknown() -> ToolResult:
    """The attempt reached the tool and ended without a result: it may have taken effect. The
    error names that failure and its progress (TC-RCN-FIND, D-30)."""
    return _of(Outcome(Record.OUTCOME_UNKNOWN, f"{OUTCOME_UNKNOWN_ERROR}: {_LOST_RUN}"))


_LOST_RUN = ("the tool's run began and its end never reached the agent process "
             f"{AttemptProgress.NOT_COMPLETED.tag()}")


def exhausted(read: bool) -> ToolResult:
    """A call with retries that ran out of attempts after they reached the tool: failed for a
    read, outcome_unknown for an idempotent write (TC-REC-EXHAUST-READ, TC-REC-EXHAUST-OTHER)."""
    if read:
        return _of(Outcome(Record.FAILED, failure_text(FailureKind.MAY_HAVE_RUN)))
    return unknown()


def _of(outcome: Outcome) -> ToolResult:
    return ToolResult(tool_result_text(outcome), ERROR)


def record_of(status: str, text: str) -> tuple[ToolCallStatus, str]:
    """The record and error a team reads from a call's tool message (see the module
    docstring)."""
    if status == SUCCESS:
        return ToolCallStatus.SUCCEEDED, ""
    marker = f"{OUTCOME_UNKNOWN_TOOL_RESULT}: "
    if text.startswith(marker):
        return ToolCallStatus.OUTCOME_UNKNOWN, text[len(marker):]
    for record in (Record.FAILED, Record.REJECTED):
        prefix = f"{record.value}: "
        if text.startswith(prefix):
            rejection = record is Record.REJECTED
            return ToolCallStatus.of_record(record), text if rejection else text[len(prefix):]
    if text.startswith(HITL_REJECTED):
        _, found, reason = text.partition(HITL_REASON)
        return ToolCallStatus.REJECTED, reason if found else text
    return ToolCallStatus.FAILED, text
