"""Message sequence charts: one lifeline per lane, messages in order, notes for local events."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from atmostonce.report.sequence import Message, sequence_svg
from atmostonce.spec.errors import SpecError

pytest.importorskip("matplotlib")

LANES = ("agent", "executor", "worker 0")
MESSAGES = (
    Message("agent", "executor", "ask read (call 0)", 1),
    Message("executor", "worker 0", "go-ahead: call 0 attempt 1", 2),
    Message("worker 0", "worker 0", "crashes", 3),
)


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_the_chart_is_svg_with_every_lane_and_message_in_order() -> None:
    texts = _texts(sequence_svg(LANES, MESSAGES, "a crash"))
    assert texts == ["agent", "executor", "worker 0", "1", "ask read (call 0)",
                     "2", "go-ahead: call 0 attempt 1", "3", "crashes", "a crash"]


def test_the_same_chart_gives_the_same_svg() -> None:
    assert sequence_svg(LANES, MESSAGES, "t") == sequence_svg(LANES, MESSAGES, "t")


def test_a_local_event_is_a_note_on_its_lane() -> None:
    assert Message("worker 0", "worker 0", "crashes").local
    assert not MESSAGES[0].local


@pytest.mark.parametrize(("lanes", "messages", "says"), [
    ((), (), "needs at least one lane"),
    (("agent", "agent"), (), "names a lane twice"),
    (LANES, (Message("agent", "ledger", "write"),),
     "message 'write' names lane 'ledger', which the chart does not have"),
])
def test_bad_charts_are_refused_in_one_line(lanes: tuple[str, ...],
                                            messages: tuple[Message, ...], says: str) -> None:
    with pytest.raises(SpecError, match=says) as error:
        sequence_svg(lanes, messages, "t")
    assert "\n" not in str(error.value)
