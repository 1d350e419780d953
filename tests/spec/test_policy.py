"""Policies: the page's two policy tables, precedence, metadata, snapshots and bad input."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import (
    CAUTION,
    DurableStep,
    EffectClass,
    EffectivePolicy,
    PolicySource,
    ToolHints,
    ToolPolicy,
    default_requires_approval,
    effect_from_hints,
    resolve_policy,
    retries_allowed,
    step_for,
)

effects = st.sampled_from(EffectClass)
flags = st.sampled_from([None, True, False])

# The page's "Effect classes" table, column "Runs in", as the page states it.
PAGE_RUNS_IN = {
    "read": "`CallTool`, with retries",
    "idempotent_write": "`CallTool`, with retries",
    "non_idempotent_write": "`CallSingleAttemptTool`, once",
    "unclassified": "`CallSingleAttemptTool`, once",
}

# The page's "Require approval" table, column "Waits for approval by default".
PAGE_WAITS_BY_DEFAULT = {
    "read": "No",
    "idempotent_write": "No",
    "non_idempotent_write": "Yes",
    "unclassified": "Yes",
}


@pytest.mark.clause("TC-EFF-READ", "TC-EFF-IDEM", "TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-POL-2")
def test_effect_class_table_is_reproduced_by_the_spec() -> None:
    computed = {
        effect.value: f"`{step_for(effect).value}`, "
        + ("with retries" if retries_allowed(effect) else "once")
        for effect in EffectClass
    }
    assert computed == PAGE_RUNS_IN


@pytest.mark.clause("TC-APR-2")
def test_approval_default_table_is_reproduced_by_the_spec() -> None:
    computed = {
        effect.value: "Yes" if default_requires_approval(effect) else "No"
        for effect in EffectClass
    }
    assert computed == PAGE_WAITS_BY_DEFAULT


@pytest.mark.clause("TC-APR-2")
def test_quick_start_cancel_order_waits_for_approval() -> None:
    cancel_order = resolve_policy(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE))
    assert cancel_order.requires_approval is True
    assert cancel_order.step is DurableStep.CALL_SINGLE_ATTEMPT_TOOL


@pytest.mark.clause("TC-APR-3")
@given(effects)
def test_requires_approval_true_waits_whatever_the_effect(effect: EffectClass) -> None:
    assert resolve_policy(ToolPolicy(effect, requires_approval=True)).requires_approval


@pytest.mark.clause("TC-APR-4")
def test_requires_approval_false_runs_unapproved_but_still_once() -> None:
    policy = resolve_policy(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False))
    assert policy.requires_approval is False
    assert policy.step is DurableStep.CALL_SINGLE_ATTEMPT_TOOL
    assert not policy.retries_allowed


@pytest.mark.clause("TC-APR-1", "TC-POL-1")
@given(st.one_of(st.none(), st.builds(ToolPolicy, effects, flags)),
       st.one_of(st.none(), st.builds(ToolHints, flags, flags, flags)),
       st.one_of(st.none(), effects))
def test_every_call_resolves_to_an_effective_policy(
    policy: ToolPolicy | None, hints: ToolHints | None, default: EffectClass | None
) -> None:
    resolved = resolve_policy(policy, hints, default)
    assert isinstance(resolved, EffectivePolicy)
    assert resolved.step is step_for(resolved.effect)


@pytest.mark.clause("TC-APR-5", "D-1")
@given(effects, st.builds(ToolHints, flags, flags, flags), effects, flags)
def test_tool_policy_beats_metadata_and_session_default(
    effect: EffectClass, hints: ToolHints, default: EffectClass, approval: bool | None
) -> None:
    resolved = resolve_policy(ToolPolicy(effect, approval), hints, default)
    assert resolved.effect is effect
    assert resolved.source is PolicySource.TOOL_POLICY


@pytest.mark.clause("TC-APR-5", "D-1")
def test_mcp_read_only_hint_loses_to_a_policy_but_beats_the_session_default() -> None:
    hints = ToolHints.from_mcp({"readOnlyHint": True})
    with_policy = resolve_policy(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE), hints,
                                 EffectClass.IDEMPOTENT_WRITE)
    assert with_policy.effect is EffectClass.NON_IDEMPOTENT_WRITE
    without = resolve_policy(None, hints, EffectClass.IDEMPOTENT_WRITE)
    assert (without.effect, without.source) == (EffectClass.READ,
                                                PolicySource.FRAMEWORK_METADATA)


@pytest.mark.clause("D-1")
def test_session_default_applies_when_metadata_is_silent_and_unclassified_last() -> None:
    silent = ToolHints.from_mcp({"destructiveHint": True})
    assert resolve_policy(None, silent, EffectClass.READ).source is PolicySource.SESSION_DEFAULT
    fallback = resolve_policy(None, None, None)
    assert (fallback.effect, fallback.source) == (EffectClass.UNCLASSIFIED, PolicySource.FALLBACK)
    assert fallback.requires_approval is True


@pytest.mark.clause("D-11")
@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"readOnlyHint": True}, EffectClass.READ),
        ({"readOnlyHint": True, "idempotentHint": False}, EffectClass.READ),
        ({"idempotentHint": True}, EffectClass.IDEMPOTENT_WRITE),
        ({"readOnlyHint": False, "idempotentHint": True}, EffectClass.IDEMPOTENT_WRITE),
        ({"readOnlyHint": False}, EffectClass.NON_IDEMPOTENT_WRITE),
        ({"readOnlyHint": False, "destructiveHint": False}, EffectClass.NON_IDEMPOTENT_WRITE),
        ({"destructiveHint": True}, None),
        ({}, None),
    ],
)
def test_mcp_annotations_map_to_effect_classes(
    annotations: dict[str, object], expected: EffectClass | None
) -> None:
    hints = ToolHints.from_mcp(annotations)
    assert effect_from_hints(hints.read_only, hints.idempotent, hints.destructive) is expected


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2")
def test_a_recorded_call_keeps_its_snapshot_when_the_policy_changes() -> None:
    policies = {"refund": ToolPolicy(EffectClass.IDEMPOTENT_WRITE)}
    asked_before = resolve_policy(policies["refund"])
    policies["refund"] = ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=True)
    asked_after = resolve_policy(policies["refund"])
    assert asked_before.requires_approval is False
    assert asked_after.requires_approval is True
    with pytest.raises(AttributeError):
        asked_before.requires_approval = True  # type: ignore[misc]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: EffectClass.parse("write"), "unknown effect class 'write'"),
        (lambda: EffectClass.parse(3), "effect class must be a string, got int"),
        (lambda: ToolPolicy.of("read", requires_approval="yes"), "requires_approval must be"),
        (lambda: ToolPolicy("read", None), "ToolPolicy.effect must be an EffectClass"),  # type: ignore[arg-type]
        (lambda: ToolHints.from_mcp({"readOnlyHint": "true"}), "readOnlyHint must be a boolean"),
        (lambda: resolve_policy(None, None, "sometimes"), "unknown effect class 'sometimes'"),  # type: ignore[arg-type]
    ],
)
def test_bad_policy_input_raises_one_line_spec_error(
    build: Callable[[], object], message: str
) -> None:
    with pytest.raises(SpecError) as raised:
        build()
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.clause("D-22", "D-1", "TC-APR-5")
def test_d22_by_default_a_read_only_hint_lowers_a_cautious_session_default() -> None:
    hints = ToolHints.from_mcp({"readOnlyHint": True})
    lowered = resolve_policy(None, hints, EffectClass.NON_IDEMPOTENT_WRITE)
    assert (lowered.effect, lowered.source) == (EffectClass.READ,
                                                PolicySource.FRAMEWORK_METADATA)
    assert (lowered.requires_approval, lowered.step) == (False, DurableStep.CALL_TOOL)


@pytest.mark.clause("D-22")
def test_d22_a_session_that_keeps_its_default_as_a_floor_keeps_approval_and_one_attempt(
        ) -> None:
    hints = ToolHints.from_mcp({"readOnlyHint": True})
    kept = resolve_policy(None, hints, EffectClass.NON_IDEMPOTENT_WRITE, hints_may_lower=False)
    assert (kept.effect, kept.source) == (EffectClass.NON_IDEMPOTENT_WRITE,
                                          PolicySource.SESSION_DEFAULT)
    assert (kept.requires_approval, kept.step) == (True, DurableStep.CALL_SINGLE_ATTEMPT_TOOL)
    policy = resolve_policy(ToolPolicy(EffectClass.READ), hints, EffectClass.UNCLASSIFIED,
                            hints_may_lower=False)
    assert policy.source is PolicySource.TOOL_POLICY


@pytest.mark.clause("D-22")
@given(effects, st.sampled_from([None, *EffectClass]), st.booleans())
def test_d22_a_hint_may_raise_caution_above_the_default_and_lowers_it_only_if_allowed(
        hinted: EffectClass, default: EffectClass | None, lowers: bool) -> None:
    if hinted is EffectClass.UNCLASSIFIED:
        return
    hints = {EffectClass.READ: ToolHints(read_only=True),
             EffectClass.IDEMPOTENT_WRITE: ToolHints(idempotent=True),
             EffectClass.NON_IDEMPOTENT_WRITE: ToolHints(read_only=False)}[hinted]
    resolved = resolve_policy(None, hints, default, hints_may_lower=lowers)
    if lowers or default is None or CAUTION[hinted] >= CAUTION[default]:
        assert (resolved.effect, resolved.source) == (hinted, PolicySource.FRAMEWORK_METADATA)
    else:
        assert (resolved.effect, resolved.source) == (default, PolicySource.SESSION_DEFAULT)


def test_d22_hints_may_lower_must_be_a_boolean() -> None:
    with pytest.raises(SpecError, match="hints_may_lower must be true or false"):
        resolve_policy(None, None, None, hints_may_lower="no")  # type: ignore[arg-type]


@pytest.mark.clause("TC-APR-EXAMPLE", "TC-APR-2")
def test_the_quick_starts_cancel_order_waits_for_approval_on_every_call() -> None:
    from atmostonce.runtime.tools import TOOLS

    cancel = TOOLS["cancel_order"].policy
    assert cancel == ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE)
    assert cancel.requires_approval is None
    resolved = resolve_policy(cancel)
    assert (resolved.requires_approval, resolved.step) == (
        True, DurableStep.CALL_SINGLE_ATTEMPT_TOOL)
