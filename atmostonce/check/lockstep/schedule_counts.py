"""How often each component edge is taken by the schedules conformance replays.

`conformance.schedules(config, depth, edges=True)` ends each schedule with a distinct
transition out of a state reachable in fewer than `depth` steps; the prefix before it is that
state's shortest schedule, shared with the other schedules through the state. This counts the
component edges of those last steps: every transition the replay took at least once, each once.
"""

from __future__ import annotations

from atmostonce.model.config import ModelConfig
from atmostonce.model.edge_counts import EdgeKey, count_edges
from atmostonce.model.explorer import Explorer
from atmostonce.model.system import System


def schedule_edge_counts(config: ModelConfig, depth: int) -> dict[EdgeKey, int]:
    """Per component edge, how many of the replayed schedules end with a transition taking
    it (the schedules of `conformance.schedules(config, depth, edges=True)`)."""
    system = System(config)
    explorer = Explorer(system, stop_at_first=False, max_depth=depth)
    explorer.run()
    depths = [0] * len(explorer.states)
    for node in range(1, len(explorer.states)):
        depths[node] = depths[explorer.parent[node]] + 1
    inner = [s for s, d in zip(explorer.states, depths, strict=True) if d < depth]
    canonical = system.canonical
    return count_edges(system, inner, keep=lambda s, t: canonical(t) != s)
