"""What the legend says: every node state and every mark the graph draws, with their names and
meanings, and how each state's border is stroked. No Qt: the window's legend dock and the
legend of an exported picture both read these tables, so they cannot disagree.

A state is told apart by its fill (the palettes in :mod:`viewer.model.scene.colours`) and by its
border (:data:`STATE_LINES`), so a reader who cannot tell two fills apart still can.
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.model.checks.problems import KINDS

__all__ = [
    "FUNCTION_STATES",
    "LEAK_BADGES",
    "LINE_PATTERNS",
    "MARKS",
    "STATE_LINES",
    "VARIABLE_STATES",
    "LegendMark",
    "LegendState",
    "leak_badge",
    "mark_for_badge",
]

LINE_PATTERNS = ("solid", "dashed", "dotted", "dashdot")
THIN, MEDIUM, THICK = 1.3, 2.0, 2.8

# state -> (pattern, width in pixels) of its border, the same for variables and functions and
# in both themes: thin for what merely exists, thick for a gradient, medium for one an earlier
# backward left that nothing adds to; dashed for a gradient that went away or should have;
# dotted for what is not there (yet); dash-dot for an object freed.
STATE_LINES: dict[str, tuple[str, float]] = {
    "not_computed": ("dotted", THIN),
    "value": ("solid", THIN),
    "grad": ("solid", THICK),
    "grad_cleared": ("dashed", THIN),
    "freed": ("dashdot", THIN),
    "constant": ("dotted", THICK),
    "grad_carried": ("dashed", THICK),
    "grad_previous": ("solid", MEDIUM),
}


@dataclass(frozen=True)
class LegendState:
    """A node state as the legend names it: ``kind`` 'variable' | 'function', ``state`` one
    of :data:`~viewer.model.node_states.STATE_NAMES`."""

    kind: str
    state: str
    label: str
    meaning: str


@dataclass(frozen=True)
class LegendMark:
    """A mark drawn on top of a node's state.

    ``kind``: 'leak_cycle' | 'leak_held' | 'nonfinite' | 'cut' | 'detached' | 'gradcheck' |
    'wrong_backward' | 'current' | 'selection' | 'problem'. ``overlay``: the Scene
    overlay kind that makes it ('' for marks the view draws itself). ``badges``: the texts of
    its badge (several for the colour scale of a gradient check; none for an outline)."""

    kind: str
    overlay: str
    badges: tuple[str, ...]
    label: str
    meaning: str


VARIABLE_STATES: tuple[LegendState, ...] = (
    LegendState("variable", "not_computed", "not computed", "its forward step has not run yet"),
    LegendState("variable", "value", "value", "value computed, no gradient yet"),
    LegendState("variable", "grad", "grad", "gradient computed by this backward pass"),
    LegendState("variable", "grad_cleared", "grad cleared", "gradient dropped (retain_grad=False)"),
    LegendState("variable", "freed", "freed", "the object was garbage collected"),
    LegendState("variable", "constant", "constant", "made under no_grad, or a plain array operand"),
    LegendState(
        "variable",
        "grad_carried",
        "grad carried over",
        "a gradient left from an earlier backward that nothing empties (a forgotten "
        "cleargrad() / zero_grad()): the next backward adds to it",
    ),
    LegendState(
        "variable",
        "grad_previous",
        "grad previous",
        "previous gradient, left by an earlier backward: the program empties it "
        "(cleargrad() / zero_grad()) before the next backward, or no later backward "
        "reaches it; nothing adds to it",
    ),
)

FUNCTION_STATES: tuple[LegendState, ...] = (
    LegendState("function", "not_computed", "not run", "its forward step has not run yet"),
    LegendState("function", "value", "function ran", "forward ran: its outputs exist"),
    LegendState("function", "grad", "backward ran", "backward ran: its inputs got gradients"),
    LegendState("function", "freed", "freed", "the Function was garbage collected"),
)

# Survivor.reason (autodiff.leaks) -> the badge of its node.
LEAK_BADGES: dict[str, str] = {"cycle": "cycle", "referenced": "held"}

MARKS: tuple[LegendMark, ...] = (
    LegendMark(
        "leak_cycle",
        "leak",
        ("cycle",),
        "leak: reference cycle",
        "alive after release: a reference cycle holds it (x.grad made with "
        "create_graph=True refers back to x; x.cleargrad() breaks it)",
    ),
    LegendMark(
        "leak_held",
        "leak",
        ("held",),
        "leak: held by something",
        "alive after release: something outside the graph holds it (a global, a "
        "closure); the Leaks panel shows the chain",
    ),
    LegendMark(
        "nonfinite", "nonfinite", ("NaN",), "NaN / Inf", "the first Function to produce NaN or Inf"
    ),
    LegendMark(
        "cut",
        "cut",
        ("cut",),
        "history cut",
        "unchain_backward() cut this variable's history before this graph was built: it "
        "enters as a leaf, and backward stops here (truncated backprop)",
    ),
    LegendMark(
        "detached",
        "",
        (),
        "detached history",
        "history unchain_backward() cut off before this graph: greyed, with dashed edges, "
        "as the program left it; nothing of this graph runs there",
    ),
    LegendMark(
        "gradcheck",
        "gradcheck",
        ("1.0e-08", "1.0e-04", "1.0e-01"),
        "gradient-check error",
        "relative error against central differences: green < 1e-6 ≤ amber < 1e-3 ≤ red",
    ),
    LegendMark(
        "wrong_backward",
        "gradcheck",
        ("wrong backward",),
        "wrong backward",
        "this Function's backward disagrees with central differences",
    ),
    LegendMark(
        "current", "", (), "current step", "the Function of the current step and its operands"
    ),
    LegendMark("selection", "", (), "selection", "the node the inspector shows"),
    LegendMark(
        "problem",
        "problem",
        ("dead-relu",),
        "problem",
        "a problem the Problems panel lists, its kind as the badge, ringed in its severity's "
        "colour (red: error, amber: warning, grey: info); its tooltip says what to do. A "
        "finding with a mark of its own (NaN, wrong backward, leak) keeps that mark, whose "
        "tooltip names the problem",
    ),
)  # the carried-over gradient is a state: it is listed with the variables, once


def leak_badge(reason: str) -> str:
    """The badge of a leak survivor whose ``reason`` is 'cycle' or 'referenced'."""
    return LEAK_BADGES.get(str(reason), "held")


def mark_for_badge(badge: str) -> LegendMark | None:
    """The mark a badge on the graph stands for (a number: a gradient-check error)."""
    if badge in ("NaN", "Inf", "-Inf", "±Inf"):
        return _MARKS_BY_KIND["nonfinite"]
    if badge in KINDS:  # a problem's mark is badged with its kind
        return _MARKS_BY_KIND["problem"]
    for mark in MARKS:
        if badge in mark.badges:
            return mark
    try:
        float(badge)
    except ValueError:
        return None
    return _MARKS_BY_KIND["gradcheck"]


_MARKS_BY_KIND = {mark.kind: mark for mark in MARKS}
