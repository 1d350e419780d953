"""The people of a chaos run: whoever is asked to approve a call answers it, after a while, or
never, or twice, or changes their mind, and answers again when a reply is lost (D-7). Every
answer and reply is observed.
"""

from __future__ import annotations

import asyncio
import random

from atmostonce.chaos import workload as wl
from atmostonce.chaos.observations import AnswerSeen, Observations, now
from atmostonce.engines.adapter import UNAVAILABLE, SessionAPI
from atmostonce.sim.workload import Person
from atmostonce.spec.protocol import ExecutorConfig


class People:
    """The people answering approvals over `api`; they stop trying once `abandon` is set."""

    def __init__(self, api: SessionAPI, obs: Observations, config: ExecutorConfig,
                 abandon: asyncio.Event) -> None:
        self.api = api
        self.obs = obs
        self.config = config
        self.abandon = abandon

    async def person(self, key: str, rng: random.Random, deadline: float,
                     awaiting: set[str]) -> None:
        """The person asked to approve the call `key`, whose approval deadline is `deadline`:
        answers after a while, or never, or twice, or changes their mind
        (`workload.person`); `key` leaves `awaiting` once answered."""
        who = wl.person(rng)
        if who is Person.MISS:
            return
        await asyncio.sleep(wl.answer_after(rng, who, deadline))
        awaiting.discard(key)
        await self.answer(key, who is not Person.REJECT)
        if who is Person.TWICE:
            await self.answer_later(key, True, rng.uniform(0.05, 1.0))
        elif who is Person.FLIP:
            await self.answer_later(key, False, rng.uniform(0.05, 1.0))

    async def answer_later(self, key: str, approve: bool, after: float) -> None:
        await asyncio.sleep(after)
        await self.answer(key, approve)

    async def answer(self, key: str, approve: bool) -> None:
        """Answer until a reply comes; an answer whose reply was lost is given again (D-7)."""
        while not self.abandon.is_set():
            self.obs.count("approve" if approve else "reject")
            sent = now()
            try:
                reply = await (self.api.approve(key) if approve else self.api.reject(key))
            except UNAVAILABLE:
                self.obs.unavailable += 1
                self.obs.answers.append(AnswerSeen(sent, None, key, approve, None))
                await asyncio.sleep(wl.RETRY_PAUSE)
                continue
            self.obs.answers.append(AnswerSeen(sent, now(), key, approve, reply.accepted,
                                               reply.text))
            return
