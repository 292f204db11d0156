"""The legend's tables and the palettes they describe: every state is named and has a border;
any two states of a kind stay apart for readers with deuteranopia or protanopia too."""

import itertools

import numpy as np
import pytest

from viewer.model.node_states import STATE_NAMES
from viewer.model.panels.legend import (
    FUNCTION_STATES,
    LINE_PATTERNS,
    MARKS,
    STATE_LINES,
    VARIABLE_STATES,
    leak_badge,
    mark_for_badge,
)
from viewer.model.scene.colours import DARK, LIGHT

# --- colour vision: Machado, Oliveira & Fernandes (2009), severity 1.0, on linear RGB -------
PROTANOPIA = np.array(
    [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ]
)
DEUTERANOPIA = np.array(
    [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ]
)
VISIONS = {"normal": np.eye(3), "deuteranopia": DEUTERANOPIA, "protanopia": PROTANOPIA}
SRGB_TO_XYZ = np.array(
    [
        [0.4124564, 0.3575761, 0.1804375],
        [0.2126729, 0.7151522, 0.0721750],
        [0.0193339, 0.1191920, 0.9503041],
    ]
)
D65 = np.array([0.95047, 1.0, 1.08883])
MIN_DELTA_E = 10.0  # CIE76: ~2.3 is a just-noticeable difference; 10 reads as another colour


def to_linear(rgb8):
    c = np.asarray(rgb8, dtype=np.float64)[..., :3] / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def to_srgb8(linear):
    c = np.clip(linear, 0.0, 1.0)
    return 255.0 * np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def simulate(rgb8, vision):
    """sRGB (0..255) as seen with ``vision``: linearise, apply the matrix, back to sRGB."""
    return to_srgb8(to_linear(rgb8) @ VISIONS[vision].T)


def to_lab(rgb8):
    xyz = to_linear(rgb8) @ SRGB_TO_XYZ.T / D65
    d = 6 / 29
    f = np.where(xyz > d**3, np.cbrt(xyz), xyz / (3 * d * d) + 4 / 29)
    return np.stack(
        [116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])],
        axis=-1,
    )


def delta_e(a, b, vision="normal"):
    """CIE76 distance between two sRGB colours as seen with ``vision``."""
    return float(np.linalg.norm(to_lab(simulate(a, vision)) - to_lab(simulate(b, vision))))


def confusable_pairs(fills, states, lines):
    """(state, state, vision, ΔE) for each pair that neither fill nor border tells apart: a
    pair with the same border needs ΔE >= MIN_DELTA_E in every vision."""
    bad = []
    for a, b in itertools.combinations(states, 2):
        if lines[a] != lines[b]:
            continue
        ia, ib = STATE_NAMES.index(a), STATE_NAMES.index(b)
        for vision in VISIONS:
            d = delta_e(fills[ia], fills[ib], vision)
            if d < MIN_DELTA_E:
                bad.append((a, b, vision, round(d, 1)))
    return bad


def test_the_simulation_keeps_greys_and_confuses_red_with_green():
    for grey in ((0, 0, 0), (128, 128, 128), (255, 255, 255)):
        for vision in VISIONS:
            assert np.allclose(simulate(grey, vision), grey, atol=0.6)
    red, green = (200, 60, 60), (60, 120, 60)  # far apart to most, close to a dichromat
    assert delta_e(red, green) > 80
    assert delta_e(red, green, "deuteranopia") < 20
    assert delta_e(red, green, "protanopia") < 20
    # a blue and a yellow stay apart for both
    assert delta_e((40, 90, 220), (230, 200, 40), "deuteranopia") > 60
    assert delta_e((40, 90, 220), (230, 200, 40), "protanopia") > 60
    assert delta_e((255, 255, 255), (0, 0, 0)) == pytest.approx(100, abs=0.1)


def test_the_old_beiges_were_confusable():
    # before issue 10: not computed, grad cleared and constant in three similar beiges
    old = np.zeros((len(STATE_NAMES), 3))
    for state, rgb in (
        ("not_computed", (0xFD, 0xF3, 0xE3)),
        ("grad_cleared", (0xE8, 0xD2, 0xB0)),
        ("constant", (0xEC, 0xE6, 0xCF)),
    ):
        old[STATE_NAMES.index(state)] = rgb
    same = dict.fromkeys(STATE_NAMES, ("solid", 1.2))
    bad = confusable_pairs(old, ("not_computed", "grad_cleared", "constant"), same)
    assert ("not_computed", "constant", "normal", 6.4) in bad


@pytest.mark.parametrize("palette", [LIGHT, DARK], ids=lambda p: p.name)
@pytest.mark.parametrize("kind", ["variable", "function"])
def test_every_pair_of_states_stays_apart_in_every_vision(palette, kind):
    fills = palette.variable_fill if kind == "variable" else palette.function_fill
    assert confusable_pairs(fills, STATE_NAMES, STATE_LINES) == []
    # and stronger than the rule: the fills alone are far apart, the borders all differ
    assert confusable_pairs(fills, STATE_NAMES, dict.fromkeys(STATE_NAMES, "same")) == []
    assert len(set(STATE_LINES.values())) == len(STATE_NAMES)


def test_every_state_has_a_border_and_a_name():
    assert set(STATE_LINES) == set(STATE_NAMES)
    assert all(p in LINE_PATTERNS and w > 0 for p, w in STATE_LINES.values())
    assert [e.state for e in VARIABLE_STATES] == list(STATE_NAMES)
    assert {e.state for e in FUNCTION_STATES} == {"not_computed", "value", "grad", "freed"}
    labels = {e.state: e.label for e in FUNCTION_STATES}
    assert labels["value"] == "function ran" and labels["grad"] == "backward ran"
    assert all(e.label and e.meaning for e in (*VARIABLE_STATES, *FUNCTION_STATES, *MARKS))


def test_marks_cover_every_overlay_and_outline():
    kinds = {m.kind for m in MARKS}
    assert kinds >= {"leak_cycle", "leak_held", "nonfinite", "gradcheck", "current"}
    assert kinds >= {"selection", "wrong_backward", "cut"}
    # a state, listed once: with the variables, not again among the marks
    assert "grad_carried" not in kinds
    assert "grad_carried" in {e.state for e in VARIABLE_STATES}
    assert {m.overlay for m in MARKS} == {"leak", "nonfinite", "gradcheck", "cut", "problem", ""}


def test_badges_name_their_mark():
    assert leak_badge("cycle") == "cycle"
    assert leak_badge("referenced") == "held"
    assert mark_for_badge("cycle").kind == "leak_cycle"
    assert mark_for_badge("held").kind == "leak_held"
    for badge in ("NaN", "Inf", "-Inf", "±Inf"):
        assert mark_for_badge(badge).kind == "nonfinite"
    assert mark_for_badge("3.2e-05").kind == "gradcheck"
    assert mark_for_badge("wrong backward").kind == "wrong_backward"
    assert mark_for_badge("leak") is None
    assert mark_for_badge("dead-relu").kind == "problem"  # a problem's mark: its kind
