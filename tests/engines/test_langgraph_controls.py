"""The positive controls of the LangGraph variants: each known way LangGraph breaks the page,
reproduced on real agent processes with a real SIGKILL and the effect ledger as ground truth,
and judged by the chaos run's own checkers, which must report the broken property. Each test
prints the shortest history excerpt that shows the break (`pytest -s`); `docs/engines.md`
quotes them. Each also runs on `guarded` (`atmostonce.guard`), where the same scenario must
hold: one run, the page's record, and no property broken.

    pytest tests/engines/test_langgraph_controls.py -p no:cacheprovider -q -s
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from atmostonce.chaos.reconcile import ReconcileJob
from atmostonce.runtime.reconcile import as_check
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.session import ToolCallStatus
from tests.engines.langgraph_world import World, excerpt, gate, langgraph_world, release, until

pytestmark = pytest.mark.slow

WRITE_WITH_APPROVAL = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE)
"""cancel_order's policy: a non-idempotent write, so it waits for approval (TC-APR-EXAMPLE)."""
WRITE = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)
UNCLASSIFIED = ToolPolicy(EffectClass.UNCLASSIFIED, requires_approval=False)


async def one_turn(world: World, session_id: str, calls: list[tuple[str, str, dict[str, object]]]
                   ) -> list[str]:
    """Ask the calls as one turn: the agent process is paused meanwhile (once it runs the
    thread, so it holds no lock of the store), so the scripted model sends them in one message
    however slow the asks."""
    [worker] = world.engine.workers()
    await until("the thread is taken", lambda: world.engine.store.owner(session_id))
    world.engine.pause_worker(worker)
    try:
        keys = [await world.observed.ask(session_id, "t1", call_id, tool, arguments)
                for call_id, tool, arguments in calls]
    finally:
        world.engine.resume_worker(worker)
    return keys


def ended(world: World, key: str) -> bool:
    return any(run.ended is not None for run in world.runs(key))


GUARDED = "guarded"


async def reconciled(world: World, session_id: str) -> None:
    """Run the chaos run's reconcile job once for the session, the effect ledger answering,
    and read the session's final snapshot, which holds its report."""
    job = ReconcileJob(world.api, world.obs,
                       as_check(lambda key, arguments: f"{len(world.writes(key))} writes"),
                       0, asyncio.Event(), lambda later: later.close())
    run = await job.run(session_id)
    assert run is not None
    assert len(run.reports) == 1, run
    world.obs.final[session_id] = await world.observed.snapshot(session_id)


def holds(world: World) -> str:
    """The guarded variant's verdict on the scenario: no property broken."""
    judged = world.judged()
    assert judged.history.violations == [], [v.line() for v in judged.history.violations]
    return "holds"


@pytest.mark.parametrize("variant", ["tool_node", GUARDED])
@pytest.mark.clause("TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-APR-2")
def test_approving_a_call_runs_its_sibling_again_without_a_crash(tmp_path: Path,
                                                                 variant: str) -> None:
    """tool_node: a write waiting for approval beside an unclassified call that needs none, in
    one model message. The sibling runs while the write waits; approving resumes the whole
    `ToolNode`, which runs the sibling a second time: no crash, no fault at all. guarded: the
    sibling runs once."""
    async def scenario(world: World) -> str:
        await world.observed.set_policies({"cancel_order": WRITE_WITH_APPROVAL,
                                           "notify_customer": UNCLASSIFIED})
        await world.observed.open_session("s")
        gated, sibling = await one_turn(world, "s", [
            ("c1", "cancel_order", {"order_id": "1002", "duration": 0.05}),
            ("c2", "notify_customer", {"order_id": "1002", "duration": 0.05})])
        await until("the sibling ran", lambda: ended(world, sibling))
        assert await world.observed.status("s", "c1") is ToolCallStatus.AWAITING_APPROVAL
        assert (await world.observed.approve(gated)).accepted
        await world.observed.records("s", 2)
        assert len(world.runs(sibling)) == (1 if variant == GUARDED else 2), world.runs(sibling)
        return sibling

    with langgraph_world(tmp_path, variant) as world:
        sibling = asyncio.run(scenario(world))
        print(holds(world) if variant == GUARDED
              else excerpt(world.judged(), PropertyId.A_ONE_ATTEMPT, sibling))


@pytest.mark.parametrize("variant", ["tool_node", GUARDED])
@pytest.mark.clause("TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-AMO-2")
def test_a_crash_runs_the_finished_sibling_again(tmp_path: Path, variant: str) -> None:
    """tool_node: two single-attempt calls in one model message; the unclassified one returns,
    the write takes effect and its agent process is killed before it returns. The process that
    resumes the thread runs both again: the finished sibling too, whose result the killed
    process held but LangGraph had not written. guarded: neither runs again; the write, whose
    run began and never ended, is outcome_unknown."""
    async def scenario(world: World, held: Path) -> str:
        await world.observed.set_policies({"cancel_order": WRITE,
                                           "notify_customer": UNCLASSIFIED})
        await world.observed.open_session("s")
        write, sibling = await one_turn(world, "s", [
            ("c1", "cancel_order", gate(held, order_id="1002")),
            ("c2", "notify_customer", {"order_id": "1002", "duration": 0.05})])
        await until("the sibling returned", lambda: ended(world, sibling))
        release(held, "write")
        await until("the write took effect", lambda: world.writes(write))
        [run] = world.runs(write)
        world.kill(world.worker_of(run))
        world.engine.start_worker()
        if variant != GUARDED:
            await until("the write took effect again", lambda: len(world.writes(write)) == 2)
        release(held, "return")
        await world.observed.records("s", 2)
        if variant == GUARDED:
            assert await world.observed.status("s", "c1") is ToolCallStatus.OUTCOME_UNKNOWN
            assert (len(world.writes(write)), len(world.runs(sibling))) == (1, 1)
            await reconciled(world, "s")
        else:
            assert len(world.runs(sibling)) == 2, world.runs(sibling)
        return sibling

    with langgraph_world(tmp_path, variant) as world:
        sibling = asyncio.run(scenario(world, tmp_path / "held"))
        print(holds(world) if variant == GUARDED
              else excerpt(world.judged(), PropertyId.A_ONE_ATTEMPT, sibling))


@pytest.mark.parametrize("variant", ["tool_node", "create_agent", GUARDED])
@pytest.mark.clause("TC-EFF-NONIDEM", "TC-APR-2", "TC-AMO-2")
def test_an_approved_write_runs_twice_after_a_crash(tmp_path: Path, variant: str) -> None:
    """A write that waited for approval is approved, takes effect, and its agent process is
    killed before it returns: the process that resumes the thread runs it again, with no second
    approval (tool_node: `interrupt()` asks again and the app answers from the approval it
    holds; create_agent: the middleware's decision is in the checkpoint), and the order service
    applies the write twice. guarded: the decision is in the guard's journal, so the process
    that resumes neither asks again nor runs the write: outcome_unknown, one write."""
    async def scenario(world: World, held: Path) -> str:
        await world.observed.set_policies({"cancel_order": WRITE_WITH_APPROVAL})
        await world.observed.open_session("s")
        key = await world.observed.ask("s", "t1", "c1", "cancel_order",
                                       gate(held, order_id="1002"))
        await until("the write waits for approval", lambda: _awaiting(world))
        assert (await world.observed.approve(key)).accepted
        release(held, "write")
        await until("the write took effect", lambda: world.writes(key))
        [run] = world.runs(key)
        world.kill(world.worker_of(run))
        world.engine.start_worker()
        if variant != GUARDED:
            await until("the write took effect again", lambda: len(world.writes(key)) == 2)
        release(held, "return")
        await world.observed.records("s", 1)
        if variant == GUARDED:
            assert await world.observed.status("s", "c1") is ToolCallStatus.OUTCOME_UNKNOWN
            assert [w.applied for w in world.writes(key)] == [True]
            await reconciled(world, "s")
        else:
            assert [w.applied for w in world.writes(key)] == [True, True]
        return key

    with langgraph_world(tmp_path, variant) as world:
        key = asyncio.run(scenario(world, tmp_path / "held"))
        print(holds(world) if variant == GUARDED
              else excerpt(world.judged(), PropertyId.A_ONE_ATTEMPT, key))


async def _awaiting(world: World) -> bool:
    return await world.observed.status("s", "c1") is ToolCallStatus.AWAITING_APPROVAL
