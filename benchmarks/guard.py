"""What the guard costs per tool call, against the same call unguarded.

Two measures, each taken in rounds that alternate the two sides (A B A B ...), so that a drift
in the machine's speed hits both; each round's figure is the mean time per call, and the report
gives each side's median over the rounds and the ratio of the medians:

- library: `Guard.ask` then `Guard.run` of a single-attempt call (no approval) whose tool returns
  at once, against awaiting the same tool directly. The guarded call writes three fsynced
  transactions to its journal (the call kept, the attempt's intent, the result), so this is the
  guard's whole cost with no tool work to hide it;
- langgraph: one agent turn of LangChain's `create_agent` that makes one tool call, on the
  durable setup a team runs (`AsyncSqliteSaver` on a file, durability "sync"), with the guard's
  `GuardMiddleware` against without it.

A benchmark, never a timed test; figures come from one run on this machine.

    python benchmarks/guard.py [--rounds R] [--calls N] [--turns T] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: measure this checkout, not an installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.guard import Attempt, Guard, Statement
from atmostonce.spec.policy import EffectClass, ToolPolicy

WRITE = Statement(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False))


@dataclass(frozen=True)
class Pair:
    """One measure: each side's median time per call over the rounds, and their ratio."""

    name: str
    unguarded_us: float
    guarded_us: float
    ratio: float
    extra_us: float
    rounds: int
    per_round: int


async def _tool(attempt: Attempt) -> str:
    return "done"


async def _rounds(rounds: int, per_round: int,
                  unguarded: Callable[[int], Awaitable[None]],
                  guarded: Callable[[int], Awaitable[None]], name: str) -> Pair:
    """A B A B ...: each side runs `per_round` calls a round; their medians and ratio."""
    a: list[float] = []
    b: list[float] = []
    for number in range(rounds):
        for side, times in ((unguarded, a), (guarded, b)):
            start = time.perf_counter()
            for index in range(per_round):
                await side(number * per_round + index)
            times.append((time.perf_counter() - start) / per_round * 1e6)
    ua, gb = statistics.median(a), statistics.median(b)
    return Pair(name, ua, gb, gb / ua, gb - ua, rounds, per_round)


async def library(directory: Path, rounds: int, calls: int) -> Pair:
    guard = Guard(directory / "guard.db")

    async def unguarded(n: int) -> None:
        await _tool(Attempt(f"s/t{n}/c1", 1, "", 0.0, None, None))

    async def guarded(n: int) -> None:
        key = f"s/t{n}/c1"
        guard.ask(key, "cancel_order", "{}", WRITE)
        await guard.run(key, _tool)

    await guarded(-1)
    return await _rounds(rounds, calls, unguarded, guarded, "library")


async def langgraph(directory: Path, rounds: int, turns: int) -> Pair:
    """One create_agent turn with one tool call, with and without the guard's middleware."""
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.config import get_config

    from atmostonce.guard.langgraph import GuardMiddleware

    class OneCall(BaseChatModel):
        """Asks for one `cancel_order` call, then answers without one."""

        @property
        def _llm_type(self) -> str:
            return "atmostonce-benchmark"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> OneCall:
            return self

        def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                      run_manager: Any = None, **kwargs: Any) -> ChatResult:
            if isinstance(messages[-1], ToolMessage):
                message = AIMessage(content="done")
            else:
                message = AIMessage(content="", tool_calls=[
                    {"name": "cancel_order", "args": {"order_id": "1"}, "id": "c1",
                     "type": "tool_call"}])
            return ChatResult(generations=[ChatGeneration(message=message)])

    @tool
    async def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return f"cancelled {order_id}"

    guard = Guard(directory / "guard.db")

    def key(call: Any) -> str:
        return f"{get_config()['configurable']['thread_id']}/t1/{call['id']}"

    middleware = GuardMiddleware(guard, key, lambda call: WRITE)
    async with AsyncSqliteSaver.from_conn_string(str(directory / "checkpoints.db")) as saver:
        plain = create_agent(OneCall(), [cancel_order], checkpointer=saver)
        kept = create_agent(OneCall(), [cancel_order], middleware=[middleware],
                            checkpointer=saver)

        def turn(graph: Any, side: str) -> Callable[[int], Awaitable[None]]:
            async def one(n: int) -> None:
                await graph.ainvoke({"messages": [HumanMessage("cancel order 1")]},
                                    {"configurable": {"thread_id": f"{side}{n}"}},
                                    durability="sync")
            return one

        await turn(plain, "warm-a")(0)
        await turn(kept, "warm-b")(0)
        return await _rounds(rounds, turns, turn(plain, "a"), turn(kept, "b"), "langgraph")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200, help="library calls per round")
    parser.add_argument("--turns", type=int, default=20, help="agent turns per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if min(args.rounds, args.calls, args.turns) < 1:
        parser.error("--rounds, --calls and --turns must be at least 1")
    with tempfile.TemporaryDirectory(prefix="atmostonce-guard-bench-") as directory:
        base = Path(directory)
        (base / "library").mkdir()
        (base / "langgraph").mkdir()
        pairs = [asyncio.run(library(base / "library", args.rounds, args.calls)),
                 asyncio.run(langgraph(base / "langgraph", args.rounds, args.turns))]
    command = (f"python benchmarks/guard.py --rounds {args.rounds} --calls {args.calls} "
               f"--turns {args.turns}")
    if args.json:
        print(json.dumps({"cpus": os.cpu_count(), "pairs": [asdict(p) for p in pairs],
                          "command": command}, indent=2))
        return 0
    print(f"the guard's cost per tool call, medians over {args.rounds} rounds A B A B "
          f"(journal fsynced: WAL, synchronous=FULL), {os.cpu_count()} CPUs")
    for p in pairs:
        print(f"  {p.name:9}  unguarded {p.unguarded_us:9.1f} us  guarded {p.guarded_us:9.1f} us"
              f"  ratio {p.ratio:6.2f}  (+{p.extra_us:.1f} us a call, {p.per_round} a round)")
    print(f"reproduce: {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
