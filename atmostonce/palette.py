"""Every colour the report's plots, charts and pages and the model's diagrams use, defined once.

The hues are Okabe and Ito's palette, which people with any common colour-vision deficiency
tell apart; frequencies use ColorBrewer's sequential Blues, which stay ordered for them too.
A kind of thing has one colour wherever it appears: `outcome_unknown` is vermillion on a bar,
a timeline and a verdict alike.
"""

from __future__ import annotations

BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
REDDISH_PURPLE = "#CC79A7"
"""Okabe and Ito's eight colours."""

GREY = "#999999"
LIGHT_GREY = "#DDDDDD"
FAINT = "#F2F2F2"
PALE_BLUE = "#E3EEF7"
PALE_YELLOW = "#FBF6C7"
INK = "#222222"
MUTED = "#555555"
"""Neutrals: greys for what did not happen or is background, ink for text."""

RECORDS = {
    "succeeded": BLUISH_GREEN,
    "failed": ORANGE,
    "rejected": SKY_BLUE,
    "outcome_unknown": VERMILLION,
    "none": LIGHT_GREY,
}
"""A call's record (`none`: no record when the history ended)."""

RUNS = {
    "run returned": BLUISH_GREEN,
    "run tool_failed": ORANGE,
    "run killed": VERMILLION,
    "run stopped": REDDISH_PURPLE,
    "run going": LIGHT_GREY,
}
"""A tool run on a worker, by how it ended: the hue of the record it leads to, drawn hatched."""

FAULTS = {"crash": VERMILLION, "cut": BLUE, "restart": REDDISH_PURPLE, "pause": YELLOW,
          "disk": BLACK}
"""A fault's band on the timeline (drawn translucent)."""

VERDICTS = {"pass": BLUISH_GREEN, "fail": VERMILLION, "none": GREY}
"""A check's verdict: held, broken, not checkable."""

SHADES = ("#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
"""How often a diagram's edge was taken, light to dark (ColorBrewer's sequential Blues)."""
NEVER = VERMILLION
"""A diagram's edge never taken (drawn dashed)."""
INITIAL = YELLOW
TERMINAL = FAINT
ACTOR = PALE_BLUE
"""A diagram's fills: the initial state, terminal states, the environment's actors."""

ARROW = BLUE
NOTE = PALE_YELLOW
NOTE_EDGE = ORANGE
LANE = PALE_BLUE
LANE_EDGE = BLUE
"""A sequence chart's messages, notes on a lifeline, and lane heads."""
