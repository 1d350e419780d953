"""The clause registry: every normative statement of the Tool Calls page, paraphrased, with a
stable id and its section anchor; every open decision with the answer chosen and why; and the
findings the model checker established.

Code and tests name the ids they implement or pin (`grep -rn "TC-"` finds them); the matrix
of which code and which tests cover each clause is computed from them by
`atmostonce.check.clauses.coverage`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

PAGE = "https://docs.superdurable.io/agent-frameworks/tool-calls/"


class ClauseKind(enum.Enum):
    PAGE = "page"
    DECISION = "decision"
    FINDING = "finding"


@dataclass(frozen=True)
class Clause:
    """One statement the project must honour, with where it comes from and, for a decision or a
    finding, the answer and the reason."""

    id: str
    anchor: str
    summary: str
    kind: ClauseKind = ClauseKind.PAGE
    answer: str = ""
    reason: str = ""

    @property
    def url(self) -> str:
        return f"{PAGE}#{self.anchor}" if self.anchor else PAGE


class FindingId:
    """The id of every finding, named after it; code names a finding, and a claim of one (its id
    and a letter), by these."""

    F_6: Final = "F-6"
    F_7: Final = "F-7"


def _page(cid: str, anchor: str, summary: str) -> Clause:
    return Clause(cid, anchor, summary)


def _decision(cid: str, anchor: str, summary: str, answer: str, reason: str) -> Clause:
    return Clause(cid, anchor, summary, ClauseKind.DECISION, answer, reason)


def _finding(cid: str, anchor: str, summary: str, answer: str, reason: str) -> Clause:
    return Clause(cid, anchor, summary, ClauseKind.FINDING, answer, reason)


_POL = "tool-policies-and-approvals"
_EFF = "effect-classes"
_APR = "require-approval"
_OUT = "tool-call-outcomes"
_TWICE = "tool-runs-twice"
_RCN = "reconcile-outcome-unknown"

_CLAUSES: tuple[Clause, ...] = (
    # Top of the page and "Tool policies".
    _page("TC-POL-1", _POL, "Every tool has a policy whichever framework runs the agent; a call "
          "always resolves to an effective policy."),
    _page("TC-POL-2", _POL, "The effect class alone decides whether the engine may run a call "
          "again after a failure."),
    # Effect classes.
    _page("TC-EFF-READ", _EFF, "A read only reads, so repeating it is harmless; it runs in "
          "CallTool with retries."),
    _page("TC-EFF-IDEM", _EFF, "An idempotent write has no further effect when repeated with the "
          "same idempotency key; it runs in CallTool with retries."),
    _page("TC-EFF-NONIDEM", _EFF, "A non-idempotent write may repeat its effect when repeated; it "
          "runs in CallSingleAttemptTool, one attempt."),
    _page("TC-EFF-UNCL", _EFF, "An unclassified tool is handled as a non-idempotent write: "
          "CallSingleAttemptTool, one attempt."),
    _page("TC-KEY-1", _EFF, "All attempts of one call carry one and the same idempotency key."),
    _page("TC-KEY-2", _EFF, "The key is the Flow (session) id, the turn id and the tool call id, "
          "separated by '/'."),
    _page("TC-KEY-3", _EFF, "A tool whose service discards a repeated key should be classified "
          "idempotent_write, which lets the engine retry it."),
    _page("TC-KEY-PASS", _EFF, "The tool passes its call's idempotency key to the service it "
          "writes to."),
    # Require approval.
    _page("TC-APR-1", _APR, "A policy holds two fields: the effect class and requires_approval."),
    _page("TC-APR-2", _APR, "With requires_approval unset, reads and idempotent writes run without "
          "approval, and non-idempotent writes and unclassified tools wait for it."),
    _page("TC-APR-3", _APR, "requires_approval set to true makes every call of the tool wait for a "
          "person, whatever its effect class."),
    _page("TC-APR-4", _APR, "requires_approval set to false lets a non-idempotent write run "
          "without approval, and it still runs at most once."),
    _page("TC-APR-5", _APR, "A tool's policy takes precedence over framework metadata (such as an "
          "MCP read-only hint) and over the session's default effect."),
    _page("TC-SNAP-1", _APR, "A recorded call keeps the effect class and approval rule in force at "
          "the moment the model asked for it."),
    _page("TC-SNAP-2", _APR, "A policy change affects only calls asked after it."),
    _page("TC-APR-EXAMPLE", _APR, "In the quick start, cancel_order is a non_idempotent_write "
          "with requires_approval unset, so every call of it waits for approval."),
    # Tool call outcomes.
    _page("TC-REC-1", _OUT, "Every tool call ends with exactly one of four records."),
    _page("TC-REC-SUCC", _OUT, "succeeded means the tool returned a result."),
    _page("TC-REC-FAIL", _OUT, "failed means the tool reported a failure, or the engine knows the "
          "tool did not run."),
    _page("TC-REC-REJ", _OUT, "rejected means a person rejected the call or its approval deadline "
          "passed."),
    _page("TC-REC-UNK", _OUT, "outcome_unknown means the tool may or may not have taken effect."),
    _page("TC-REC-2", _OUT, "The model reads every record and chooses what to do next; a failed or "
          "unknown call does not fail the session."),
    _page("TC-REC-NOTRUN", _OUT, "When every attempt failed before reaching a worker, the call "
          "records failed with an error opening 'the tool did not run, so it is safe to call "
          "again', and the model may call the tool again."),
    _page("TC-REC-LOST", _OUT, "When an attempt reached a worker and the worker then stopped, the "
          "tool may have run, even if no heartbeat arrived before it stopped."),
    _page("TC-REC-RETRY", _OUT, "After such a loss CallTool first tries a read or an idempotent "
          "write again."),
    _page("TC-REC-EXHAUST-READ", _OUT, "When its attempts run out after such a loss, a read "
          "records failed."),
    _page("TC-REC-EXHAUST-OTHER", _OUT, "When attempts run out after such a loss, every other "
          "call records outcome_unknown and is never run again."),
    # At-most-once has one exception.
    _page("TC-AMO-1", _TWICE, "CallSingleAttemptTool hands each attempt to exactly one worker and "
          "never gives that attempt to a different worker."),
    _page("TC-AMO-2", _TWICE, "If that worker dies or is disconnected while the tool runs, the "
          "call records outcome_unknown and the session never runs it again."),
    _page("TC-AMO-3", _TWICE, "Cancelling a running attempt (a timeout, say) is cooperative: the "
          "engine records the failure but cannot stop the tool, so the old worker may go on "
          "running it."),
    _page("TC-AMO-4", _TWICE, "The turn continues with that failure; if the model asks for the "
          "same tool again, the new call may run while the old run is still finishing, giving "
          "two runs of one write, one per call: the single exception to at-most-once."),
    _page("TC-AMO-5", _TWICE, "The page advises passing the call's idempotency key to the service "
          "to make that double run harmless (see finding F-6)."),
    # Reconcile outcome_unknown.
    _page("TC-RCN-1", _RCN, "A call recorded outcome_unknown is never retried by the session, and "
          "the model is told the outcome is unknown."),
    _page("TC-RCN-FIND", _RCN, "Such a call is visible: get_agent_snapshot lists it with status "
          "outcome_unknown and the failure in its error, the AgentEvents stream carries a "
          "tool_call_finished event with that status, and afterwards its tool result in the "
          "history says the outcome is unknown."),
    _page("TC-RCN-KEY", _RCN, "Its idempotency key can be rebuilt from the record's turn id and "
          "tool call id."),
    _page("TC-RCN-ASK", _RCN, "The service can be asked whether it holds an operation with the "
          "key, or the effect looked up by a business key such as the order id."),
    _page("TC-RCN-TELL", _RCN, "The real outcome is reported to the session with "
          "send_user_message, worded as a note from the application, since the model reads it as "
          "the user's words."),
    _page("TC-RCN-ONCE", _RCN, "A reconcile run reads the history first and skips calls whose key "
          "a user message already names, so rerunning it is safe and a send is never retried."),
    _page("TC-RCN-NEXT", _RCN, "The next turn's model works from the report and does not ask "
          "for the call again when it already took effect."),
    _page("TC-RCN-NOSEARCH", _RCN, "No search finds these calls, since no Step waits on them: "
          "the steps run from a support tool or a small job the application starts when it "
          "sees the status."),
    _page("TC-RCN-NAMES", _RCN, "The reconcile example works with OUTCOME_UNKNOWN_TOOL_RESULT "
          "in a tool result's output, an AgentSnapshot of messages with a MessageRole, turn and "
          "tool call ids, tool output and arguments, get_agent_snapshot(session) and "
          "send_user_message(session, text) returning whether the session took it, and a check "
          "(key, tool arguments as JSON) returning the text to report."),
    _page("TC-RCN-HISTORY", _RCN, "When the Flow's history shows that the tool Step's attempt never "
          "reached a worker, the tool did not run; this can happen to a call started before a "
          "server upgrade."),
    # Open decisions.
    _decision(
        "D-1", _APR, "Which effect class applies when a tool has no ToolPolicy?",
        "The ToolPolicy when set; otherwise framework metadata (MCP annotations); otherwise the "
        "session's default effect; otherwise unclassified.",
        "The more specific statement about a tool wins over the more generic one, and the page "
        "says the policy beats both metadata and the session default.",
    ),
    _decision(
        "D-2", _EFF, "What if a key component is empty or contains '/'?",
        "Rejected with a SpecError naming the component: components must be non-empty, "
        "printable, and free of white space and '/'.",
        "Otherwise two different calls could share a key ('a/b' + 'c' vs 'a' + 'b/c') and "
        "reconcile could not split a key back into its parts.",
    ),
    _decision(
        "D-3", _OUT, "Does a failure the tool itself reports get retried?",
        "No: the call records failed with the tool's error, which goes to the model. Retries are "
        "for infrastructure failures only: not reached, worker lost, timed out.",
        "A reported failure is an answer, not an accident; repeating it would repeat whatever the "
        "tool did before failing, and the model is the one to decide what comes next.",
    ),
    _decision(
        "D-4", _TWICE, "What does a cancelled or timed-out single-attempt call record?",
        "outcome_unknown by default, like any other call whose attempt reached a worker and "
        "ended without a result (a read records failed), its error saying it was cancelled or "
        "timed out, that the tool may still be running, and its attempt progress "
        "(NOT_COMPLETED). The other choice stays as an executor option, "
        "ExecutorConfig.cancel_records_failed (serve --cancel-records-failed): failed, with an "
        "error saying the attempt was cancelled and the tool may still be running (finding "
        "F-7). Under neither choice the 'did not run, so it is safe to call again' wording. The "
        "model establishes both choices and the checkers judge an executor by the one it "
        "declares.",
        "The real Dex records it so: its recovery step gives a read failed and any other call "
        "outcome_unknown when the attempt's progress is NOT_COMPLETED or UNSPECIFIED "
        "(superdurable/dex release agents/v0.2.0). It is also the page's own rule for an "
        "attempt that reached a worker, and it leaves no failed record whose write lands later "
        "unseen by the page's reconcile steps (F-7). The exception paragraph's 'records the "
        "failure' is read as the failure of the attempt, which the record then settles; the "
        "failed reading is kept for engines that take it at its word, with F-7 and D-20 to "
        "settle its consequence. Telling the model it is safe to call again would invite "
        "exactly the double run.",
    ),
    _decision(
        "D-5", _OUT, "How does the engine know whether an attempt reached a worker?",
        "The server durably records that the attempt is handed to worker W before it sends W the "
        "go-ahead, and W starts the tool only on that go-ahead. An attempt counts as reached from "
        "that record on; when in doubt it counts as reached.",
        "Recording after the go-ahead would leave a window in which the tool runs while the "
        "journal says it never reached a worker, which would make 'did not run' a lie.",
    ),
    _decision(
        "D-6", _TWICE, "Does passing the call's idempotency key make the documented double run "
        "harmless?",
        "No (finding F-6). The executor offers a fence: a new call of a single-attempt tool waits "
        "while a run of the same tool that the engine gave up on may still be going, that is "
        "until its worker reports the run ended or the worker is declared lost; the model check "
        "proves no overlap remains with the fence on.",
        "The two runs belong to two calls, so their keys differ and a service that drops "
        "repeated keys applies both.",
    ),
    _decision(
        "D-7", _APR, "Approval edge cases: after the deadline, twice, for a call that needs none, "
        "after a rejection.",
        "The first answer (or the deadline) that lands decides; every later one changes nothing "
        "and gets a reply saying why: already approved, already rejected, deadline passed. "
        "Approving or rejecting a call that needs no approval is refused as not required.",
        "A decision a person or the timer already made must not be undone by a late or repeated "
        "answer; a call that may be running cannot be rejected any more.",
    ),
    _decision(
        "D-8", _RCN, "What happens to attempts when the server restarts (an upgrade)?",
        "Attempts handed out before the restart are handled as lost to their worker; an attempt "
        "that was queued but never handed out did not run and is handed out after the restart.",
        "Connections do not survive the restart, so the server cannot know what a worker did with "
        "an attempt it held; the journal does know which attempts were never handed out.",
    ),
    _decision(
        "D-9", _OUT, "What does a timed-out attempt of a CallTool call lead to?",
        "It counts as an infrastructure failure after a reach: another attempt while attempts "
        "remain; when they run out a read records failed and an idempotent write "
        "outcome_unknown, the record's error naming the last attempt's progress "
        "(NOT_COMPLETED). A single-attempt call's timed-out attempt ends the same way, "
        "outcome_unknown (D-4), under either choice of D-4 but for its record.",
        "A timed-out tool may have taken effect, exactly like one whose worker stopped; Dex "
        "retries a tool Step by its retry policy and then records read failed, anything else "
        "outcome_unknown.",
    ),
    _decision(
        "D-10", _EFF,
        "Does a single-attempt call whose attempt never reached a worker get another?",
        "No: one attempt, recorded failed with the 'did not run, so it is safe to call again' "
        "wording, and the model may ask again.",
        "CallSingleAttemptTool runs once; the record tells the model the truth so it can choose.",
    ),
    _decision(
        "D-11", _APR, "How do MCP annotations map to an effect class?",
        "readOnlyHint true: read; else idempotentHint true: idempotent_write; else readOnlyHint "
        "false: non_idempotent_write; otherwise the metadata says nothing and the session default "
        "applies.",
        "Only statements about repeating the call matter; destructiveHint alone says nothing "
        "about it.",
    ),
    _finding(
        FindingId.F_6, _TWICE, "Does passing each call's idempotency key make the documented double "
        "run harmless?",
        "No. With a service that drops repeated idempotency keys, a cancelled run and the "
        "model's second call of the same tool both take effect (F-6a): the two runs belong to "
        "two calls and carry two keys. A business key shared by the calls, such as an order "
        "id, makes the repeat harmless (F-6b). The executor's fence removes the overlap itself "
        "(F-6c) but not a repeat after the cancelled run ended (F-6d), which the failed "
        "record's 'may still be running' wording warns the model about. With time-outs and "
        "restarts off, no two runs of a single-attempt tool ever overlap (F-6e).",
        "Established by exhaustive search on every `atmostonce check` "
        "(atmostonce.model.findings), each claim with its shortest trace.",
    ),
    _decision(
        "D-12", _TWICE, "Can a worker that lost its connection go on running a tool after the "
        "server declared it lost?",
        "No: a worker whose lease runs out stops its tool runs, and the server's heartbeat timeout "
        "is longer than the lease, so a run is over by the time its attempt is recorded lost.",
        "Without it a partition would be a second, undocumented way to run a write twice: the "
        "model asks again after outcome_unknown while the lost run still goes on.",
    ),
    _finding(
        FindingId.F_7, _TWICE, "Can a call recorded failed take effect after its record, unseen by "
        "reconcile?",
        "Under D-4's other choice (cancel_records_failed), yes. A single-attempt call whose "
        "attempt times out is recorded failed while its tool goes on, and its write can land "
        "after the record (F-7a, shortest trace: ask, hand-out, go-ahead, time-out, write). The "
        "page's outcome table says failed means the tool reported a failure or the engine "
        "knows it did not run, yet here neither holds; and its reconcile steps look only for "
        "outcome_unknown, so no one reports the write (F-7b). For that choice the failed "
        "record is the one exception of A-RECORD-MEANING it declares, and reconcile includes "
        "such calls on request (D-20), reporting each exactly once (F-7c). By default (D-4) "
        "the call is outcome_unknown, no failed record says the tool may still be running "
        "(D-4b), and the page's own steps report it (D-4a).",
        "This finding is why D-4's default became outcome_unknown, as Dex records it; the "
        "failed choice stays for engines that read the exception paragraph's 'records the "
        "failure' as the record, and this is what they must add. Established by exhaustive "
        "search on every `atmostonce check` (atmostonce.model.findings) and reproduced on the "
        "real runtime.",
    ),
    _decision(
        "D-20", _RCN, "How does an application learn the real outcome of a failed call whose "
        "tool may still have been running?",
        "`atmostonce reconcile --include-cancelled` (library: report_unknown_outcomes(..., "
        "include_cancelled=True)) also reconciles failed calls whose tool result says the "
        "attempt was cancelled and the tool may still be running, with the same steps and the "
        "same '(tool call KEY)' marker, so each is reported once however often the job runs; "
        "each report names its kind, outcome_unknown or failed_may_still_be_running. Off by "
        "default; needed only with an engine that declares D-4's other choice, since by "
        "default such calls are outcome_unknown and the page's steps find them.",
        "The page's steps name only outcome_unknown, so the default follows them; F-7 shows "
        "that under D-4's other choice a cancelled write can land after its failed record, and "
        "the application needs the same way to settle it.",
    ),
    _decision(
        "D-21", _RCN, "How does reconcile tell that a user message already reported a call?",
        "Only by the report's own form '(tool call KEY)', KEY being the whole run of non-space "
        "characters before the closing parenthesis; the key appearing elsewhere in a message, "
        "or inside a longer key, does not count.",
        "The page's example tests whether the key occurs anywhere in the user messages, so the "
        "key of call-1 is found inside the report of call-12 and call-1 is never reported; a "
        "user quoting a key in their own words would silence its report too.",
    ),
    _decision(
        "D-22", _APR, "May framework metadata (an MCP readOnlyHint, say) lower the session's "
        "default effect?",
        "Yes by default, as D-1 orders them: a hint beats the session default. A session "
        "opened with hints_may_lower false keeps its default as a floor: a hint may make a call "
        "more cautious than the default (read, then idempotent_write, then "
        "non_idempotent_write and unclassified) but never less, so a readOnlyHint can no "
        "longer remove the approval and the single attempt a cautious default gives.",
        "The page puts the policy above both and says nothing between them; a hint is a "
        "statement about the one tool, more specific than a session-wide default, and sessions "
        "rely on hints today. But a hint is a claim made by whoever wrote the tool's server, "
        "which a session may not trust: the model shows a write hinted read-only under a "
        "cautious default applied twice by one call when the hint may lower the default, and "
        "never with the floor, so a session that does not trust its tools' metadata can say so.",
    ),
    _decision(
        "D-30", _RCN, "What does the Flow's history show of a call, and when does reconcile "
        "conclude from it that the tool did not run?",
        "Every attempt of the call: when it was queued, when it was handed to which worker, when "
        "that worker's Started arrived, how and when it ended and, for one that ended without "
        "the tool's answer, its progress as Dex names it (NOT_STARTED, NOT_COMPLETED, "
        "UNSPECIFIED), in the snapshot and through the client. Reconcile asks the history before the service and reports that the tool "
        "did not run, without asking the service, only when no attempt was ever handed to a "
        "worker; an engine that shows no history leaves the question to the service.",
        "The hand-out is recorded before the go-ahead (D-5), so an attempt never handed out "
        "cannot have run; a missing Started or a loss at a server restart proves nothing, since "
        "the tool may run before its Started arrives and a restart loses the connection, not "
        "the run.",
    ),
    _decision(
        "D-31", _RCN, "How can a call be recorded outcome_unknown though its attempt never "
        "reached a worker?",
        "Never by this executor (A-UNKNOWN-REACHED): only by a server of an earlier version, "
        "before an upgrade, that ended calls in flight at its restart with outcome_unknown, "
        "queued ones too. The upgraded server keeps that record, since a record never changes "
        "(TC-REC-1), and its history shows the attempt never reached a worker, so reconcile "
        "reports the tool did not run. Such a record's error names the attempt's progress "
        "UNSPECIFIED, which counts as reached, as Dex's older servers' records do.",
        "The page says this happens for calls started before a server upgrade; the journal "
        "written before the upgrade still says which attempts were never handed out. Dex has "
        "the same history: agents 0.1.0 recorded outcome_unknown for calls that never ran, and "
        "a server that reports no progress (UNSPECIFIED) keeps that behaviour.",
    ),
    _decision(
        "D-32", _APR, "Whose approval deadline does a call get?",
        "The ask's own when it sets one, else its tool policy's, else the server's setting. "
        "The call keeps it from the moment it was asked, like its effect class and approval "
        "rule (TC-SNAP-1), also across a restart; the snapshot shows the three for each call.",
        "The page speaks of a call's approval deadline: a refund and a lookup need not give a "
        "person the same time, and a policy changed while a call waits must not move its "
        "deadline, as it must not change its approval rule.",
    ),
)

CLAUSES: Mapping[str, Clause] = {c.id: c for c in _CLAUSES}


def all_clauses() -> tuple[Clause, ...]:
    return _CLAUSES
