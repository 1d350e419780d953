"""Finding F-6: what the model says about the page's advice for the double run."""

from __future__ import annotations

import pytest

from atmostonce.model import findings


@pytest.mark.clause("F-6", "D-6", "TC-AMO-5", "TC-KEY-3")
def test_every_claim_of_finding_f6_holds() -> None:
    claims = {c.id: c for c in findings.establish()}
    assert set(claims) == {"F-6a", "F-6b", "F-6c", "F-6d", "F-6e"}
    for claim in claims.values():
        assert claim.holds, f"{claim.id}: {claim.statement}"
    assert claims["F-6a"].trace is not None
    assert claims["F-6a"].trace.steps[-1].action["action"] == "apply"
    assert claims["F-6b"].trace is None
