"""verify's conformance layer judges a fence that holds back too much as well as one that lets
too much go: D-6 holds back only new calls of the tool whose abandoned run may still go."""

from __future__ import annotations

import pytest

from atmostonce import verify
from atmostonce.check.probes.fence import probe_fence
from atmostonce.executor import mutants, reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Attempt
from atmostonce.spec.fence import fence_blocks
from atmostonce.spec.protocol import ExecutorConfig


class CountsEveryToolAbandoned(ReferenceExecutor):
    """Takes a tool with no abandoned run as having one, once any tool has."""

    def fenced(self, attempt: Attempt) -> bool:
        call = attempt.call
        return fence_blocks(self.config.fence, self.policy_of(call).effect,
                            self.state.abandoned_of_tool.get(call.tool, 1))


class FencesReadsToo(ReferenceExecutor):
    """Holds back a read as well while its tool has an abandoned run... of any tool."""

    def fenced(self, attempt: Attempt) -> bool:
        return self.config.fence and any(self.state.abandoned_of_tool.values())


class NeverLetsGo(ReferenceExecutor):
    """Holds back a tool's calls for good once one of its runs was abandoned, even after that
    run is over."""

    def next_attempt(self) -> Attempt | None:
        held: set[str] = self.__dict__.setdefault("held", set())
        held.update(tool for tool, runs in self.state.abandoned_of_tool.items() if runs)
        found = super().next_attempt()
        return None if found is not None and found.call.tool in held else found


@pytest.mark.clause("D-6")
def test_the_reference_fence_holds_back_just_what_d6_names() -> None:
    assert probe_fence(reference, ExecutorConfig()) == []


@pytest.mark.clause("D-6")
@pytest.mark.parametrize(("broken", "said"), [
    (CountsEveryToolAbandoned, "a single-attempt call of another tool was held back"),
    (FencesReadsToo, "a single-attempt call of another tool was held back"),
    (NeverLetsGo, "still held back after the abandoned run was over"),
    (mutants.fence_ignored, "went ahead while the run the executor gave up on might still go"),
])
def test_a_fence_that_holds_back_too_much_or_too_little_is_caught(broken: object,
                                                                  said: str) -> None:
    [problem] = probe_fence(broken, ExecutorConfig())  # type: ignore[arg-type]
    assert said in problem


def test_verify_conformance_fails_a_fence_that_holds_back_another_tool(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 3)
    result = verify.check_conformance("counts_every_tool", CountsEveryToolAbandoned)
    assert not result.ok
    assert "FENCES OTHERWISE THAN D-6" in result.summary
