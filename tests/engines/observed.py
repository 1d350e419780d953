"""The session API calls an engine test's scenario makes, each noted in its world's
observations as a chaos agent notes it: the part the Temporal and LangGraph test worlds share."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from atmostonce.chaos.observations import AskSeen, Observations, now
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import SessionAPI
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import ToolPolicy


class EngineWorld(Protocol):
    @property
    def api(self) -> SessionAPI: ...

    @property
    def obs(self) -> Observations: ...


@dataclass
class ObservedCalls:
    """Set policies, open sessions and ask calls, each noted before it is made."""

    world: EngineWorld

    async def set_policies(self, policies: dict[str, ToolPolicy]) -> None:
        for tool, policy in policies.items():
            self.world.obs.entries.append(h.PolicySet(now(), tool, policy, None))
            await self.world.api.set_policy(tool, policy)

    async def open_session(self, session_id: str) -> None:
        self.world.obs.entries.append(h.SessionOpened(now(), session_id, None))
        await self.world.api.open_session(session_id)

    async def ask(self, session_id: str, turn_id: str, call_id: str, tool: str,
                  arguments: str | Mapping[str, Any]) -> str:
        """Ask a call; arguments given as a mapping go as sorted JSON."""
        key = build_key(session_id, turn_id, call_id)
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments),
                                                                       sort_keys=True)
        self.world.obs.entries.append(h.CallAsked(now(), key, session_id, turn_id, call_id,
                                                  tool, text))
        await self.world.api.ask(session_id, turn_id, call_id, tool, text)
        self.world.obs.acked.append(AskSeen(key, session_id, now()))
        return key
