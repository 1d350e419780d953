"""The demo tools a runtime worker runs: one per effect class, each with its policy, the kind of
service it writes to, and a behaviour tests can tune.

| tool              | policy                                   | service it writes to          |
| ----------------- | ---------------------------------------- | ----------------------------- |
| `lookup_order`    | read                                     | none (it only reads)          |
| `refund`          | idempotent_write, requires approval      | keyed: drops a repeated key   |
| `cancel_order`    | non_idempotent_write (approval: default) | plain: applies every write    |
| `notify_customer` | none, so unclassified                    | plain                         |

A run waits `write_at` seconds, writes to the effect ledger with the call's idempotency key
(TC-KEY-1, TC-KEY-3, TC-KEY-PASS: the key goes to the service the tool writes to), waits out
the rest of `duration`, then returns a result or, with `fail`, reports a failure (D-3).
Defaults come from the registry, the worker's command line (`--duration TOOL=S`,
`--write-at TOOL=S`, `--fail TOOL`, `--stop-on-cancel TOOL`) overrides them per tool, and a
call's own JSON arguments `duration`, `write_at` and `fail` override them per call.
Cancellation is cooperative (TC-AMO-3): only a tool told `stop_on_cancel` looks at it,
and only before its write.

A call whose arguments name a `gate` (an absolute path prefix on the worker's machine) is
scripted instead of timed, so that a replay takes each of its steps when it says: the run
writes once `GATE.write` exists and returns once `GATE.return` exists, reporting a failure when
that file says `fail`; a return released before the write skips the write. Unreleased, it
reports a failure after `duration` seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from atmostonce.check.history.services import Service
from atmostonce.runtime.registry import (
    Fenced,
    Tool,
    ToolCall,
    ToolContext,
    ToolFailed,
    ToolFunction,
    WriteResult,
    run_call,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy

__all__ = ["TOOLS", "Behaviour", "DemoTool", "Fenced", "ToolContext", "WriteResult",
           "behaviours", "demo_registry", "run_tool"]


@dataclass(frozen=True)
class Behaviour:
    duration: float = 0.0
    write_at: float = 0.0
    fail: bool = False
    stop_on_cancel: bool = False
    gate: str = ""

    def for_call(self, arguments: Mapping[str, Any]) -> Behaviour:
        """This behaviour with the call's own `duration`, `write_at` and `fail`, if given."""
        changes: dict[str, Any] = {}
        for name in ("duration", "write_at"):
            value = arguments.get(name)
            if value is not None:
                changes[name] = _seconds(f"argument {name}", value)
        fail = arguments.get("fail")
        if fail is not None:
            if not isinstance(fail, bool):
                raise SpecError(f"argument fail must be true or false, got {fail!r}")
            changes["fail"] = fail
        gate = arguments.get("gate")
        if gate is not None:
            if not isinstance(gate, str) or not os.path.isabs(gate):
                raise SpecError(f"argument gate must be an absolute path, got {gate!r}")
            changes["gate"] = gate
        return replace(self, **changes) if changes else self


@dataclass(frozen=True)
class DemoTool:
    name: str
    policy: ToolPolicy | None
    service: Service
    summary: str
    result: Callable[[Mapping[str, Any], WriteResult | None], dict[str, Any]]
    behaviour: Behaviour = Behaviour()


def _order(arguments: Mapping[str, Any]) -> str:
    return str(arguments.get("order_id", "1001"))


TOOLS: Mapping[str, DemoTool] = {t.name: t for t in (
    DemoTool("lookup_order", ToolPolicy(EffectClass.READ), Service.NONE,
             "reads an order's status",
             lambda a, _: {"order_id": _order(a), "status": "shipped"}),
    DemoTool("refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=True),
             Service.KEYED, "refunds an order; the payment service drops a repeated key",
             lambda a, w: {"order_id": _order(a), "amount": a.get("amount", 10),
                           "refund": "applied" if w is None or w.applied else "already applied"}),
    # TC-APR-EXAMPLE: the quick start's cancel_order, requires_approval unset, so every call
    # of it waits for approval.
    DemoTool("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE), Service.PLAIN,
             "cancels an order; the order service applies every request",
             lambda a, _: {"order_id": _order(a), "cancelled": True}),
    DemoTool("notify_customer", None, Service.PLAIN, "sends the customer a message",
             lambda a, _: {"order_id": _order(a), "sent": True}),
)}

SERVICES: Mapping[str, Service] = {t.name: t.service for t in TOOLS.values()}


MAX_SECONDS = 1e6
"""A run's duration and write time stay below this many seconds (eleven days)."""


def _seconds(what: str, value: object) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not 0 <= value < MAX_SECONDS):
        raise SpecError(f"{what} must be a number of seconds >= 0 and below {MAX_SECONDS:g}, "
                        f"got {value!r}")
    return float(value)


def _tool(name: str, flag: str) -> DemoTool:
    tool = TOOLS.get(name)
    if tool is None:
        raise SpecError(f"{flag}: unknown tool {name!r} (known: {', '.join(TOOLS)})")
    return tool


def _timing(flag: str, item: str) -> tuple[str, float]:
    """`TOOL=SECONDS` of `flag` as the tool's name and the seconds."""
    name, sep, value = item.partition("=")
    if not sep:
        raise SpecError(f"{flag} wants TOOL=SECONDS, got {item!r}")
    _tool(name, flag)
    try:
        number = float(value)
    except ValueError:
        raise SpecError(f"{flag} {name} must be a number of seconds >= 0, got {value!r}"
                        ) from None
    return name, _seconds(f"{flag} {name}", number)


def behaviours(durations: Sequence[str] = (), write_ats: Sequence[str] = (),
               fails: Sequence[str] = (), stop_on_cancel: Sequence[str] = ()
               ) -> dict[str, Behaviour]:
    """Each tool's behaviour with the command line's overrides (`TOOL=SECONDS`, `TOOL`);
    SpecError naming the flag for an unknown tool or a value that is no number of seconds."""
    table = {name: tool.behaviour for name, tool in TOOLS.items()}
    for item in durations:
        name, seconds = _timing("--duration", item)
        table[name] = replace(table[name], duration=seconds)
    for item in write_ats:
        name, seconds = _timing("--write-at", item)
        table[name] = replace(table[name], write_at=seconds)
    for name in fails:
        tool = _tool(name, "--fail")
        table[tool.name] = replace(table[tool.name], fail=True)
    for name in stop_on_cancel:
        tool = _tool(name, "--stop-on-cancel")
        table[tool.name] = replace(table[tool.name], stop_on_cancel=True)
    return table


async def _wait(seconds: float, ctx: ToolContext, behaviour: Behaviour) -> bool:
    """Sleep; False when a cancel request stopped a tool that honours it."""
    if seconds <= 0:
        return not (behaviour.stop_on_cancel and ctx.cancelled.is_set())
    if not behaviour.stop_on_cancel:
        await asyncio.sleep(seconds)
        return True
    try:
        await asyncio.wait_for(ctx.cancelled.wait(), seconds)
    except TimeoutError:
        return True
    return False


def demo_registry(table: Mapping[str, Behaviour] | None = None) -> dict[str, Tool]:
    """The demo tools as a registry (`registry.Tool`), each run with its behaviour in `table`
    (default: its own)."""
    chosen = table or {}
    return {t.name: Tool(t.name, t.policy, _demo_function(t, chosen.get(t.name, t.behaviour)),
                         t.summary) for t in TOOLS.values()}


def _demo_function(tool: DemoTool, behaviour: Behaviour) -> ToolFunction:
    async def run(call: ToolCall) -> str:
        try:
            this = behaviour.for_call(call.arguments)
        except SpecError as error:
            raise ToolFailed(f"{tool.name}: bad arguments: {error}") from None
        timed = _gated if this.gate else _timed
        ok, output = await timed(tool, call.arguments, call.context, this)
        if not ok:
            raise ToolFailed(output)
        return output
    return run


async def run_tool(name: str, arguments: str, ctx: ToolContext,
                   table: Mapping[str, Behaviour]) -> tuple[bool, str]:
    """Run one call of a demo tool: (returned, output). A failure the tool reports is an
    answer for the model (D-3); a write the service refused raises `Fenced`."""
    return await run_call(demo_registry(table), name, arguments, ctx)


async def _timed(tool: DemoTool, parsed: Mapping[str, Any], ctx: ToolContext,
                 behaviour: Behaviour) -> tuple[bool, str]:
    """A run timed by its behaviour: wait, write, wait out the rest, return or fail."""
    name = tool.name
    write_at = min(behaviour.write_at, behaviour.duration)
    written: WriteResult | None = None
    if tool.service is not Service.NONE:
        if not await _wait(write_at, ctx, behaviour):
            return False, f"{name} stopped on cancel before it took effect"
        written = await ctx.write(json.dumps(parsed, sort_keys=True))
    if not await _wait(behaviour.duration - write_at, ctx, behaviour):
        return False, f"{name} stopped on cancel after it took effect"
    if behaviour.fail:
        return False, f"{name} reported a failure for order {_order(parsed)}"
    return True, json.dumps(tool.result(parsed, written), sort_keys=True)


GATE_POLL = 0.01
"""Seconds between two looks at a gated run's files."""


async def _released(gate: str, within: float, write: bool) -> str | None:
    """'write' once `GATE.write` exists (when `write`), the text of `GATE.return` ('ok' unless
    it says 'fail') once that exists, None after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        try:
            with open(f"{gate}.return") as answer:
                return "fail" if answer.read().strip() == "fail" else "ok"
        except FileNotFoundError:
            pass
        if write and os.path.exists(f"{gate}.write"):
            return "write"
        await asyncio.sleep(GATE_POLL)
    return None


async def _gated(tool: DemoTool, parsed: Mapping[str, Any], ctx: ToolContext,
                 behaviour: Behaviour) -> tuple[bool, str]:
    """A run scripted through its gate files (see the module's docstring)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + behaviour.duration
    writes = tool.service is not Service.NONE
    step = await _released(behaviour.gate, behaviour.duration, writes)
    written: WriteResult | None = None
    if step == "write":
        written = await ctx.write(json.dumps(parsed, sort_keys=True))
        step = await _released(behaviour.gate, max(0.0, until - loop.time()), False)
    if step is None:
        return False, f"{tool.name}: its gate was not released within {behaviour.duration:g} s"
    if step == "fail":
        return False, f"{tool.name} reported a failure for order {_order(parsed)}"
    return True, json.dumps(tool.result(parsed, written), sort_keys=True)
