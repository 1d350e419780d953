"""The fence option: a new call of a single-attempt tool waits while an abandoned run may go on.

Clause ids: TC-AMO-4, decision D-6.
"""

from __future__ import annotations

from atmostonce.spec.policy import EffectClass, retries_allowed


def fence_blocks(fence_on: bool, effect: EffectClass, abandoned_runs_of_tool: int) -> bool:
    """Whether an attempt must wait: the fence is on, the tool is single-attempt, and a run of the
    same tool that the engine gave up on may still be going (D-6).

    A run stops counting once its worker reports that it ended or the worker is declared lost,
    which happens only after the worker's lease ran out and it stopped its runs.

    pre: abandoned_runs_of_tool >= 0
    post: __return__ == (fence_on and not retries_allowed(effect) and abandoned_runs_of_tool > 0)
    """
    if not fence_on or retries_allowed(effect):
        return False
    return abandoned_runs_of_tool > 0
