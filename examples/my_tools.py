"""Your own tools on the runtime: the registry `atmostonce worker --tools examples.my_tools:TOOLS`
runs, in place of the demo tools.

Each tool is an async function of the call (`atmostonce.runtime.registry.ToolCall`) with its
ToolPolicy beside it. A tool that changes something passes `call.key`, the call's idempotency
key, to the service it writes to; here `call.write` stands in for that service (it is the effect
ledger the runtime starts, which keeps every write with its key). Raising `ToolFailed` reports
a failure the model reads. The server learns each tool's policy from the client:

    for tool in TOOLS:
        client.set_policy(tool.name, tool.policy)
"""

from __future__ import annotations

import json

from atmostonce.runtime.registry import Tool, ToolCall, ToolFailed
from atmostonce.spec.policy import EffectClass, ToolPolicy


async def look_up_ticket(call: ToolCall) -> dict[str, str]:
    """A read: safe to run again."""
    return {"ticket": str(call.arguments.get("ticket", "T-1")), "state": "open"}


async def escalate(call: ToolCall) -> dict[str, object]:
    """An idempotent write: the service drops a second request with the same key."""
    written = await call.write(json.dumps(call.arguments, sort_keys=True))
    return {"escalated": True, "requests_with_this_key": written.count}


async def add_comment(call: ToolCall) -> str:
    """A non-idempotent write: each request adds a comment, so it runs at most once."""
    text = call.arguments.get("text")
    if not isinstance(text, str) or not text:
        raise ToolFailed("add_comment needs a non-empty 'text'")
    await call.write(text)
    return f"comment added to {call.arguments.get('ticket', 'T-1')}"


TOOLS = [
    Tool("look_up_ticket", ToolPolicy(EffectClass.READ), look_up_ticket,
         "reads a ticket's state"),
    Tool("escalate", ToolPolicy(EffectClass.IDEMPOTENT_WRITE), escalate,
         "raises a ticket's priority; repeated keys are dropped"),
    Tool("add_comment", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False),
         add_comment, "adds a comment; every request adds one"),
]
