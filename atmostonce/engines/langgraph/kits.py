"""Each kit by the name a variant picks (`mapping.Variant.kit`): the page's two, as a team
builds them from the LangGraph and LangChain documentation (`tools`), and the guard's
(`guarded`)."""

from __future__ import annotations

from atmostonce.engines.langgraph.guarded import GUARD_KIT, guard_kit
from atmostonce.engines.langgraph.tools import Kit, hitl_kit, interrupt_kit

KITS: dict[str, Kit] = {"interrupt": interrupt_kit, "hitl": hitl_kit, GUARD_KIT: guard_kit}
