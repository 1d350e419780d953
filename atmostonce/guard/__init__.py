"""`atmostonce.guard`: the Tool Calls page's semantics for the tool functions of a framework
that does not keep them itself (LangGraph, LangChain's agents, any loop that calls tools).

- `Guard.ask` keeps each call's policy as the spec resolves it when the model asks (TC-SNAP-1);
- `Guard.run` runs the tool only when the page allows it: the intent of each attempt is on disk
  in the journal (SQLite, WAL, synchronous=FULL) before the tool starts; a call with a result
  gives it back; a single-attempt call whose attempt began and never ended is outcome_unknown,
  never run again; a read or an idempotent write gets at most max_attempts attempts with the
  same key, counted across processes;
- `Guard.answer` and the approval deadline follow D-7: asked once, decided once;
- `JournalSessions` lets the page's reconcile job find and report the outcome_unknown calls.

Imports only `atmostonce.spec` and the standard library. The LangGraph binding is
`atmostonce.guard.langgraph` (needs the `langgraph` extra).
"""

from atmostonce.guard.calls import GuardSettings, KeptCall, Statement
from atmostonce.guard.guard import (
    Guard,
    ToolFailed,
    UnknownCall,
    Waiting,
    current_attempt,
    result_text,
)
from atmostonce.guard.journal import Approval, Attempt, Finished, Journal
from atmostonce.guard.reconcile import JournalSessions

__all__ = ["Approval", "Attempt", "Finished", "Guard", "GuardSettings", "Journal",
           "JournalSessions", "KeptCall", "Statement", "ToolFailed", "UnknownCall", "Waiting",
           "current_attempt", "result_text"]
